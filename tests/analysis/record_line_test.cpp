// One records line into its record (src/analysis/record_line.h): the fast path (the line's text
// read straight) reads every line vxperf writes, and reads it as the DOM walk does; any other line
// is the DOM walk's, message and all.
#include "analysis/record_line.h"

#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "analysis_records.h"
#include "schema/record_reader.h"
#include "vxperf/records.h"

namespace vxperf::analysis {
namespace {

using Json = nlohmann::ordered_json;
using Got = RecordLineReader::Got;
using namespace test_records;

struct Read {
  Got got;
  bool fast;
  std::string text;  // the record read, as its JSON line, or the problem
};

Read read_line(const std::string& line) {
  static RecordLineReader reader;
  std::string padded = line;
  padded.append(64, '\n');  // simdjson's padding (SIMDJSON_PADDING), readable after the line
  Got got = reader.read(padded.data(), line.size());
  std::string text = got == Got::kRequest  ? to_json_line(reader.request())
                     : got == Got::kWindow ? to_json_line(reader.window())
                                           : reader.problem();
  return {got, reader.fast(), text};
}

// What the DOM walk alone makes of the line (schema/record_reader.h).
std::string dom_line(const std::string& line) {
  Json j = Json::parse(line);
  return j["kind"] == "request" ? to_json_line(internal::read_request(line))
                                : to_json_line(internal::read_window(line));
}

// `line` with the number after `key` (its quoted name and colon) written as `number`: digits a
// JSON library would not write.
std::string edit_number(const std::string& line, const std::string& key, const char* number) {
  auto at = line.find(key);
  EXPECT_NE(at, std::string::npos) << key;
  at += key.size();
  return line.substr(0, at) + number + line.substr(line.find_first_of(",}", at));
}

// The digits of a number after its leading zeros, up to its exponent.
int significant_digits(const std::string& number) {
  int digits = 0;
  bool leading = true;
  for (char c : number) {
    if (c == 'e' || c == 'E') break;
    if (c < '0' || c > '9') continue;
    leading = leading && c == '0';
    if (!leading) ++digits;
  }
  return digits;
}

std::vector<std::string> written_lines() {
  RequestRecord parallel = full_request();
  parallel.parallel = ParallelLayout{};
  parallel.parallel->dp = 2;
  parallel.parallel->cp = 4;
  parallel.parallel->group = 4;
  parallel.parallel->from = {{"cp", "diffusers"}, {"dp", "world"}};
  TrainWindowRecord unpriced = full_window();
  unpriced.throughput->priced = false;
  unpriced.xrank.reset();
  TrainWindowRecord no_device = full_window();
  no_device.device.reset();
  TrainWindowRecord no_throughput = window(0, 1, 2, 0.5);
  no_throughput.throughput.reset();
  return {to_json_line(full_request()),   to_json_line(RequestRecord{}),
          to_json_line(request(1, 2, 3)), to_json_line(parallel),
          to_json_line(full_window()),    to_json_line(TrainWindowRecord{}),
          to_json_line(unpriced),         to_json_line(no_device),
          to_json_line(no_throughput)};
}

TEST(RecordLine, EveryLineTheWriterWritesIsReadOnDemandAsTheDomReadsIt) {
  for (const std::string& line : written_lines()) {
    Read r = read_line(line);
    EXPECT_TRUE(r.fast) << line;
    EXPECT_EQ(r.text, line);
    EXPECT_EQ(r.text, dom_line(line));
  }
}

// The reference module's records (the conformance cases' expectations) are written in the same
// field order: they are read On-Demand too.
TEST(RecordLine, TheReferencesRecordsAreReadOnDemand) {
  int lines = 0, fast = 0;
  for (const auto& entry : std::filesystem::directory_iterator(VXPERF_CASES_DIR)) {
    std::string path = entry.path().string();
    if (path.size() < 15 || path.substr(path.size() - 15) != ".expected.jsonl") continue;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      Read r = read_line(line);
      ASSERT_NE(r.got, Got::kWrong) << path << ": " << r.text;
      ++lines;
      fast += r.fast ? 1 : 0;
      if (!r.fast) ADD_FAILURE() << path << ": read the general way: " << line;
    }
  }
  EXPECT_GT(lines, 100);
  EXPECT_EQ(fast, lines);
}

// Numbers in every form a writer might give one, in a line read On-Demand: each is the double the
// DOM walk reads (the fast path reads plain ones eight digits at a time, converting them itself or
// through std::from_chars, and leaves the rest to simdjson's parser), bit for bit, and the line stays on the fast path unless it has more
// digits than a double needs.
TEST(RecordLine, EveryNumberIsTheDoubleTheDomReads) {
  const std::string window_line = to_json_line(full_window());
  std::vector<std::string> numbers = {
      "0", "-0", "0.0", "-0.0", "1", "-1", "7.5", "0.1", "0.30000000000000004", "12345678",
      "123456789", "1234567890123456", "12345678901234567", "1234567890123456789",
      "0.12345678", "0.123456789", "0.1234567890123456", "0.12345678901234567",
      "0.1234567890123456789", "1.234567890123456789", "12345678.87654321", "9007199254740993",
      "9007199254740993.5", "4503599627370497.5", "0.000001", "0.00000000000000000001",
      "1e-05", "2.5E+3", "-3.0e2", "1.7976931348623157e308", "5e-324", "123.456e-7",
      "0.0000000000000000000000000000001234", "99999999999999999999", "18446744073709551615",
      "0.999999999999999999999"};
  std::mt19937_64 rng(29);
  std::uniform_real_distribution<double> unit(0, 1);
  for (int i = 0; i < 200; ++i) {
    double v = unit(rng) * std::pow(10.0, static_cast<int>(rng() % 24) - 8);
    if (rng() % 2) v = -v;
    char text[64];
    auto end = std::to_chars(text, text + sizeof text, v).ptr;  // the shortest form
    numbers.emplace_back(text, end);
    for (const char* format : {"%.17g", "%.16g", "%.15g", "%.6f", "%.12f"}) {
      std::snprintf(text, sizeof text, format, v);
      numbers.emplace_back(text);
    }
  }
  static RecordLineReader reader;
  int refused = 0;
  for (const std::string& number : numbers) {
    std::string line = edit_number(window_line, "\"step_s_p50\":", number.c_str());
    std::string padded = line + std::string(64, '\n');
    Got got = reader.read(padded.data(), line.size());
    std::optional<TrainWindowRecord> dom;
    try {
      dom = internal::read_window(line);
    } catch (const std::exception&) {
      // An integer past uint64: the DOM parser refuses the line, and so does the reader.
      EXPECT_EQ(got, Got::kNotJson) << number;
      ++refused;
      continue;
    }
    ASSERT_EQ(got, Got::kWindow) << number;
    double read = reader.window().step_s_p50;
    EXPECT_EQ(std::memcmp(&read, &dom->step_s_p50, sizeof read), 0)
        << number << " read as " << read << ", not " << dom->step_s_p50;
    EXPECT_EQ(to_json_line(reader.window()), to_json_line(*dom)) << number;
    // 18 significant digits or fewer (a double needs 17): read on the fast path.
    if (significant_digits(number) <= 18) EXPECT_TRUE(reader.fast()) << number;
  }
  EXPECT_EQ(refused, 1);  // 99999999999999999999, past uint64
}

// Lines the fast path cannot vouch for: each is the DOM walk's (the same record, or its message).
TEST(RecordLine, WhatTheFastPathCannotVouchForIsTheDomWalks) {
  const std::string request_line = to_json_line(full_request());
  const std::string window_line = to_json_line(full_window());
  auto edit = [](const std::string& line, auto&& change) {
    Json j = Json::parse(line);
    change(j);
    return j.dump();
  };
  std::vector<std::string> records = {
      // fields out of the writer's order
      edit(request_line, [](Json& j) { j.erase("e2e_s"), j["e2e_s"] = 9.5; }),
      // a field this version does not know, at the end and in a nested object
      edit(request_line,
           [](Json& j) {
             j["future_field"] = {1, 2};
           }),
      edit(window_line, [](Json& j) { j["throughput"]["future"] = "x"; }),
      // nulls for optional fields
      edit(window_line, [](Json& j) { j["eta_s"] = nullptr, j["xrank"] = nullptr; }),
      // an integer written as a float, a key with an escape, a repeated key
      edit(request_line, [](Json& j) { j["req"] = 41.0; }),
      // more digits than a double holds, after leading zeros (simdjson 3.0's On-Demand parser
      // reads 0.029506054089493681120363247205 as 4.9e-12; its DOM parser reads it right)
      edit_number(window_line, "\"hfu\":", "0.029506054089493681120363247205"),
      // integers near and past int64's range where a double is read (On-Demand reads a big
      // integer as a double where the DOM parser refuses it: the DOM's way is kept)
      edit(request_line, [](Json& j) { j["e2e_s"] = 18446744073709551615ull; }),
      edit(request_line, [](Json& j) { j["e2e_s"] = -9223372036854775807ll; }),
      R"({"kind":"request","ts":1,"rank":0,"world_size":1,"req":1,"warmup":false,"e2e_s":2,)"
      R"("stages":{"trans\u0066ormer":{"count":1,"total_ms":5}},"dit":null})",
      R"({"kind":"request","ts":1,"rank":0,"rank":1,"world_size":1,"req":1,"warmup":false,)"
      R"("e2e_s":2,"stages":{},"dit":null})",
      // "kind" not first
      R"({"ts":1,"kind":"request","req":1,"warmup":false,"e2e_s":2,"stages":{},"dit":null})",
  };
  for (const std::string& line : records) {
    Read r = read_line(line);
    ASSERT_NE(r.got, Got::kWrong) << line << ": " << r.text;
    EXPECT_EQ(r.text, dom_line(line)) << line;
  }
  // Malformed: the DOM walk's message, never a record.
  const std::vector<std::pair<std::string, std::string>> wrong = {
      {edit(window_line, [](Json& j) { j["throughput"]["dp"] = -1; }), "\"dp\" is out of range"},
      {edit(window_line, [](Json& j) { j["xrank"]["stragglers"] = {"one"}; }),
       "\"xrank.stragglers\" must be an integer"},
      {edit(request_line, [](Json& j) { j["req"] = 1.5; }), "\"req\" must be an integer"},
      {edit(request_line, [](Json& j) { j["req"] = 9223372036854775808.0; }),
       "\"req\" must be an integer"},
      {edit(request_line, [](Json& j) { j["kind"] = "mystery"; }),
       "unknown record kind \"mystery\" (expected request, train_window or train_end)"},
      {R"({"ts":1})", "a record needs a string \"kind\""},
      {"[1,2]", "a record must be a JSON object"},
  };
  for (const auto& [line, message] : wrong) {
    Read r = read_line(line);
    EXPECT_EQ(r.got, Got::kWrong) << line;
    EXPECT_FALSE(r.fast);
    EXPECT_EQ(r.text, message) << line;
  }
  // (37025000000000000005, past uint64: found by the records fuzzer's fast-path check)
  const std::vector<std::string> not_json = {request_line.substr(0, 40), request_line + "x",
                                             edit_number(window_line, "\"step_s_p50\":",
                                                         "37025000000000000005"),
                                             R"({"kind":"request","ts":1 "rank":0})", "{"};
  for (const std::string& line : not_json) {
    EXPECT_EQ(read_line(line).got, Got::kNotJson) << line;
  }
}

// The fast path reads the line's text itself (analysis/line_object.h): the spacing writers use
// (Python's ", " and ": ", none) and other JSON whitespace read as the DOM reads them; bytes it
// cannot vouch for (escapes, bytes past ASCII, control characters) are the DOM walk's, and what
// is not JSON stays not JSON.
TEST(RecordLine, TheTextPathReadsAsTheDomWhateverTheSpacing) {
  const std::string window_line = to_json_line(full_window());
  const Json j = Json::parse(window_line);
  // Python's json.dumps spacing, and JSON's other whitespace around every token.
  std::string spaced = j.dump();
  std::string python;
  bool in_string = false;
  for (std::size_t i = 0; i < spaced.size(); ++i) {
    const char c = spaced[i];
    python += c;
    if (c == '"' && (i == 0 || spaced[i - 1] != '\\')) in_string = !in_string;
    if (!in_string && (c == ',' || c == ':')) python += ' ';
  }
  std::string loose;
  in_string = false;
  for (std::size_t i = 0; i < spaced.size(); ++i) {
    const char c = spaced[i];
    if (c == '"' && (i == 0 || spaced[i - 1] != '\\')) in_string = !in_string;
    if (!in_string && (c == ',' || c == ':' || c == '{' || c == '}' || c == '[' || c == ']')) {
      loose += std::string(" \t") + c + "\r ";
    } else {
      loose += c;
    }
  }
  for (const std::string& line : {python, loose, " \t" + python + " \r"}) {
    Read r = read_line(line);
    ASSERT_EQ(r.got, Got::kWindow) << line;
    EXPECT_TRUE(r.fast) << line;
    EXPECT_EQ(r.text, window_line) << line;
  }
  // Strings it leaves to the DOM walk: the same record, read the general way.
  auto with_run_id = [&](const std::string& id) {
    Json k = j;
    k["run_id"] = id;
    return k.dump(-1, ' ', false, Json::error_handler_t::strict);
  };
  for (const std::string& line :
       {with_run_id("caf\xc3\xa9"), with_run_id("a\"b"), with_run_id("tab\there")}) {
    Read r = read_line(line);
    ASSERT_EQ(r.got, Got::kWindow) << line;
    EXPECT_FALSE(r.fast) << line;
    EXPECT_EQ(r.text, dom_line(line)) << line;
  }
  // Not JSON, though the fields before the fault read well: never a record.
  std::string raw_tab = with_run_id("x");
  raw_tab.replace(raw_tab.find("\"x\""), 3, "\"\t\"");
  std::string bad_utf8 = with_run_id("x");
  bad_utf8.replace(bad_utf8.find("\"x\""), 3, "\"\xc3\"");
  std::string trailing_comma = window_line;
  trailing_comma.insert(trailing_comma.size() - 1, ",");
  std::string bad_literal = edit_number(window_line, "\"eta_s\":", "nul");
  std::string bad_number = edit_number(window_line, "\"step_s_p50\":", "01.5");
  // Torn just inside an object or an array: nothing read past the line's end.
  ASSERT_NE(window_line.find("\"phases_s\":{"), std::string::npos);
  ASSERT_NE(window_line.find("\"stragglers\":["), std::string::npos);
  const std::string torn_object = window_line.substr(0, window_line.find("\"phases_s\":{") + 12);
  const std::string torn_array = window_line.substr(0, window_line.find("\"stragglers\":[") + 14);
  for (const std::string& line : {raw_tab, bad_utf8, trailing_comma, bad_literal, bad_number,
                                  window_line + "}", window_line + " 1", torn_object, torn_array}) {
    EXPECT_EQ(read_line(line).got, Got::kNotJson) << line;
  }
}

}  // namespace
}  // namespace vxperf::analysis
