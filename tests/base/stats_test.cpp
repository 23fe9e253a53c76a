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

}  // namespace
}  // namespace vxperf::internal
