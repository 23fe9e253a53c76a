// The straggler rule, the rank exchange's wire form and the trainer's live cross-rank view, with
// exchanges the tests script (no process group, no clock).
#include "vxperf/xrank.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "schema/record_reader.h"
#include "test_support.h"
#include "training/xrank_view.h"
#include "vxperf/records.h"
#include "vxperf/training.h"

namespace vxperf {
namespace {

using Json = nlohmann::json;
using testing::env_of;
using testing::TestEngine;

RankTimes times(int rank, double step_s, std::vector<std::pair<std::string, double>> phases = {}) {
  return RankTimes{rank, step_s, std::move(phases)};
}

// ---- the setting --------------------------------------------------------------------------------

TEST(XrankSetting, ZeroOrOneWithAPositiveTimeout) {
  std::vector<std::string> problems;
  Settings s = Settings::parse(env_of({{"VIDEOX_PERF", "1"},
                                       {"VIDEOX_PERF_XRANK", " 1 "},
                                       {"VIDEOX_PERF_XRANK_TIMEOUT", "2.5"}}),
                               &problems);
  EXPECT_TRUE(s.xrank);
  EXPECT_EQ(s.xrank_timeout_s, 2.5);
  EXPECT_TRUE(problems.empty());
  for (const auto& [name, value] : s.to_env()) EXPECT_EQ(name.find("XRANK"), std::string::npos);

  s = Settings::parse(env_of({{"VIDEOX_PERF", "1"}}), nullptr);
  EXPECT_FALSE(s.xrank);
  EXPECT_EQ(s.xrank_timeout_s, 30.0);

  s = Settings::parse(
      env_of(
          {{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_XRANK", "yes"}, {"VIDEOX_PERF_XRANK_TIMEOUT", "0"}}),
      &problems);
  EXPECT_FALSE(s.xrank);
  EXPECT_EQ(s.xrank_timeout_s, 30.0);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0], "vxperf: VIDEOX_PERF_XRANK=\"yes\" is not 0 or 1; using 0");
}

// ---- the rule ----------------------------------------------------------------------------------

TEST(StragglerRule, StepTimesAloneAreTheMarginOverTheMedian) {
  // Median of {1.0, 1.01, 1.049, 1.2} is 1.0295: 1.049 is 1.9% above it, 1.2 is 16.6% above.
  auto v = find_stragglers({times(0, 1.0), times(1, 1.01), times(2, 1.049), times(3, 1.2)});
  EXPECT_NEAR(v.median_s, 1.0295, 1e-12);
  EXPECT_EQ(v.stragglers, std::vector<int>{3});
  EXPECT_EQ(v.where, std::vector<std::string>{"step"});
  EXPECT_NEAR(v.excess_s[3], 1.2 - 1.0295, 1e-12);
  EXPECT_EQ(v.excess_s[0], 0.0);
  // Just inside the margin names nobody.
  EXPECT_TRUE(find_stragglers({times(0, 1.0), times(1, 1.0), times(2, 1.049)}).stragglers.empty());
}

TEST(StragglerRule, SynchronizedRanksAreToldApartByTheirPhases) {
  // DDP: every step lasts 1.5s on every rank. Rank 2 loads data 0.5s longer; the other three
  // wait those 0.5s in the backward's all-reduce.
  std::vector<RankTimes> ranks;
  for (int r = 0; r < 4; ++r) {
    bool slow = r == 2;
    ranks.push_back(
        times(r, 1.5, {{"data", slow ? 0.6 : 0.1}, {"fwd", 0.3}, {"bwd", slow ? 0.6 : 1.1}}));
  }
  auto v = find_stragglers(ranks);
  EXPECT_EQ(v.stragglers, std::vector<int>{2});
  EXPECT_EQ(v.where, std::vector<std::string>{"data"});
  EXPECT_NEAR(v.excess_s[2], 0.5, 1e-12);
  EXPECT_NEAR(v.excess_s[0], 0.0, 1e-12);
  // The step times alone would name nobody.
  std::vector<RankTimes> totals;
  for (const auto& r : ranks) totals.push_back(times(r.rank, r.step_s));
  EXPECT_TRUE(find_stragglers(totals).stragglers.empty());
}

TEST(StragglerRule, TwoSynchronizedRanksNameNeither) {
  // Each is above the other by 0.5s in one phase: the slow one cannot be told from the waiting one.
  auto v = find_stragglers(
      {times(0, 1.5, {{"data", 0.1}, {"bwd", 1.1}}), times(1, 1.5, {{"data", 0.6}, {"bwd", 0.6}})});
  EXPECT_TRUE(v.stragglers.empty());
  EXPECT_NEAR(v.excess_s[0], 0.25, 1e-12);
  EXPECT_NEAR(v.excess_s[1], 0.25, 1e-12);
}

TEST(StragglerRule, TwoIndependentRanksKeepTheOldRule) {
  auto v = find_stragglers(
      {times(0, 1.0, {{"fwd", 0.4}, {"bwd", 0.6}}), times(1, 1.3, {{"fwd", 0.52}, {"bwd", 0.78}})});
  EXPECT_EQ(v.stragglers, std::vector<int>{1});
  EXPECT_EQ(v.where, std::vector<std::string>{"bwd"});
}

TEST(StragglerRule, SmallNoiseSpreadOverPhasesNamesNobody) {
  std::vector<RankTimes> ranks;
  for (int r = 0; r < 8; ++r) {
    double wobble = 0.004 * ((r * 5) % 7 - 3);  // within +-1.2% per phase
    ranks.push_back(times(
        r, 1.0,
        {{"data", 0.1 + wobble}, {"fwd", 0.3 - wobble}, {"bwd", 0.5 + wobble}, {"opt", 0.1}}));
  }
  EXPECT_TRUE(find_stragglers(ranks).stragglers.empty());
}

TEST(StragglerRule, APhaseOnlySomeRanksHaveCountsAsZeroElsewhere) {
  // Only rank 1 spends time in "aux": all of it is its excess.
  auto v =
      find_stragglers({times(0, 1.0, {{"fwd", 1.0}}), times(1, 1.2, {{"fwd", 1.0}, {"aux", 0.2}}),
                       times(2, 1.0, {{"fwd", 1.0}})});
  EXPECT_EQ(v.stragglers, std::vector<int>{1});
  EXPECT_EQ(v.where, std::vector<std::string>{"aux"});
}

TEST(StragglerRule, NeedsTwoRanks) {
  EXPECT_TRUE(find_stragglers({}).excess_s.empty());
  auto v = find_stragglers({times(0, 5.0)});
  EXPECT_TRUE(v.stragglers.empty());
  EXPECT_TRUE(v.excess_s.empty());
}

// ---- the wire form -----------------------------------------------------------------------------

RankWindow sample_window(int rank, int world) {
  RankWindow w;
  w.rank = rank;
  w.world_size = world;
  w.step_first = 10;
  w.step_last = 19;
  w.step_s_p50 = 1.25;
  w.step_s_p95 = 1.5;
  w.phase_s[static_cast<std::size_t>(Phase::kData)] = 0.05;
  w.phase_s[static_cast<std::size_t>(Phase::kForward)] = 0.4;
  w.phase_s[static_cast<std::size_t>(Phase::kBackward)] = 0.8;
  w.samples_per_s = 3.2;
  w.peak_alloc_bytes = std::uint64_t{75} << 30;
  return w;
}

TEST(RankWindowWire, RoundTripsEveryField) {
  RankWindow w = sample_window(3, 8);
  std::vector<double> wire(kRankWindowDoubles);
  pack_rank_window(w, wire.data());
  auto back = unpack_rank_window(wire.data());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->rank, 3);
  EXPECT_EQ(back->world_size, 8);
  EXPECT_EQ(back->step_first, 10);
  EXPECT_EQ(back->step_last, 19);
  EXPECT_EQ(back->step_s_p50, 1.25);
  EXPECT_EQ(back->step_s_p95, 1.5);
  EXPECT_EQ(back->phase_s, w.phase_s);
  EXPECT_EQ(back->samples_per_s, 3.2);
  EXPECT_FALSE(back->tflops);  // absent stays absent
  EXPECT_EQ(back->peak_alloc_bytes, std::uint64_t{75} << 30);
}

TEST(RankWindowWire, RefusesWhatIsNotAPackedWindow) {
  std::vector<double> wire(kRankWindowDoubles);
  pack_rank_window(sample_window(0, 2), wire.data());
  auto broken = [&](std::size_t i, double value) {
    std::vector<double> copy = wire;
    copy[i] = value;
    return unpack_rank_window(copy.data());
  };
  EXPECT_FALSE(broken(0, 1.0));  // another layout (or zeros from a peer that sent nothing)
  EXPECT_FALSE(broken(1, 2.0));  // rank outside the world
  EXPECT_FALSE(broken(1, 0.5));
  EXPECT_FALSE(broken(2, 0.0));
  EXPECT_FALSE(broken(4, 5.0));  // ends before it starts
  EXPECT_FALSE(broken(5, NAN));
  EXPECT_FALSE(broken(8, -1.0));
  EXPECT_TRUE(broken(7 + kPhaseCount + 1, NAN));  // tflops: absent
}

// ---- checking the answers ----------------------------------------------------------------------

TEST(RankAnswers, ComparableOnlyWhenEveryRankAnsweredOnceForTheSameWindow) {
  RankWindow mine = sample_window(0, 3);
  std::vector<RankWindow> all = {mine, sample_window(1, 3), sample_window(2, 3)};
  EXPECT_EQ(internal::check_answers(all, mine), "");

  auto two = all;
  two.pop_back();
  EXPECT_EQ(internal::check_answers(two, mine), "2 ranks answered in a world of 3");

  auto twice = all;
  twice[2].rank = 1;
  EXPECT_EQ(internal::check_answers(twice, mine),
            "rank 1 is claimed by 2 processes (check RANK and WORLD_SIZE, or set_topology)");

  auto late = all;
  late[1].step_first = 20;
  late[1].step_last = 29;
  std::string why = internal::check_answers(late, mine);
  EXPECT_NE(why.find("rank 1 closed this window at steps 20-29, rank 0 at 10-19"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("VIDEOX_PERF_EVERY"), std::string::npos);

  auto wider = all;
  wider[2].world_size = 4;
  EXPECT_NE(internal::check_answers(wider, mine).find("counts a world of 4"), std::string::npos);
}

TEST(RankAnswers, ViewHasEveryRankStragglersAndJobRates) {
  std::vector<RankWindow> all;
  for (int r : {2, 0, 3, 1}) {  // any order
    RankWindow w = sample_window(r, 4);
    if (r == 1) {
      w.phase_s[static_cast<std::size_t>(Phase::kData)] += 0.5;
      w.phase_s[static_cast<std::size_t>(Phase::kBackward)] -= 0.5;
      w.step_s_p50 = 1.26;
      w.peak_alloc_bytes = std::uint64_t{76} << 30;
    }
    if (r == 3) w.step_s_p50 = 1.2;
    all.push_back(w);
  }
  internal::XrankHistory history;
  CrossRankView v = internal::cross_rank_view(all, 2, history);
  EXPECT_EQ(v.step_s_p50, (std::vector<double>{1.25, 1.26, 1.25, 1.2}));
  EXPECT_EQ(v.min_rank, 3);
  EXPECT_EQ(v.max_rank, 1);
  EXPECT_EQ(v.stragglers, std::vector<int>{1});
  EXPECT_EQ(v.straggler_phases, std::vector<std::string>{"data"});
  EXPECT_NEAR(v.excess_s[1], 0.5, 1e-12);
  EXPECT_NEAR(*v.samples_per_s, 4 * 3.2 / 2, 1e-12);  // two ranks share each sample
  EXPECT_FALSE(v.tflops);
  ASSERT_TRUE(v.peak_alloc);
  EXPECT_EQ(v.peak_alloc->first, 1);
  // NVRx's scores by rank, and the 10 steps' 0.5 s of excess charged to rank 1.
  EXPECT_NEAR(v.relative_score[0], 1.2 / 1.25, 1e-12);
  EXPECT_NEAR(v.relative_score[1], 1.2 / 1.26, 1e-12);
  EXPECT_EQ(v.relative_score[3], 1.0);
  EXPECT_EQ(v.individual_score, (std::vector<double>{1, 1, 1, 1}));
  EXPECT_NEAR(v.lost_s[1], 5.0, 1e-9);
  EXPECT_EQ(v.lost_s[0], 0.0);
  // The next window: rank 3 slows to 1.5 s (its best was 1.2); rank 1 keeps straggling.
  for (auto& w : all) {
    w.step_first += 10;
    w.step_last += 10;
    if (w.rank == 3) w.step_s_p50 = 1.5;
  }
  v = internal::cross_rank_view(all, 2, history);
  EXPECT_NEAR(v.individual_score[3], 1.2 / 1.5, 1e-12);
  EXPECT_NEAR(v.lost_s[1], 10.0, 1e-9);  // so far
}

// NVRx's scores, by the two shared rules: the fastest positive time over each, a rank's best over
// its latest; 1 where nothing was spent.
TEST(Scores, RelativeAndIndividualByTheirRules) {
  EXPECT_EQ(relative_scores({}), std::vector<double>{});
  auto r = relative_scores({0.5, 0.25, 0.0, 1.0});
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0], 0.5);
  EXPECT_EQ(r[1], 1.0);
  EXPECT_EQ(r[2], 1.0);  // nothing spent there
  EXPECT_EQ(r[3], 0.25);
  EXPECT_EQ(relative_scores({0.0, 0.0}), (std::vector<double>{1.0, 1.0}));
  EXPECT_EQ(individual_score(0.2, 0.4), 0.5);
  EXPECT_EQ(individual_score(0.4, 0.4), 1.0);
  EXPECT_EQ(individual_score(0.2, 0.0), 1.0);
}

// DDP: the all-reduce evens the step times out (rank 2 is 0.2% slower per step), so its step's
// relative score reads 0.998; its data phase, 0.3 s where the others take 0.01 s, scores 1/30,
// while the others' wait in bwd scores them low there. The next window's slower data lowers rank
// 2's individual score in data alone.
TEST(RankAnswers, PhaseScoresShowWhatEvenedStepTimesHide) {
  const auto data = static_cast<std::size_t>(Phase::kData);
  const auto fwd = static_cast<std::size_t>(Phase::kForward);
  const auto bwd = static_cast<std::size_t>(Phase::kBackward);
  std::vector<RankWindow> all;
  for (int r = 0; r < 4; ++r) {
    RankWindow w;
    w.rank = r;
    w.world_size = 4;
    w.step_first = 0;
    w.step_last = 9;
    w.step_s_p50 = r == 2 ? 1.002 : 1.0;
    w.phase_s[data] = r == 2 ? 0.3 : 0.01;
    w.phase_s[fwd] = 0.3;
    w.phase_s[bwd] = r == 2 ? 0.302 : 0.6;  // the others wait for rank 2 in the all-reduce
    all.push_back(w);
  }
  internal::XrankHistory history;
  CrossRankView v = internal::cross_rank_view(all, 1, history);
  EXPECT_NEAR(v.relative_score[2], 1.0 / 1.002, 1e-12);
  EXPECT_GT(v.relative_score[2], 0.99);
  ASSERT_EQ(v.phase_scores.size(), 3u);  // the phases some rank spent time in, in table order
  EXPECT_EQ(v.phase_scores[0].name, "data");
  EXPECT_EQ(v.phase_scores[1].name, "fwd");
  EXPECT_EQ(v.phase_scores[2].name, "bwd");
  const PhaseScores& d = v.phase_scores[0];
  EXPECT_NEAR(d.relative[2], 0.01 / 0.3, 1e-12);
  EXPECT_EQ(d.relative[0], 1.0);
  EXPECT_EQ(d.individual, (std::vector<double>{1, 1, 1, 1}));  // the first window is the best
  EXPECT_EQ(v.phase_scores[1].relative, (std::vector<double>{1, 1, 1, 1}));
  EXPECT_NEAR(v.phase_scores[2].relative[0], 0.302 / 0.6, 1e-12);
  EXPECT_EQ(v.phase_scores[2].relative[2], 1.0);
  // Written and read back through the field table.
  TrainWindowRecord record;
  record.xrank = v;
  TrainWindowRecord back = internal::read_window(to_json_line(record));
  ASSERT_TRUE(back.xrank);
  ASSERT_EQ(back.xrank->phase_scores.size(), 3u);
  EXPECT_EQ(back.xrank->phase_scores[0].name, "data");
  EXPECT_EQ(back.xrank->phase_scores[0].relative, d.relative);
  EXPECT_EQ(back.xrank->phase_scores[2].individual, v.phase_scores[2].individual);

  for (auto& w : all) {
    w.step_first += 10;
    w.step_last += 10;
    if (w.rank == 2) w.phase_s[data] = 0.4;
  }
  v = internal::cross_rank_view(all, 1, history);
  EXPECT_NEAR(v.phase_scores[0].individual[2], 0.3 / 0.4, 1e-12);
  EXPECT_EQ(v.phase_scores[1].individual[2], 1.0);
  EXPECT_EQ(v.individual_score[2], 1.0);  // its step time did not move
}

// ---- the trainer's view ------------------------------------------------------------------------

// One rank of a world of four on virtual time, host clock only. Each step: 0.1s data (plus
// `slow_data` on the slow rank), 0.3s fwd, 0.5s bwd (minus what the others wait), 0.1s opt.
struct XrankRig {
  TestEngine t;
  Trainer* trainer;
  int opt = 0;
  std::vector<std::int64_t> exchanged_at;  // steps closed when each exchange was called

  XrankRig(int rank, std::map<std::string, std::string> env)
      : t(std::move(env), /*with_device=*/false, Topology{rank, 4, 1}),
        trainer(&t.engine->trainer()) {}

  void step() {
    t.clock->advance(0.1);
    MicroStep micro(trainer);
    {
      ModelCall fwd(Phase::kForward, 1024, 1, trainer);
      t.clock->advance(0.3);
    }
    {
      Backward bwd(trainer);
      t.clock->advance(0.5);
    }
    OptimizerStep o(&opt, true, trainer);
    t.clock->advance(0.1);
  }

  // An exchange that answers for every rank, rank 2 spending 0.4s more in data and the others
  // waiting it out in bwd; it takes 2ms.
  RankExchange answering() {
    return [this](const RankWindow& mine) -> std::optional<std::vector<RankWindow>> {
      exchanged_at.push_back(trainer->steps_closed());
      t.clock->advance(0.002);
      std::vector<RankWindow> all;
      for (int r = 0; r < 4; ++r) {
        RankWindow w = mine;
        w.rank = r;
        auto& data = w.phase_s[static_cast<std::size_t>(Phase::kData)];
        auto& bwd = w.phase_s[static_cast<std::size_t>(Phase::kBackward)];
        if (r == 2) {
          data += 0.4;
        } else {
          bwd += 0.4;
        }
        all.push_back(w);
      }
      return all;
    };
  }

  std::vector<Json> records() {
    std::vector<Json> out;
    for (const auto& line : t.output->records()) out.push_back(Json::parse(line));
    return out;
  }
  int notices_with(const std::string& text) {
    int n = 0;
    for (const auto& line : t.output->logs()) n += line.find(text) != std::string::npos;
    return n;
  }
};

std::map<std::string, std::string> xrank_env(const char* xrank = "1") {
  return {{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "3"}, {"VIDEOX_PERF_XRANK", xrank}};
}

TEST(LiveCrossRank, RankZeroRecordsCarryTheViewAfterAFixedLoopPoint) {
  XrankRig rig(0, xrank_env());
  rig.t.engine->set_rank_exchange(rig.answering());
  for (int i = 0; i < 4; ++i) rig.step();
  // Window 0-2 settled at step 2's close, but waits for step 4 to close (2 + kSettleLag).
  EXPECT_TRUE(rig.records().empty());
  rig.step();
  auto r = rig.records();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(rig.exchanged_at, std::vector<std::int64_t>{5});
  const Json& x = r[0]["xrank"];
  EXPECT_EQ(x["ranks"], 4);
  EXPECT_EQ(x["stragglers"], Json::array({2}));
  EXPECT_EQ(x["straggler_phases"], Json::array({"data"}));
  EXPECT_EQ(x["step_s_p50"].size(), 4u);
  EXPECT_NEAR(x["excess_s"][2].get<double>(), 0.4, 1e-9);
  EXPECT_NEAR(x["exchange_s"].get<double>(), 0.002, 1e-9);
  EXPECT_TRUE(x["samples_per_s"].is_number());
  EXPECT_EQ(rig.notices_with("[Perf][rank0] xrank step 0-2 | 4 ranks: "), 1);
  EXPECT_EQ(rig.notices_with("| stragglers: rank 2 (+0.400s/step, most in data)"), 1);
  // The scores phase by phase: rank 2's data (0.4 s a step more than the others') where its
  // step scores 1, the others' wait in bwd.
  const double data = r[0]["phases_s"]["data"].get<double>();  // rank 0's own, as the others'
  EXPECT_EQ(x["relative_score"][2], 1.0);
  EXPECT_NEAR(x["phase_scores"]["data"]["relative"][2].get<double>(), data / (data + 0.4), 1e-9);
  EXPECT_NEAR(x["phase_scores"]["bwd"]["relative"][0].get<double>(), 0.5 / 0.9, 1e-9);
  EXPECT_EQ(x["phase_scores"]["fwd"]["individual"], Json::array({1.0, 1.0, 1.0, 1.0}));

  // Window 3-5 is held at exit: finish exchanges it; the partial window 6 has no view.
  rig.step();
  rig.step();
  rig.t.engine->shutdown();
  r = rig.records();
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(rig.exchanged_at.size(), 2u);
  EXPECT_EQ(r[1]["step_first"], 3);
  EXPECT_TRUE(r[1].contains("xrank"));
  EXPECT_EQ(r[2]["step_first"], 6);
  EXPECT_FALSE(r[2].contains("xrank"));
}

TEST(LiveCrossRank, OtherRanksExchangeButWriteTheirRecordsAsToday) {
  XrankRig rig(1, xrank_env());
  rig.t.engine->set_rank_exchange(rig.answering());
  for (int i = 0; i < 3; ++i) rig.step();
  ASSERT_EQ(rig.records().size(), 1u);  // not held
  EXPECT_TRUE(rig.exchanged_at.empty());
  rig.step();
  rig.step();
  EXPECT_EQ(rig.exchanged_at, std::vector<std::int64_t>{5});
  EXPECT_FALSE(rig.records()[0].contains("xrank"));
  EXPECT_EQ(rig.notices_with("xrank"), 0);
}

TEST(LiveCrossRank, UnsetMeansNoExchangeAndTodaysRecords) {
  XrankRig with(0, xrank_env("0"));
  XrankRig without(0, {{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "3"}});
  XrankRig plain(0, {{"VIDEOX_PERF", "1"}, {"VIDEOX_PERF_EVERY", "3"}});
  with.t.engine->set_rank_exchange(with.answering());
  without.t.engine->set_rank_exchange(without.answering());
  for (int i = 0; i < 7; ++i) {
    with.step();
    without.step();
    plain.step();
  }
  EXPECT_TRUE(with.exchanged_at.empty());
  EXPECT_TRUE(without.exchanged_at.empty());
  // Records exactly as without any exchange given, but for their wall-clock stamps.
  auto unstamped = [](XrankRig& rig) {
    std::vector<Json> out = rig.records();
    for (auto& r : out) r.erase("ts");
    return out;
  };
  ASSERT_EQ(unstamped(plain).size(), 2u);
  EXPECT_EQ(unstamped(without), unstamped(plain));
  EXPECT_EQ(unstamped(with), unstamped(plain));
  EXPECT_EQ(without.t.output->logs(), plain.t.output->logs());
}

TEST(LiveCrossRank, AFailedExchangeSwitchesTheViewOffOnceAndTrainingGoesOn) {
  for (bool throws : {false, true}) {
    XrankRig rig(0, xrank_env());
    int calls = 0;
    rig.t.engine->set_rank_exchange(
        [&](const RankWindow&) -> std::optional<std::vector<RankWindow>> {
          ++calls;
          if (throws) throw std::runtime_error("rank 3 did not answer within 30s");
          return std::nullopt;
        });
    for (int i = 0; i < 12; ++i) rig.step();
    rig.t.engine->shutdown();
    EXPECT_EQ(calls, 1);
    auto r = rig.records();
    ASSERT_EQ(r.size(), 4u);
    for (const auto& w : r) EXPECT_FALSE(w.contains("xrank"));
    EXPECT_EQ(rig.notices_with("vxperf: cross-rank view off: the exchange of window step 0-2 "
                               "failed"),
              1);
    EXPECT_EQ(rig.notices_with("rank 3 did not answer within 30s"), throws ? 1 : 0);
    EXPECT_EQ(rig.notices_with("training goes on without it"), 1);
  }
}

TEST(LiveCrossRank, TwoProcessesClaimingOneRankAreSaid) {
  XrankRig rig(0, xrank_env());
  rig.t.engine->set_rank_exchange([&](const RankWindow& mine) {
    std::vector<RankWindow> all(4, mine);  // everyone says rank 0
    for (int r = 2; r < 4; ++r) all[static_cast<std::size_t>(r)].rank = r - 1;
    return std::optional<std::vector<RankWindow>>(all);
  });
  for (int i = 0; i < 9; ++i) rig.step();
  EXPECT_EQ(rig.notices_with("rank 0 is claimed by 2 processes"), 1);
  for (const auto& w : rig.records()) EXPECT_FALSE(w.contains("xrank"));
}

TEST(LiveCrossRank, WindowsEndingAtDifferentStepsAreSaid) {
  XrankRig rig(0, xrank_env());
  rig.t.engine->set_rank_exchange([&](const RankWindow& mine) {
    std::vector<RankWindow> all(4, mine);
    for (int r = 0; r < 4; ++r) all[static_cast<std::size_t>(r)].rank = r;
    all[3].step_first = 0;
    all[3].step_last = 9;  // VIDEOX_PERF_EVERY=10 there
    return std::optional<std::vector<RankWindow>>(all);
  });
  for (int i = 0; i < 9; ++i) rig.step();
  EXPECT_EQ(rig.notices_with("rank 3 closed this window at steps 0-9, rank 0 at 0-2"), 1);
  EXPECT_EQ(rig.records().size(), 3u);
}

TEST(LiveCrossRank, WithoutAnExchangeOrOtherRanksItSaysSoOnce) {
  XrankRig rig(0, xrank_env());
  for (int i = 0; i < 9; ++i) rig.step();
  EXPECT_EQ(rig.notices_with("no rank exchange was given"), 1);
  EXPECT_EQ(rig.records().size(), 3u);

  TestEngine alone(xrank_env(), false);
  int calls = 0;
  alone.engine->set_rank_exchange([&](const RankWindow&) {
    ++calls;
    return std::optional<std::vector<RankWindow>>();
  });
  Trainer& trainer = alone.engine->trainer();
  int opt = 0;
  for (int i = 0; i < 6; ++i) {
    MicroStep micro(&trainer);
    alone.clock->advance(0.1);
    OptimizerStep o(&opt, true, &trainer);
  }
  EXPECT_EQ(calls, 0);
  int said = 0;
  for (const auto& line : alone.output->logs())
    said += line.find("a world of one rank") != std::string::npos;
  EXPECT_EQ(said, 1);
}

}  // namespace
}  // namespace vxperf
