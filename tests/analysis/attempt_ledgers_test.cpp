// A restarted job's ledger, stitched from its attempts' windows: the steps run again are lost
// progress, the gap between attempts a part of its own, the parts still the wall; what cannot be
// stitched cleanly is said.
#include "analysis/attempt_ledgers.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis_records.h"

namespace vxperf {
namespace {

using analysis::AttemptLedgers;

// A window of `attempt` over [first, last] whose steps each took 1 s of compute and 0.5 s of data
// wait, closing `wall` seconds after its attempt's loop began at `start` (wall clock).
TrainWindowRecord window(int attempt, std::int64_t first, std::int64_t last, double start,
                         std::int64_t steps_before, int world = 4) {
  TrainWindowRecord r;
  r.attempt = attempt;
  r.world_size = world;
  r.step_first = first;
  r.step_last = last;
  const std::int64_t steps = steps_before + (last - first + 1);
  Ledger l;
  l.steps = steps;
  l.ideal_step_s = 1.0;
  l.productive_s = static_cast<double>(steps);
  l.data_wait_s = 0.5 * static_cast<double>(steps);
  l.restore_s = attempt > 0 ? 2.0 : 0.0;
  l.wall_s = l.productive_s + l.data_wait_s + l.restore_s;
  l.goodput = l.productive_s / l.wall_s;
  r.ledger = l;
  r.ts = start + l.wall_s;
  return r;
}

double parts(const Ledger& l) {
  return l.startup_s + l.setup_s + l.productive_s + l.first_step_excess_s + l.slow_step_excess_s +
         l.data_wait_s + l.save_s + l.restore_s + l.eval_s + l.between_steps_s +
         l.lost_progress_s + l.between_attempts_s;
}

TEST(AttemptLedgers, StepsRunAgainAreLostProgressAndThePartsStayTheWall) {
  AttemptLedgers job;
  // Attempt 0: steps 0-29 from t=1000 (ends at 1045); attempt 1 restores step 20 at t=1100.
  job.add(window(0, 0, 9, 1000, 0));
  job.add(window(0, 10, 19, 1000, 10));
  job.add(window(0, 20, 29, 1000, 20));
  for (std::int64_t first = 20; first < 60; first += 10) {
    job.add(window(1, first, first + 9, 1100, first - 20));
  }
  std::vector<std::string> said;
  auto l = job.ledger(0, &said);
  ASSERT_TRUE(l.has_value());
  EXPECT_TRUE(said.empty());
  EXPECT_EQ(l->attempts, 2);
  EXPECT_EQ(l->steps, 60);  // 30 + 40 run, 10 of them again
  EXPECT_EQ(job.steps_run(), 70);
  EXPECT_DOUBLE_EQ(l->lost_progress_s, 15.0);     // steps 20-29 of attempt 0: 10 x 1.5 s
  EXPECT_DOUBLE_EQ(l->between_attempts_s, 55.0);  // 1045 to 1100
  EXPECT_DOUBLE_EQ(l->recovery_s, 57.0);          // and the restore
  EXPECT_DOUBLE_EQ(l->productive_s, 60.0);
  EXPECT_DOUBLE_EQ(l->wall_s, 1100 + 62.0 - 1000);
  EXPECT_NEAR(parts(*l), l->wall_s, 1e-9);
  EXPECT_DOUBLE_EQ(l->goodput, 60.0 / l->wall_s);
}

// A long attempt keeps its latest windows' marks as they were and the earlier ones in pairs: a
// resume among the latest gives the lost progress exactly, one among the earlier ones a share of a
// pair's (each step 1.5 s here: exact too), and the marks stay few.
TEST(AttemptLedgers, ALongAttemptKeepsFewMarksAndItsLostProgress) {
  for (std::int64_t resume : {9950, 2000, 1234}) {
    AttemptLedgers job;
    for (std::int64_t first = 0; first < 10000; first += 10) {
      job.add(window(0, first, first + 9, 1000, first));
    }
    for (std::int64_t first = resume; first < resume + 40; first += 10) {
      job.add(window(1, first, first + 9, 20000, first - resume));
    }
    auto l = job.ledger(0, nullptr);
    ASSERT_TRUE(l.has_value());
    EXPECT_EQ(l->steps, resume + 40) << resume;
    EXPECT_NEAR(l->lost_progress_s, 1.5 * static_cast<double>(10000 - resume), 1e-6) << resume;
    EXPECT_NEAR(parts(*l), l->wall_s, 1e-6) << resume;
  }
}

// An attempt's final record (train_end): its ledger runs past its last window (a save, the
// program's teardown), so the time between attempts is shorter by as much and the wall the same.
TEST(AttemptLedgers, AFinalRecordRunsTheAttemptToItsEnd) {
  AttemptLedgers job;
  job.add(window(0, 0, 9, 1000, 0));
  job.add(window(0, 10, 19, 1000, 10));
  TrainWindowRecord last = window(0, 20, 29, 1000, 20);  // closes at 1045
  job.add(last);
  const TrainEndRecord end = analysis::test_records::end_of(last, 5);  // steps 0-29, ends at 1050
  job.add(end);
  for (std::int64_t first = 20; first < 60; first += 10) {
    job.add(window(1, first, first + 9, 1100, first - 20));
  }
  auto stitched = job.ledger(0, nullptr);
  ASSERT_TRUE(stitched.has_value());
  EXPECT_EQ(stitched->steps, 60);
  EXPECT_DOUBLE_EQ(stitched->lost_progress_s, 15.0);     // as without it
  EXPECT_DOUBLE_EQ(stitched->between_attempts_s, 50.0);  // 1050 to 1100
  EXPECT_DOUBLE_EQ(stitched->between_steps_s, 5.0);
  EXPECT_DOUBLE_EQ(stitched->wall_s, 1100 + 62.0 - 1000);
  EXPECT_NEAR(parts(*stitched), stitched->wall_s, 1e-9);
  auto span = job.span();
  ASSERT_TRUE(span.has_value());
  EXPECT_DOUBLE_EQ(span->first, 1000);
  EXPECT_DOUBLE_EQ(span->second, 1162);
  // One attempt: its final record's ledger, whatever order the records came in.
  AttemptLedgers one;
  one.add(end);
  one.add(last);
  EXPECT_DOUBLE_EQ(one.ledger(0, nullptr)->wall_s, end.ledger->wall_s);
}

// A restart that runs every step of the earlier attempt again, its first step's excess among
// them: what those steps took beyond the ideal comes out of the first step's excess once the slow
// steps' is spent, and no part goes below zero (a new user saw "slow steps -0.001s").
TEST(AttemptLedgers, StepsRunAgainNeverTakeAPartBelowZero) {
  AttemptLedgers job;
  TrainWindowRecord first = window(0, 0, 9, 1000, 0);
  Ledger& l0 = *first.ledger;  // step 0 took 3 s: 2 s above the ideal, 0.25 s of slow steps
  l0.first_step_excess_s = 2.0;
  l0.slow_step_excess_s = 0.25;
  l0.wall_s += 2.25;
  first.ts += 2.25;
  job.add(first);
  for (std::int64_t f = 0; f < 20; f += 10) job.add(window(1, f, f + 9, 1100, f));
  auto l = job.ledger(0, nullptr);
  ASSERT_TRUE(l.has_value());
  EXPECT_DOUBLE_EQ(l->lost_progress_s, 10 * 1.5 + 2.25);  // the attempt's steps, all of them
  EXPECT_DOUBLE_EQ(l->slow_step_excess_s, 0.0);
  EXPECT_DOUBLE_EQ(l->first_step_excess_s, 0.0);
  for (double part : {l->productive_s, l->first_step_excess_s, l->slow_step_excess_s,
                      l->data_wait_s, l->lost_progress_s, l->between_attempts_s}) {
    EXPECT_GE(part, 0.0);
  }
  EXPECT_NEAR(parts(*l), l->wall_s, 1e-9);
}

TEST(AttemptLedgers, OneAttemptIsItsLatestWindowsLedger) {
  AttemptLedgers job;
  job.add(window(0, 0, 9, 1000, 0));
  job.add(window(0, 10, 19, 1000, 10));
  auto l = job.ledger(0, nullptr);
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->attempts, 1);
  EXPECT_EQ(l->steps, 20);
  EXPECT_EQ(AttemptLedgers().ledger(0, nullptr), std::nullopt);
}

TEST(AttemptLedgers, AnotherWorldSizeAndAClockSetBackAreSaidOnce) {
  AttemptLedgers job;
  job.add(window(0, 0, 9, 1000, 0));
  TrainWindowRecord back = window(0, 10, 19, 1000, 10);
  back.ts = 900;  // the wall clock set back between two windows
  job.add(back);
  job.add(window(1, 10, 19, 1100, 0, /*world=*/2));
  job.add(window(1, 20, 29, 1100, 10, /*world=*/2));
  std::vector<std::string> said;
  auto l = job.ledger(3, &said);
  ASSERT_TRUE(l.has_value());
  ASSERT_EQ(said.size(), 2u);
  EXPECT_NE(said[0].find("rank 3: a window's time is before"), std::string::npos);
  EXPECT_NE(said[1].find("world size of 2 after 4"), std::string::npos);
  EXPECT_NEAR(parts(*l), l->wall_s, 1e-9);  // still made, still adding up
}

}  // namespace
}  // namespace vxperf
