// The records reader: records files back into records, torn and malformed lines.
#include "vxperf/records_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "analysis_records.h"
#include "vxperf/event_script.h"
#include "vxperf/vxperf.h"

namespace vxperf::analysis {
namespace {

using Json = nlohmann::json;
using namespace test_records;

TEST(RecordsReader, RoundTripsBothKinds) {
  RecordSet set = read_string(
      lines({to_json_line(request(0, 3, 12.5, true)), to_json_line(window(2, 10, 5, 1.5))}));
  ASSERT_EQ(set.requests.size(), 1u);
  ASSERT_EQ(set.windows.size(), 1u);
  EXPECT_TRUE(set.warnings.empty());
  const auto& r = set.requests[0];
  EXPECT_EQ(r.req, 3);
  EXPECT_TRUE(r.warmup);
  EXPECT_DOUBLE_EQ(r.e2e_s, 12.5);
  ASSERT_EQ(r.stages.size(), 2u);
  EXPECT_EQ(r.stages[0].name, "transformer");  // the writer's order, not alphabetical
  EXPECT_EQ(r.stages[0].count, 10);
  ASSERT_TRUE(r.dit && r.dit->mfu);
  EXPECT_EQ(r.dit->params, 1418996800);
  ASSERT_TRUE(r.readings);
  EXPECT_EQ(r.readings->allocated, std::uint64_t{40} << 30);
  const auto& w = set.windows[0];
  EXPECT_EQ(w.rank, 2);
  EXPECT_EQ(w.device, 2);
  EXPECT_EQ(w.step_last, 14);
  ASSERT_EQ(w.phases_s.size(), 3u);
  EXPECT_EQ(w.phases_s[1].first, "fwd");
  ASSERT_TRUE(w.throughput && w.throughput->priced);
  EXPECT_EQ(w.throughput->flops_coef_reason, "full, ckpt on -> 3x/4x");
  EXPECT_TRUE(w.eta_s.has_value());
  // Serializing what was read gives the same line back.
  EXPECT_EQ(to_json_line(w), to_json_line(window(2, 10, 5, 1.5)));
}

TEST(RecordsReader, ReadsEveryConformanceExpectation) {
  for (const auto& entry : std::filesystem::directory_iterator(VXPERF_CASES_DIR)) {
    std::string path = entry.path().string();
    if (path.size() < 15 || path.substr(path.size() - 15) != ".expected.jsonl") continue;
    RecordSet set;
    ASSERT_NO_THROW(set = read_record_files({path})) << path;
    std::ifstream in(path);
    std::size_t count = 0;
    std::string line;
    while (std::getline(in, line)) count += line.empty() ? 0 : 1;
    EXPECT_EQ(set.requests.size() + set.windows.size(), count) << path;
    EXPECT_TRUE(set.warnings.empty()) << path;
  }
}

TEST(RecordsReader, SkipsATornLastLineWithAWarning) {
  std::string full = to_json_line(request(0, 1, 5.0));
  RecordSet set =
      read_string(full + "\n" + full + "\n" + full.substr(0, full.size() / 2), "run.jsonl");
  EXPECT_EQ(set.requests.size(), 2u);
  ASSERT_EQ(set.warnings.size(), 1u);
  EXPECT_NE(set.warnings[0].find("run.jsonl:3:"), std::string::npos) << set.warnings[0];
}

TEST(RecordsReader, ReportsAMalformedLineWithFileAndLine) {
  std::string full = to_json_line(request(0, 1, 5.0));
  try {
    read_string(full + "\n{\"kind\": \"request\", \n" + full + "\n", "run.jsonl");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 2);
    EXPECT_EQ(e.file(), "run.jsonl");
    EXPECT_EQ(std::string(e.what()).rfind("run.jsonl:2: ", 0), 0u) << e.what();
  }
}

TEST(RecordsReader, RejectsWrongTypesAndUnknownKinds) {
  auto error_of = [](const std::string& text) -> std::string {
    try {
      read_string(text + "\n" + to_json_line(request(0, 1, 5.0)) + "\n");
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of(R"({"kind": "request", "e2e_s": "fast", "stages": {}})").find("e2e_s"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"kind": "request", "e2e_s": 1})").find("stages"), std::string::npos);
  EXPECT_NE(error_of(R"({"kind": "window"})").find("unknown record kind"), std::string::npos);
  EXPECT_NE(error_of(R"([1, 2])").find("JSON object"), std::string::npos);
  std::string window = R"({"kind": "train_window", "steps": 2, "step_s_p50": 1, )"
                       R"("step_s_p95": 1, "phases_s": {"fwd": "x"}})";
  EXPECT_NE(error_of(window).find("\"fwd\" must be a number"), std::string::npos)
      << error_of(window);
  EXPECT_NE(error_of(R"({"no": "kind"})").find(":1:"), std::string::npos);
}

TEST(RecordsReader, MissingFileIsAnInputError) {
  EXPECT_THROW(read_record_files({"/nonexistent/records.jsonl"}), InputError);
}

TEST(RecordsReader, SkipsBadLinesWhenAskedSayingTheFirstAndTheCount) {
  std::string full = to_json_line(request(0, 1, 5.0));
  std::istringstream in(full + "\n{\"kind\": \"request\", \n{\"level\": \"info\"}\n" + full +
                        "\n[3]\n" + full + "\n");
  RecordSet set;
  ReadOptions options;
  options.skip_bad_lines = true;
  read_records(in, "run.jsonl", set, options);
  EXPECT_EQ(set.requests.size(), 3u);
  ASSERT_EQ(set.warnings.size(), 2u);
  EXPECT_EQ(set.warnings[0], "run.jsonl:2: not valid JSON (line skipped)");
  EXPECT_EQ(set.warnings[1], "run.jsonl: 2 more lines skipped as not records (the last at line 5)");
}

TEST(RecordsReader, InputWithNoRecordIsAnErrorEvenWhenSkipping) {
  std::istringstream in("{\"msg\": \"hello\"}\n{\"msg\": \"bye\"}\n");
  RecordSet set;
  ReadOptions options;
  options.skip_bad_lines = true;
  try {
    read_records(in, "other.jsonl", set, options);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 1);
    EXPECT_EQ(std::string(e.what()), "other.jsonl:1: a record needs a string \"kind\"");
  }
}

TEST(RecordsReader, SaysTimestampsGoingBackwardsOnceAndReadsThem) {
  auto at = [](int rank, double ts) {
    RequestRecord r = request(rank, 1, 5.0);
    r.ts = ts;
    return to_json_line(r);
  };
  // Rank 1's are in order, rank 0's go back twice.
  RecordSet set = read_string(lines({at(0, 10), at(1, 1), at(0, 9), at(1, 2), at(0, 11), at(0, 3)}),
                              "ts.jsonl");
  EXPECT_EQ(set.requests.size(), 6u);
  ASSERT_EQ(set.warnings.size(), 2u);
  EXPECT_EQ(set.warnings[0],
            "ts.jsonl:3: \"ts\" 9 of rank 0 is before the previous record's 10 (read as it is)");
  EXPECT_EQ(set.warnings[1],
            "ts.jsonl: 1 more records whose ts goes backwards (the last at line 6)");
}

// Hands records over one at a time; counts them and keeps nothing.
struct Counter : RecordHandler {
  std::int64_t requests = 0, windows = 0;
  double e2e_sum = 0;
  std::vector<std::string> warnings;
  void request(const RequestRecord& r) override {
    ++requests;
    e2e_sum += r.e2e_s;
  }
  void window(const TrainWindowRecord&) override { ++windows; }
  void warning(const std::string& w) override { warnings.push_back(w); }
};

TEST(RecordsReader, StreamsFilesLargerThanItsBuffer) {
  // Lines longer than the reader's 256 KiB buffer (a stage name of 3 MB) and many short ones, so
  // that lines cross buffer boundaries; no newline after the last.
  std::string dir = ::testing::TempDir() + "/vxperf-stream-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::string path = dir + "/big.jsonl";
  RequestRecord big = request(0, 1, 2.0);
  big.stages[0].name = std::string(3 << 20, 'x');
  {
    // A line per rank made once and written over and over: made 40,000 times, they took two
    // thirds of the test (41 s under the sanitizers), and the reader reads each line all the same.
    std::vector<std::string> requests, windows;
    for (int rank = 0; rank < 8; ++rank) {
      requests.push_back(to_json_line(request(rank, rank, 1.0)));
      windows.push_back(to_json_line(window(rank, rank * 10, 10, 1.5)));
    }
    std::ofstream out(path);
    for (int i = 0; i < 20000; ++i) out << requests[i % 8] << "\n";
    out << to_json_line(big) << "\n";
    for (int i = 0; i < 20000; ++i) out << windows[i % 8] << "\n";
    out << to_json_line(request(0, 2, 0.5));
  }
  Counter counter;
  stream_record_files({path}, counter);
  EXPECT_EQ(counter.requests, 20002);
  EXPECT_EQ(counter.windows, 20000);
  EXPECT_DOUBLE_EQ(counter.e2e_sum, 20000.0 + 2.0 + 0.5);
  EXPECT_TRUE(counter.warnings.empty());
  // The file read through a stream gives the same.
  std::ifstream in(path);
  Counter again;
  stream_records(in, path, again);
  EXPECT_EQ(again.requests, counter.requests);
  EXPECT_EQ(again.windows, counter.windows);
  std::filesystem::remove_all(dir);
}

TEST(RecordsReader, ReadsTheCrossRankView) {
  TrainWindowRecord w = window(0, 0, 10, 1.5);
  CrossRankView v;
  v.step_s_p50 = {1.5, 1.5, 1.49, 1.51};
  v.excess_s = {0.0, 0.5, 0.01, 0.0};
  v.median_s = 1.5;
  v.min_rank = 2;
  v.max_rank = 3;
  v.stragglers = {1};
  v.straggler_phases = {"data"};
  v.samples_per_s = 2.5;
  v.peak_alloc = std::make_pair(3, std::uint64_t{70} << 30);
  v.exchange_s = 0.0004;
  w.xrank = v;
  std::string line = to_json_line(w);
  Json j = Json::parse(line);
  EXPECT_EQ(j["xrank"]["min"], Json({{"rank", 2}, {"step_s_p50", 1.49}}));
  EXPECT_EQ(j["xrank"]["max"], Json({{"rank", 3}, {"step_s_p50", 1.51}}));
  EXPECT_TRUE(j["xrank"]["tflops"].is_null());
  RecordSet set = read_string(line + "\n");
  ASSERT_EQ(set.windows.size(), 1u);
  ASSERT_TRUE(set.windows[0].xrank);
  EXPECT_EQ(set.windows[0].xrank->stragglers, std::vector<int>{1});
  EXPECT_EQ(to_json_line(set.windows[0]), line);
  Json bad = j;
  bad["xrank"]["stragglers"] = "1";
  EXPECT_THROW(read_string(bad.dump() + "\n"), InputError);
}

}  // namespace
}  // namespace vxperf::analysis
