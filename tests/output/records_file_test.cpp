// The records file (VIDEOX_PERF_JSON): a file per rank, its directory made, failures said once.
#include "output/records_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace vxperf {
namespace {

TEST(RecordsFileTest, UnwritablePathIsReportedOnceAndMeasurementGoesOn) {
  internal::RecordsFile out("/proc/vxperf-cannot-exist/records.jsonl", nullptr);
  ::testing::internal::CaptureStderr();
  out.append("{}", 0, 1);
  out.append("{}", 0, 1);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("cannot write records to /proc/vxperf-cannot-exist/records.jsonl"),
            std::string::npos);
  EXPECT_EQ(err.find("cannot write", err.find("cannot write") + 1), std::string::npos);
}

TEST(RecordsFileTest, CreatesDirectoryAndSuffixesRanks) {
  std::string dir = ::testing::TempDir() + "vxperf-out-test/nested";
  std::filesystem::remove_all(dir);
  internal::RecordsFile out(dir + "/records.jsonl", nullptr);
  out.append("{\"a\":1}", 3, 4);
  out.append("{\"a\":2}", 3, 4);
  std::ifstream in(dir + "/records.jsonl.rank3");
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(in, line)) lines.push_back(line);
  EXPECT_EQ(lines, (std::vector<std::string>{"{\"a\":1}", "{\"a\":2}"}));
  EXPECT_EQ(internal::RecordsFile::path_for("r.jsonl", 0, 1), "r.jsonl");
}

}  // namespace
}  // namespace vxperf
