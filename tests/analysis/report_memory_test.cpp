// The report's memory does not grow with the windows: a ReportBuilder fed N and then 10N and 100N
// windows per rank keeps about the same heap, whatever its ledgers, scores and attempts keep
// (counted by this program's own operator new and delete, not timed). And the bounded structures
// it keeps them in: exact while small, close beyond.
#include <gtest/gtest.h>
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

#include "analysis/partial_io.h"
#include "analysis/value_sketch.h"
#include "analysis/window_state.h"
#include "analysis_records.h"
#include "base/stats.h"
#include "vxperf/report.h"

namespace {

// The heap bytes live now: what this program's operator new gave and its delete took back.
std::atomic<std::int64_t> g_live{0};

void* counted(void* p) {
  if (p == nullptr) throw std::bad_alloc();
  g_live += static_cast<std::int64_t>(malloc_usable_size(p));
  return p;
}
void uncount(void* p) noexcept {
  if (p == nullptr) return;
  g_live -= static_cast<std::int64_t>(malloc_usable_size(p));
  std::free(p);
}
void* aligned(std::size_t n, std::align_val_t al) {
  const auto a = static_cast<std::size_t>(al);
  return std::aligned_alloc(a, (std::max<std::size_t>(n, 1) + a - 1) / a * a);
}

}  // namespace

void* operator new(std::size_t n) { return counted(std::malloc(std::max<std::size_t>(n, 1))); }
void* operator new[](std::size_t n) { return counted(std::malloc(std::max<std::size_t>(n, 1))); }
void* operator new(std::size_t n, std::align_val_t al) { return counted(aligned(n, al)); }
void* operator new[](std::size_t n, std::align_val_t al) { return counted(aligned(n, al)); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  void* p = std::malloc(std::max<std::size_t>(n, 1));
  if (p != nullptr) g_live += static_cast<std::int64_t>(malloc_usable_size(p));
  return p;
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p) noexcept { uncount(p); }
void operator delete[](void* p) noexcept { uncount(p); }
void operator delete(void* p, std::size_t) noexcept { uncount(p); }
void operator delete[](void* p, std::size_t) noexcept { uncount(p); }
void operator delete(void* p, std::align_val_t) noexcept { uncount(p); }
void operator delete[](void* p, std::align_val_t) noexcept { uncount(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { uncount(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { uncount(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { uncount(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { uncount(p); }

namespace vxperf::analysis {
namespace {

using test_records::window;

// What a builder holds after `windows` windows on each of `ranks` ranks, each rank's in two
// attempts (the second resuming 40 steps before the first one's end) with ledgers, energy and
// every phase, and a final record per attempt; read rank after rank (`by_rank`, as files are) or
// window after window. Its report is checked to be there.
std::int64_t retained(int ranks, int windows, bool by_rank) {
  std::uint64_t seed = 7;
  auto unit = [&seed] {  // in [0, 1): a plain LCG (this file is built without optimization)
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(seed >> 11) * 0x1.0p-53;
  };
  TrainWindowRecord w = window(0, 0, 8, 1.0);
  w.phases_s.clear();
  for (const PhaseInfo& info : kPhases) w.phases_s.emplace_back(info.name, 0.0);
  w.readings->energy_j = 0;
  w.readings->power_w_mean = 0;
  w.run_id = "job";
  TrainEndRecord end = test_records::end_of(w, 1.0);
  end.run_id = w.run_id;
  const std::int64_t restart = windows / 2;  // the second attempt's first window
  auto fill = [&](int rank, int i) {
    const bool second = i >= restart;
    // The second attempt ran again the 5 windows before its first.
    const std::int64_t index = second ? i - 5 : i;
    w.rank = rank;
    w.attempt = second ? 1 : 0;
    w.step_first = index * 8;
    w.step_last = w.step_first + 7;
    w.steps = 8;
    w.ts = 1000.0 + 25.0 * i + (second ? 600.0 : 0.0) + 3.0 * unit();
    w.step_s_p50 = 2.8 + 0.4 * unit() + (rank == 3 ? 0.5 : 0.0);
    w.step_s_p95 = w.step_s_p50 * (1.2 + 0.3 * unit());
    for (auto& [name, seconds] : w.phases_s) seconds = unit() < 0.1 ? 0.0 : unit();
    w.throughput->wall_s = w.step_s_p50 * 8;
    w.readings->energy_j = 5000 * unit();
    w.readings->power_w_mean = 300 + 100 * unit();  // seconds: energy over power, with gaps
    Ledger& l = *w.ledger;
    const auto steps_in = static_cast<double>(index - (second ? restart - 5 : 0) + 1) * 8;
    l.steps = static_cast<std::int64_t>(steps_in);
    l.productive_s = 2.7 * steps_in;
    l.data_wait_s = 0.2 * steps_in;
    l.slow_step_excess_s = 0.1 * steps_in;
    l.wall_s = l.productive_s + l.data_wait_s + l.slow_step_excess_s;
  };
  auto finish_attempt = [&](ReportBuilder& builder, int rank, int i) {
    fill(rank, i);
    end.rank = rank;
    end.attempt = w.attempt;
    end.ts = w.ts + 1;
    end.ledger = w.ledger;
    builder.end(end);
  };
  const std::int64_t before = g_live;
  auto builder = std::make_unique<ReportBuilder>();
  if (by_rank) {
    for (int rank = 0; rank < ranks; ++rank) {
      for (int i = 0; i < windows; ++i) {
        fill(rank, i);
        builder->window(w);
        if (i == restart - 1 || i == windows - 1) finish_attempt(*builder, rank, i);
      }
    }
  } else {
    for (int i = 0; i < windows; ++i) {
      for (int rank = 0; rank < ranks; ++rank) {
        fill(rank, i);
        builder->window(w);
        if (i == restart - 1 || i == windows - 1) finish_attempt(*builder, rank, i);
      }
    }
  }
  const std::int64_t held = g_live - before;
  Report report = builder->finish();
  EXPECT_TRUE(report.training);
  EXPECT_EQ(report.ranks.size(), static_cast<std::size_t>(ranks));
  EXPECT_TRUE(report.ranks[3].relative_score && report.ranks[3].ledger);
  EXPECT_EQ(report.ranks[3].ledger->attempts, 2);
  return held;
}

// 200 windows a rank (a records_bench set's), 2,000 (the other's) and 20,000: the state the
// builder holds is flat. Before, it kept lists of windows: about 180 bytes a window and rank, 29
// MB at 20,000 windows on these 8 ranks.
TEST(ReportMemory, FlatInTheWindows) {
  for (bool by_rank : {true, false}) {
    const int ranks = 8;
    const std::int64_t small = retained(ranks, 200, by_rank);
    const std::int64_t large = retained(ranks, 2000, by_rank);
    const std::int64_t huge = retained(ranks, 20000, by_rank);
    std::printf("%s: %lld bytes at 200 windows a rank, %lld at 2,000, %lld at 20,000 (%d ranks)\n",
                by_rank ? "rank after rank" : "window after window",
                static_cast<long long>(small), static_cast<long long>(large),
                static_cast<long long>(huge), ranks);
    EXPECT_LE(large, small * 3 / 2) << by_rank;
    EXPECT_LE(huge, large * 11 / 10) << by_rank;
    // Not a list in disguise: a rank's sketches, bands, marks and spans, under 64 KiB.
    EXPECT_LT(huge, std::int64_t{ranks} * 65536) << by_rank;
  }
}

// The percentiles of a sketch are the list's while it holds at most its limit of distinct values;
// past it, within a bin's width of them (2^-m of the value, m the leading bits it kept).
TEST(ReportMemory, SketchIsExactWhileSmallAndCloseBeyond) {
  std::mt19937_64 random(11);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  auto unit = [&] { return uniform(random); };
  for (int n : {1, 2, 7, 64, 128, 129, 2000, 100000}) {
    ValueSketch<double, double> weighted(128);
    ValueSketch<float, std::uint32_t> counted(128);
    std::vector<std::pair<double, double>> pairs;
    std::vector<double> floats;
    std::set<double> distinct;
    std::set<float> distinct_floats;
    for (int i = 0; i < n; ++i) {
      // Ties among a few values, and the rest spread over [2.8, 3.2].
      const double v = i % 5 == 0 ? 3.0 : 2.8 + 0.4 * unit();
      const double weight = 1 + std::floor(8 * unit());
      weighted.add(v, weight);
      pairs.emplace_back(v, weight);
      distinct.insert(v);
      const auto f = static_cast<float>(unit() < 0.2 ? 0.0 : unit());
      counted.add(f, 1);
      floats.push_back(f);
      distinct_floats.insert(f);
    }
    const double p50 = internal::weighted_percentile(pairs, 50);
    const double p95 = internal::weighted_percentile(pairs, 95);
    const double median = internal::median(floats);
    EXPECT_EQ(weighted.exact(), distinct.size() <= 128) << n;
    EXPECT_EQ(counted.exact(), distinct_floats.size() <= 128) << n;
    if (weighted.exact()) {
      EXPECT_EQ(weighted.weighted_percentile(50), p50) << n;
      EXPECT_EQ(weighted.weighted_percentile(95), p95) << n;
    } else {
      EXPECT_NEAR(weighted.weighted_percentile(50), p50, 1e-3 * p50) << n;
      EXPECT_NEAR(weighted.weighted_percentile(95), p95, 1e-3 * p95) << n;
    }
    if (counted.exact()) {
      EXPECT_EQ(counted.median(), median) << n;
    } else {
      EXPECT_NEAR(counted.median(), median, 0.02 * median) << n;
    }
    EXPECT_LE(weighted.bytes(), (128 + 1) * 24u) << n;  // the limit and one more
    EXPECT_LE(counted.bytes(), (128 + 1) * 12u) << n;
  }
}

// Merged sketches (the run's from its ranks') are the merged lists' while exact.
TEST(ReportMemory, MergedSketchesAreTheMergedLists) {
  ValueSketch<double, double> run(65536);
  std::vector<std::pair<double, double>> all;
  for (int rank = 0; rank < 40; ++rank) {
    ValueSketch<double, double> one(128);
    for (int i = 0; i < 100; ++i) {
      const double v = 1.0 + 0.01 * ((rank * 37 + i * 11) % 97);
      one.add(v, 1 + i % 3);
      all.emplace_back(v, 1 + i % 3);
    }
    run.merge(one);
  }
  EXPECT_TRUE(run.exact());
  for (double q : {5.0, 50.0, 95.0, 100.0}) {
    EXPECT_EQ(run.weighted_percentile(q), internal::weighted_percentile(all, q)) << q;
  }
  // Values added after a merge wait with the merged ones, and are the list's too.
  for (int i = 0; i < 300; ++i) {
    const double v = 0.5 + 0.01 * (i % 150);
    run.add(v, 2);
    all.emplace_back(v, 2);
  }
  EXPECT_TRUE(run.exact());
  for (double q : {5.0, 50.0, 95.0, 100.0}) {
    EXPECT_EQ(run.weighted_percentile(q), internal::weighted_percentile(all, q)) << q;
  }
}

// A rank's first steps: a repeat found among runs of evenly spaced steps, whatever their order.
TEST(ReportMemory, FirstStepsFindARepeat) {
  FirstSteps firsts;
  for (std::int64_t s = 0; s < 80000; s += 8) EXPECT_FALSE(firsts.seen_again(1, 0, s)) << s;
  EXPECT_FALSE(firsts.seen_again(1, 0, 80003));  // a partial window's
  EXPECT_FALSE(firsts.seen_again(1, 1, 40));     // another attempt's
  EXPECT_FALSE(firsts.seen_again(2, 0, 40));     // another run's
  EXPECT_TRUE(firsts.seen_again(1, 0, 40));
  EXPECT_TRUE(firsts.seen_again(1, 0, 80003));
  EXPECT_FALSE(firsts.seen_again(1, 0, 44));
  EXPECT_TRUE(firsts.seen_again(1, 0, 44));
  EXPECT_LT(firsts.bytes(), 1024u);
}

// What stragglers cost, in bands past kMaxWindows windows: each rank once a band, its steps the
// sum of its windows', its phases their mean per step.
TEST(ReportMemory, WindowPhasesBandPastTheirLimit) {
  WindowPhases phases;
  const int windows = 4000;
  for (int rank = 0; rank < 4; ++rank) {
    for (int i = 0; i < windows; ++i) {
      WindowPhases::Phases p{};
      p[0] = static_cast<float>(rank == 2 ? 2.0 : 1.0);
      phases.add(9, 0, i * 8, 8, rank, p);
    }
  }
  EXPECT_TRUE(phases.banded());
  EXPECT_LE(phases.windows().size(), WindowPhases::kMaxWindows);
  double steps = 0;
  for (const auto& [key, entries] : phases.windows()) {
    ASSERT_EQ(entries.size(), 4u);
    for (int rank = 0; rank < 4; ++rank) {
      EXPECT_EQ(entries[static_cast<std::size_t>(rank)].rank, rank);
      EXPECT_EQ(entries[static_cast<std::size_t>(rank)].phases[0], rank == 2 ? 2.0f : 1.0f);
    }
    steps += WindowPhases::steps_of(key, entries[0]);
  }
  EXPECT_EQ(steps, windows * 8.0);
}

// The job's windows from its ranks' (ReportBuilder keeps each rank's apart, for partials): while
// every rank's are exact, the same entries as one structure fed them all, in rank order; past
// the limit, bands at the coarsest rank's, each rank once a band with all its steps.
TEST(ReportMemory, WindowPhasesMergedRankByRank) {
  std::mt19937_64 random(5);
  std::uniform_real_distribution<float> seconds(0.1f, 2.0f);
  for (int windows : {100, 4000}) {
    WindowPhases all, merged;
    std::vector<double> steps(3, 0.0);
    for (int rank : {2, 0, 1}) {  // ranks in no order: the merge is by rank
      WindowPhases own;
      const int count = rank == 1 ? windows / 2 : windows;  // one rank shorter
      for (int i = 0; i < count; ++i) {
        WindowPhases::Phases p{};
        p[1] = seconds(random);
        own.add(3, 0, i * 8, 8, rank, p);
        all.add(3, 0, i * 8, 8, rank, p);
        steps[static_cast<std::size_t>(rank)] += 8;
      }
      own.merge(WindowPhases{});  // nothing: unchanged
      merged.merge(own);
    }
    EXPECT_LE(merged.windows().size(), WindowPhases::kMaxWindows);
    EXPECT_EQ(merged.banded(), windows > 256);
    std::vector<double> got(3, 0.0);
    for (const auto& [key, entries] : merged.windows()) {
      for (std::size_t i = 0; i < entries.size(); ++i) {
        if (i > 0) EXPECT_LT(entries[i - 1].rank, entries[i].rank);
        got[static_cast<std::size_t>(entries[i].rank)] += WindowPhases::steps_of(key, entries[i]);
      }
      if (!merged.banded()) {
        // Exact: one structure's entries for the window, ordered by rank.
        auto want = all.windows().at(key);
        std::stable_sort(want.begin(), want.end(),
                         [](const auto& a, const auto& b) { return a.rank < b.rank; });
        ASSERT_EQ(entries.size(), want.size());
        for (std::size_t i = 0; i < entries.size(); ++i) {
          EXPECT_EQ(entries[i].phases, want[i].phases);
        }
      }
    }
    EXPECT_EQ(got, steps) << windows;
  }
}

// A sketch written as a partial's bytes and read back answers, adds and merges as the original.
TEST(ReportMemory, SketchReadBackFromItsBytesIsTheSame) {
  std::mt19937_64 random(9);
  std::normal_distribution<double> step(3.0, 0.2);
  for (int values : {50, 5000}) {
    ValueSketch<double, double> a(128);
    for (int i = 0; i < values; ++i) a.add(step(random), 1 + i % 3);
    partial_io::Writer out;
    out(a);
    ValueSketch<double, double> b(4);
    partial_io::Reader in(out.bytes().data(), out.bytes().size());
    in(b);
    EXPECT_TRUE(in.done());
    EXPECT_EQ(a.exact(), b.exact());
    for (int i = 0; i < 100; ++i) {
      const double x = step(random);
      a.add(x, 2);
      b.add(x, 2);
    }
    ValueSketch<double, double> ma(65536), mb(65536);
    ma.merge(a);
    mb.merge(b);
    for (double q : {0.0, 5.0, 50.0, 95.0, 100.0}) {
      EXPECT_EQ(a.weighted_percentile(q), b.weighted_percentile(q)) << q;
      EXPECT_EQ(ma.weighted_percentile(q), mb.weighted_percentile(q)) << q;
    }
    EXPECT_EQ(a.median(), b.median());
    // Cut short anywhere: refused, never read past the end.
    for (std::size_t cut : {std::size_t{0}, std::size_t{7}, out.bytes().size() - 1}) {
      ValueSketch<double, double> c;
      partial_io::Reader short_in(out.bytes().data(), cut);
      EXPECT_THROW(short_in(c), std::invalid_argument) << cut;
    }
  }
}

}  // namespace
}  // namespace vxperf::analysis

namespace vxperf::analysis {
namespace {

// The job's windows walked from its ranks' (WindowPhases::for_each_merged, what the report
// reads) are those of the ranks merged one after the other, entry for entry, whatever bands each
// rank reached: ranks of few windows beside ranks past the limit, windows not shared.
TEST(ReportMemory, WindowPhasesWalkedAsMerged) {
  std::mt19937_64 random(11);
  std::uniform_real_distribution<float> seconds(0.1f, 2.0f);
  for (const std::vector<int>& counts : std::vector<std::vector<int>>{
           {200, 200, 200}, {100, 4000, 30}, {5000, 300, 257, 0, 900}, {1, 2}}) {
    std::vector<WindowPhases> own(counts.size());
    for (std::size_t rank = 0; rank < counts.size(); ++rank) {
      for (int i = 0; i < counts[rank]; ++i) {
        WindowPhases::Phases p{};
        for (float& x : p) x = seconds(random);
        // Each rank's windows offset by a few steps: windows the ranks do not all share.
        const std::int64_t first = i * 8 + static_cast<std::int64_t>(rank % 2) * 4;
        own[rank].add(3, 0, first, i % 7 == 0 ? 4 : 8, static_cast<int>(rank), p);
      }
    }
    WindowPhases merged;
    std::vector<const WindowPhases*> sources;
    for (const WindowPhases& w : own) {
      merged.merge(w);
      sources.push_back(&w);
    }
    const auto want = merged.windows();
    std::map<WindowPhases::Key, std::vector<WindowPhases::Entry>> got;
    WindowPhases::for_each_merged(
        sources, [&](const WindowPhases::Key& key, const std::vector<WindowPhases::Entry>& e) {
          EXPECT_TRUE(got.emplace(key, e).second);
        });
    ASSERT_EQ(got.size(), want.size()) << counts.size();
    for (const auto& [key, entries] : want) {
      const auto& mine = got.at(key);
      ASSERT_EQ(mine.size(), entries.size());
      for (std::size_t i = 0; i < entries.size(); ++i) {
        EXPECT_EQ(mine[i].rank, entries[i].rank);
        EXPECT_EQ(mine[i].steps, entries[i].steps);
        EXPECT_EQ(mine[i].phases, entries[i].phases);
      }
    }
    // Walked in parts on threads at once: each part's windows in key order, the parts one after
    // the other the whole walk.
    for (std::size_t parts : {2u, 3u, 7u}) {
      std::vector<std::vector<std::pair<WindowPhases::Key, std::size_t>>> seen(parts);
      WindowPhases::for_each_merged(
          sources,
          [&](std::size_t part, const WindowPhases::Key& key,
              const std::vector<WindowPhases::Entry>& e) {
            seen[part].emplace_back(key, e.size());
          },
          parts);
      std::vector<std::pair<WindowPhases::Key, std::size_t>> walked;
      for (const auto& part : seen) walked.insert(walked.end(), part.begin(), part.end());
      ASSERT_EQ(walked.size(), want.size()) << parts;
      std::size_t i = 0;
      for (const auto& [key, entries] : want) {
        EXPECT_EQ(walked[i].first, key);
        EXPECT_EQ(walked[i++].second, entries.size());
      }
    }
  }
}

}  // namespace
}  // namespace vxperf::analysis
