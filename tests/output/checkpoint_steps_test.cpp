// The steps checkpoints were saved at: kept in a hidden file beside the records file, found again
// by a later process (a restarted attempt), the last save of a path winning, torn lines passed over.
#include "output/checkpoint_steps.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace vxperf {
namespace {

using internal::CheckpointSteps;

TEST(CheckpointStepsTest, FileIsHiddenBesideTheRecords) {
  EXPECT_EQ(CheckpointSteps::path_for("/runs/a/perf.jsonl.rank3"),
            "/runs/a/.perf.jsonl.rank3.checkpoints");
  EXPECT_EQ(CheckpointSteps::path_for("perf.jsonl"), ".perf.jsonl.checkpoints");
  EXPECT_EQ(CheckpointSteps::path_for(""), "");
}

TEST(CheckpointStepsTest, ALaterProcessFindsTheLastSaveOfAPath) {
  std::string dir = ::testing::TempDir() + "vxperf-ckpt-steps";
  std::filesystem::remove_all(dir);
  const std::string file = CheckpointSteps::path_for(dir + "/perf.jsonl");
  {
    CheckpointSteps first(nullptr);  // the first attempt
    first.saved(file, "/ck/step-20", 20, 1.0);
    first.saved(file, "/ck/latest", 20, 2.0);
    first.saved(file, "/ck/latest", 40, 3.0);
    EXPECT_EQ(first.step_of(file, "/ck/latest"), 40);
  }
  {
    std::ofstream torn(file, std::ios::app);
    torn << "{\"checkpoint\":\"/ck/step-20\",\"st\n";  // a line cut short by a crash
    torn << "{\"checkpoint\":\"/ck/neg\",\"step\":-3}\n";
  }
  CheckpointSteps later(nullptr);  // the next attempt: only the file knows
  EXPECT_EQ(later.step_of(file, "/ck/step-20"), 20);
  EXPECT_EQ(later.step_of(file, "/ck/latest"), 40);
  EXPECT_EQ(later.step_of(file, "/ck/neg"), std::nullopt);
  EXPECT_EQ(later.step_of(file, "/ck/never"), std::nullopt);
  EXPECT_EQ(later.step_of("", "/ck/latest"), std::nullopt);  // no records file: memory only
}

}  // namespace
}  // namespace vxperf
