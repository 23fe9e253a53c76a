#include "base/stats.h"

#include <gtest/gtest.h>

#include <cmath>

namespace vxperf::internal {
namespace {

TEST(Stats, FsumIsExactlyRounded) {
  EXPECT_EQ(fsum({0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1}), 1.0);
  EXPECT_EQ(fsum({1e100, 1.0, -1e100, 1e-100}), 1.0);
  EXPECT_EQ(fsum({}), 0.0);
  // Python: math.fsum([1e16, 1.0, 1e-16]) == 1.0000000000000002e16
  EXPECT_EQ(fsum({1e16, 1.0, 1e-16}), 10000000000000002.0);
}

TEST(Stats, PlainSumIsLeftToRight) {
  EXPECT_NE(plain_sum({0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1}), 1.0);
}

TEST(Stats, MeanAndDeviationMatchPython) {
  // statistics.fmean([1, 2, 3, 4]) == 2.5; statistics.stdev(...) == 1.2909944487358056
  EXPECT_DOUBLE_EQ(fmean({1, 2, 3, 4}), 2.5);
  EXPECT_DOUBLE_EQ(stdev({1, 2, 3, 4}), 1.2909944487358056);
  EXPECT_EQ(stdev({5.0}), 0.0);
  EXPECT_EQ(stdev({0.3, 0.3, 0.3}), 0.0);
  EXPECT_TRUE(std::isnan(fmean({})));
}

TEST(Stats, PercentileInterpolatesBetweenRanks) {
  EXPECT_EQ(percentile({7.0}, 95), 7.0);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4}, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4}, 95), 3.85);
  EXPECT_TRUE(std::isnan(percentile({}, 50)));
}

TEST(Stats, MedianOfAnyOrder) {
  EXPECT_EQ(median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_EQ(median({4.0, 1.0, 3.0, 2.0}), 2.5);
  EXPECT_TRUE(std::isnan(median({})));
}

// Three 10 s steps among two-second ones (a compile, a stall) leave the ideal at 2 s: the median
// is 2, its absolute deviation 0, so nothing above 2 s is kept.
TEST(Stats, IdealStepLeavesOutliersOut) {
  std::vector<double> steps(20, 2.0);
  steps[0] = steps[7] = steps[13] = 10.0;
  EXPECT_DOUBLE_EQ(ideal_step_s(steps), 2.0);
  // Spread steps: the mean of those within median + 3 MAD (median 3.5, MAD 1.5: up to 8).
  EXPECT_DOUBLE_EQ(ideal_step_s({1.0, 2.0, 3.0, 4.0, 5.0, 40.0}), 3.0);
  EXPECT_DOUBLE_EQ(ideal_step_s({7.0}), 7.0);
  EXPECT_TRUE(std::isnan(ideal_step_s({})));
}

}  // namespace
}  // namespace vxperf::internal
