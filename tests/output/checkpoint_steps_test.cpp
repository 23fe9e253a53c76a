// The steps checkpoints were saved at: kept in a hidden file beside the records file, found again
// by a later process (a restarted attempt), the last save of a path winning, torn lines passed
// over; found by another rank of the job (one that restores what the main process alone saved) in
// the files of every rank, whatever the world size, the latest save winning; paths kept absolute.
#include "output/checkpoint_steps.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

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
    EXPECT_EQ(first.step_of({file}, "/ck/latest"), 40);
  }
  {
    std::ofstream torn(file, std::ios::app);
    torn << "{\"checkpoint\":\"/ck/step-20\",\"st\n";  // a line cut short by a crash
    torn << "{\"checkpoint\":\"/ck/neg\",\"step\":-3}\n";
  }
  CheckpointSteps later(nullptr);  // the next attempt: only the file knows
  EXPECT_EQ(later.step_of({file}, "/ck/step-20"), 20);
  EXPECT_EQ(later.step_of({file}, "/ck/latest"), 40);
  EXPECT_EQ(later.step_of({file}, "/ck/neg"), std::nullopt);
  EXPECT_EQ(later.step_of({file}, "/ck/never"), std::nullopt);
  EXPECT_EQ(later.step_of({}, "/ck/latest"), std::nullopt);  // no records file: memory only
}

// Writes `text` to `path` as it is (a sibling's file, or a foreign one).
void write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

TEST(CheckpointStepsTest, AJobsFilesAreEveryRanksOfItsRecordsWhateverTheWorldSize) {
  const std::string dir = ::testing::TempDir() + "vxperf-ckpt-job/";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (const char* name :
       {".perf.jsonl.checkpoints", ".perf.jsonl.rank0.checkpoints",
        ".perf.jsonl.rank12.checkpoints",
        // not the job's: another records name, no rank number, a records file, another suffix
        ".perf.jsonlx.rank0.checkpoints", ".other.jsonl.rank0.checkpoints",
        ".perf.jsonl.rank.checkpoints", ".perf.jsonl.rankx.checkpoints",
        ".perf.jsonl.rank1.checkpoints.tmp", "perf.jsonl.rank1.checkpoints", "perf.jsonl.rank0",
        ".perf.jsonl.rank1checkpoints"}) {
    write(dir + name, "");
  }
  EXPECT_EQ(CheckpointSteps::job_files(dir + "perf.jsonl"),
            (std::vector<std::string>{dir + ".perf.jsonl.checkpoints",
                                      dir + ".perf.jsonl.rank0.checkpoints",
                                      dir + ".perf.jsonl.rank12.checkpoints"}));
  EXPECT_TRUE(CheckpointSteps::job_files("").empty());
  EXPECT_TRUE(CheckpointSteps::job_files(dir + "missing/perf.jsonl").empty());
  // Each rank's own file is among them.
  EXPECT_EQ(CheckpointSteps::job_files(dir + "perf.jsonl")[1],
            CheckpointSteps::path_for(dir + "perf.jsonl.rank0"));
}

// The main process alone saves (diffusers' scripts); every rank restores: each finds the step in
// rank 0's file, as soon as the save's line is written (no buffer: a restore on another rank
// later in the same attempt finds it), a line still being written is not read, and the latest
// save of the path by any rank (an earlier job's of the same records, another world size's) wins.
TEST(CheckpointStepsTest, ARankFindsTheStepAnotherRankSaved) {
  const std::string dir = ::testing::TempDir() + "vxperf-ckpt-ranks/";
  std::filesystem::remove_all(dir);
  const std::string base = dir + "perf.jsonl";
  CheckpointSteps rank0(nullptr), rank1(nullptr);
  EXPECT_EQ(rank1.step_of(CheckpointSteps::job_files(base), "/ck/step-20"), std::nullopt);
  rank0.saved(CheckpointSteps::path_for(base + ".rank0"), "/ck/step-20", 20, 100.0);
  EXPECT_EQ(rank1.step_of(CheckpointSteps::job_files(base), "/ck/step-20"), 20);

  // A restarted attempt of another world size: a world of one finds rank 0's save.
  CheckpointSteps alone(nullptr);
  EXPECT_EQ(alone.step_of(CheckpointSteps::job_files(base), "/ck/step-20"), 20);

  // The latest save of a path wins across the files; in one file, its last whole line.
  write(CheckpointSteps::path_for(base),  // an earlier job's world of one, before rank 0's
        "{\"checkpoint\":\"/ck/latest\",\"step\":10,\"ts\":50.0}\n"
        "{\"checkpoint\":\"/ck/step-20\",\"step\":7,\"ts\":60.0}\n");
  rank0.saved(CheckpointSteps::path_for(base + ".rank0"), "/ck/latest", 40, 200.0);
  write(CheckpointSteps::path_for(base + ".rank3"),
        "{\"checkpoint\":\"/ck/latest\",\"step\":60,\"ts\":300.0}\n"
        "{\"checkpoint\":\"/ck/latest\",\"step\":20,\"ts\":150.0}\n"   // the clock set back
        "{\"checkpoint\":\"/ck/step-20\",\"st\n"                       // torn
        "{\"checkpoint\":\"/ck/step-20\",\"step\":99,\"ts\":900.0}");  // being written
  const std::vector<std::string> files = CheckpointSteps::job_files(base);
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(rank1.step_of(files, "/ck/latest"), 40);   // rank 0's (200) over rank 3's last (150)
  EXPECT_EQ(rank1.step_of(files, "/ck/step-20"), 20);  // rank 0's (100) over the old job's (60)
  // The saver's own save in memory is weighed by its time as well.
  EXPECT_EQ(rank0.step_of(files, "/ck/latest"), 40);
  rank1.saved("", "/ck/latest", 50, 400.0);  // memory only
  EXPECT_EQ(rank1.step_of(files, "/ck/latest"), 50);
  EXPECT_EQ(alone.step_of(files, "/ck/latest"), 40);  // another process does not know it
  EXPECT_EQ(alone.step_of(files, "/ck/never"), std::nullopt);
}

TEST(CheckpointStepsTest, PathsAreKeptAbsoluteAndNormal) {
  const std::string cwd = std::filesystem::current_path().string();
  EXPECT_EQ(CheckpointSteps::normal_path("/ck/step-20/"), "/ck/step-20");
  EXPECT_EQ(CheckpointSteps::normal_path("/ck//a/./b/../step-20"), "/ck/a/step-20");
  EXPECT_EQ(CheckpointSteps::normal_path("/"), "/");
  EXPECT_EQ(CheckpointSteps::normal_path("ck/step-20"), cwd + "/ck/step-20");
  EXPECT_EQ(CheckpointSteps::normal_path("./ck/step-20/"), cwd + "/ck/step-20");
  EXPECT_EQ(CheckpointSteps::normal_path(""), "");

  // Saved by a relative path, restored by the absolute one (and the other way), on any rank.
  const std::string dir = ::testing::TempDir() + "vxperf-ckpt-paths/";
  std::filesystem::remove_all(dir);
  const std::string base = dir + "perf.jsonl";
  CheckpointSteps saver(nullptr), other(nullptr);
  saver.saved(CheckpointSteps::path_for(base + ".rank0"), "ck/step-20", 20, 1.0);
  saver.saved(CheckpointSteps::path_for(base + ".rank0"), cwd + "/ck/step-40", 40, 2.0);
  EXPECT_EQ(saver.step_of({}, cwd + "/ck/step-20/"), 20);
  EXPECT_EQ(other.step_of(CheckpointSteps::job_files(base), cwd + "/ck/./step-20"), 20);
  EXPECT_EQ(other.step_of(CheckpointSteps::job_files(base), "ck/step-40"), 40);
  std::ifstream kept(CheckpointSteps::path_for(base + ".rank0"));
  std::string first;
  std::getline(kept, first);
  EXPECT_NE(first.find("\"checkpoint\":\"" + cwd + "/ck/step-20\""), std::string::npos) << first;
}

}  // namespace
}  // namespace vxperf
