// Replays every event script in tests/conformance/cases and checks the output against what the
// reference module produced for it: records field by field (except `ts`, numbers within 1e-9
// relative), log lines that start with "[Perf][rank" exactly and in order. Where the reference is
// wrong on a case (make_truth.py says where), against the case's truth files instead. vxperf's
// own record kinds (the training's final record, "train_end") are not the reference's: set aside,
// and held to their place (after every other record of the script).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "vxperf/event_script.h"
#include "vxperf/testing.h"

namespace vxperf {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

std::vector<std::string> read_lines(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(line);
  }
  return lines;
}

void compare(const Json& expected, const Json& actual, const std::string& path,
             std::vector<std::string>& problems) {
  if (expected.is_boolean() || actual.is_boolean()) {
    if (expected != actual)
      problems.push_back(path + ": expected " + expected.dump() + ", got " + actual.dump());
    return;
  }
  if (expected.is_number() && actual.is_number()) {
    double a = expected.get<double>();
    double b = actual.get<double>();
    if (std::isnan(a) && std::isnan(b)) return;
    double tolerance = std::max(1e-9 * std::max(std::fabs(a), std::fabs(b)), 1e-12);
    if (std::fabs(a - b) > tolerance) {
      problems.push_back(path + ": expected " + expected.dump() + ", got " + actual.dump());
    }
    return;
  }
  if (expected.is_object() && actual.is_object()) {
    for (auto it = expected.begin(); it != expected.end(); ++it) {
      if (path.empty() && it.key() == "ts") continue;
      if (!actual.contains(it.key())) {
        problems.push_back(path + "." + it.key() + ": missing");
      } else {
        compare(it.value(), actual.at(it.key()), path + "." + it.key(), problems);
      }
    }
    for (auto it = actual.begin(); it != actual.end(); ++it) {
      if (expected.contains(it.key())) continue;
      // vxperf's additions to a reference record here: where the MFU's peak came from, said
      // when VIDEOX_PERF_PEAK_TFLOPS gave it, a request's time to its first denoising step and a
      // window's ledger (the reference writes none of them).
      if (it.key() == "peak_source" && it.value() == "env") continue;
      if (path.empty() && (it.key() == "first_step_s" || it.key() == "ledger")) continue;
      problems.push_back(path + "." + it.key() + ": unexpected");
    }
    return;
  }
  if (expected.is_array() && actual.is_array()) {
    if (expected.size() != actual.size()) {
      problems.push_back(path + ": expected " + std::to_string(expected.size()) + " items");
      return;
    }
    for (std::size_t i = 0; i < expected.size(); ++i) {
      compare(expected[i], actual[i], path + "[" + std::to_string(i) + "]", problems);
    }
    return;
  }
  if (expected != actual)
    problems.push_back(path + ": expected " + expected.dump() + ", got " + actual.dump());
}

// Record kinds the reference never writes.
bool vxperf_own_kind(const Json& record) {
  return record.is_object() && record.value("kind", "") == "train_end";
}

std::vector<std::string> metric_lines(const std::vector<std::string>& lines) {
  std::vector<std::string> out;
  for (const auto& l : lines) {
    if (l.rfind("[Perf][rank", 0) == 0) out.push_back(l);
  }
  return out;
}

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(VXPERF_CASES_DIR)) {
    std::string name = entry.path().filename().string();
    const std::string suffix = ".events.jsonl";
    if (name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      names.push_back(name.substr(0, name.size() - suffix.size()));
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

class Conformance : public ::testing::TestWithParam<std::string> {};

TEST_P(Conformance, MatchesTheReference) {
  fs::path dir = VXPERF_CASES_DIR;
  std::string stem = GetParam();
  std::ifstream script(dir / (stem + ".events.jsonl"));
  ASSERT_TRUE(script);
  testing::MemoryOutput output;
  replay(script, output.log_fn(), output);

  // The reference's output, or its truth where the reference is wrong on this case.
  std::string expected_kind = fs::exists(dir / (stem + ".truth.jsonl")) ? ".truth" : ".expected";
  auto expected_records = read_lines(dir / (stem + expected_kind + ".jsonl"));
  std::vector<std::string> actual_records;
  std::size_t own = 0;
  for (const auto& line : output.all_records()) {
    if (vxperf_own_kind(Json::parse(line))) {
      ++own;
      continue;
    }
    EXPECT_EQ(own, 0u) << "a record after the training's final record: " << line;
    actual_records.push_back(line);
  }
  // One at the training's end, where there was training.
  bool trained = false;
  for (const auto& line : expected_records) {
    trained = trained || Json::parse(line).value("kind", "") == "train_window";
  }
  EXPECT_EQ(own, trained ? 1u : 0u);
  ASSERT_EQ(actual_records.size(), expected_records.size());
  for (std::size_t i = 0; i < expected_records.size(); ++i) {
    std::vector<std::string> problems;
    compare(Json::parse(expected_records[i]), Json::parse(actual_records[i]), "", problems);
    EXPECT_TRUE(problems.empty()) << "record " << i << problems.front() << "\n  "
                                  << actual_records[i];
  }
  auto expected_log = metric_lines(read_lines(dir / (stem + expected_kind + ".log")));
  auto actual_log = metric_lines(output.logs());
  ASSERT_EQ(actual_log.size(), expected_log.size());
  for (std::size_t i = 0; i < expected_log.size(); ++i) {
    EXPECT_EQ(actual_log[i], expected_log[i]) << "log line " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, Conformance, ::testing::ValuesIn(case_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace vxperf
