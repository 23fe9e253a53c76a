// The field tables (src/schema/record_fields.h): one table per record writes its JSON line, reads
// it back and walks it for a visitor; what is written reads back to the same line.
#include "schema/record_fields.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis_records.h"
#include "schema/json_dom.h"
#include "schema/json_visitor.h"
#include "schema/record_reader.h"
#include "schema/record_writer.h"
#include "schema/show_walk.h"
#include "vxperf/record_walk.h"
#include "vxperf/records.h"

namespace vxperf {
namespace {

using Json = internal::Json;

using analysis::test_records::full_request;
using analysis::test_records::full_window;

TEST(RecordFields, ARequestLineReadsBackToTheSameLine) {
  for (RequestRecord r : {full_request(), RequestRecord{}}) {
    std::string line = to_json_line(r);
    RequestRecord back = internal::read_request(line);
    EXPECT_EQ(to_json_line(back), line);
  }
}

TEST(RecordFields, AWindowLineReadsBackToTheSameLine) {
  TrainWindowRecord unpriced = full_window();
  unpriced.throughput->priced = false;
  unpriced.xrank.reset();
  unpriced.device.reset();
  for (const TrainWindowRecord& w : {full_window(), unpriced, TrainWindowRecord{}}) {
    std::string line = to_json_line(w);
    TrainWindowRecord back = internal::read_window(line);
    EXPECT_EQ(to_json_line(back), line);
  }
}

TEST(RecordFields, TheFieldsBeyondTheReferenceAppearOnlyWhenTheySaySomething) {
  RequestRecord r = full_request();
  r.dit->peak_source = PeakSource::kTable;
  r.dit->dtype = Dtype::kBf16;
  r.dit->attn_density = 1.0;
  r.dit->skipped_fwd.reset();
  r.dit->effective_fwd.reset();
  Json dit = Json::parse(to_json_line(r))["dit"];
  for (const char* key : {"peak_source", "dtype", "attn_density", "skipped_fwd", "effective_fwd"}) {
    EXPECT_FALSE(dit.contains(key)) << key;
  }
  // A measured peak is said only with a peak.
  r.dit->peak_source = PeakSource::kMeasured;
  r.dit->peak_tflops.reset();
  EXPECT_FALSE(Json::parse(to_json_line(r))["dit"].contains("peak_source"));
}

// #28's fields: a shared interval, the host's energy, the videos and energy per video, each only
// when it says something; read back as written.
TEST(RecordFields, EnergySharedVideosAndHostEnergyOnlyWhenTheySaySomething) {
  RequestRecord r = full_request();
  Json j = Json::parse(to_json_line(r));
  EXPECT_EQ(j["energy_shared"], true);
  EXPECT_EQ(j["energy_from"], "power_x_time");
  EXPECT_DOUBLE_EQ(j["cpu_energy_j"].get<double>(), 40.25);
  EXPECT_EQ(j["videos"], 4);
  EXPECT_DOUBLE_EQ(j["energy_j_per_video"].get<double>(), 875.5 / 4);
  RequestRecord back = internal::read_request(j.dump());
  EXPECT_TRUE(back.readings->energy_shared);
  EXPECT_EQ(back.videos, 4);
  EXPECT_DOUBLE_EQ(*back.readings->cpu_energy_j, 40.25);
  RequestRecord plain = analysis::test_records::request(0, 1, 2.0);
  Json p = Json::parse(to_json_line(plain));
  for (const char* key : {"energy_shared", "cpu_energy_j", "videos", "energy_j_per_video"}) {
    EXPECT_FALSE(p.contains(key)) << key;
  }
  EXPECT_FALSE(internal::read_request(p.dump()).readings->energy_shared);
}

// #50: a request's denoising steps, written only when said and read back as written; a count
// below 0 is refused as any count is.
TEST(RecordFields, DenoisingStepsOnlyWhenSaid) {
  RequestRecord r = analysis::test_records::request(0, 1, 2.0);
  EXPECT_FALSE(Json::parse(to_json_line(r)).contains("denoising_steps"));
  EXPECT_FALSE(internal::read_request(to_json_line(r)).denoising_steps);
  r.denoising_steps = 30;
  Json j = Json::parse(to_json_line(r));
  EXPECT_EQ(j["denoising_steps"], 30);
  EXPECT_EQ(internal::read_request(j.dump()).denoising_steps, 30);
  j["denoising_steps"] = -1;
  EXPECT_ANY_THROW(internal::read_request(j.dump()));
}

// Keys as a visitor is walked over them, for the order of the walk.
struct Keys : RecordVisitor {
  std::vector<std::string> keys;
  int depth = 0;
  void begin_object(std::string_view k) override { add(k), ++depth; }
  void end_object() override { --depth; }
  void begin_array(std::string_view k) override { add(k), ++depth; }
  void end_array() override { --depth; }
  void null(std::string_view k) override { add(k); }
  void boolean(std::string_view k, bool) override { add(k); }
  void integer(std::string_view k, std::int64_t) override { add(k); }
  void unsigned_integer(std::string_view k, std::uint64_t) override { add(k); }
  void number(std::string_view k, double) override { add(k); }
  void string(std::string_view k, std::string_view) override { add(k); }
  void add(std::string_view k) {
    if (depth == 1) keys.emplace_back(k);
  }
};

TEST(RecordFields, TheWalkIsTheJsonLinesOrder) {
  Keys walked;
  walk_record(full_window(), walked);
  std::vector<std::string> in_line;
  Json line = Json::parse(to_json_line(full_window()));
  for (const auto& item : line.items()) in_line.push_back(item.key());
  EXPECT_EQ(walked.keys, in_line);
  EXPECT_EQ(walked.depth, 0);
}

TEST(RecordFields, TheShownWalkSeesWhatTheLineWouldSay) {
  // Peaks without a device: the readings the record holds are seen (the line carries them only
  // with a device). An unpriced window's MFU is absent, as in the line: the Prometheus series
  // follow what the walk sees.
  TrainWindowRecord w = full_window();
  w.device.reset();
  w.throughput->priced = false;
  std::vector<std::string> present, absent;
  internal::walk_shown(w, [&](const char* object, const Show& show,
                              const internal::ShownValue& v) {
    (v.number || v.strings ? present : absent).push_back(std::string(object) + "." + show.key);
  });
  auto has = [](const std::vector<std::string>& list, const std::string& k) {
    return std::find(list.begin(), list.end(), k) != list.end();
  };
  EXPECT_TRUE(has(present, ".peak_alloc_bytes"));
  EXPECT_TRUE(has(present, "throughput.samples_per_s"));
  EXPECT_TRUE(has(absent, "throughput.mfu"));
  EXPECT_FALSE(Json::parse(to_json_line(w))["throughput"].contains("mfu"));
}

TEST(RecordFields, AWrongFieldIsNamed) {
  Json j = Json::parse(to_json_line(full_window()));
  j["throughput"]["dp"] = -1;
  try {
    internal::read_window(j.dump());
    FAIL() << "read a negative dp";
  } catch (const internal::FieldError& e) {
    EXPECT_STREQ(e.what(), "\"dp\" is out of range");
  }
  j = Json::parse(to_json_line(full_window()));
  j["xrank"]["stragglers"] = Json::array({"one"});
  try {
    internal::read_window(j.dump());
    FAIL() << "read a straggler named by a string";
  } catch (const internal::FieldError& e) {
    EXPECT_STREQ(e.what(), "\"xrank.stragglers\" must be an integer");
  }
}

TEST(RecordFields, TheModelDescriptionReadsBackAsDeclared) {
  ModelInfo m;
  m.params = 1000;
  m.trainable = 10;
  m.checkpointing = true;
  m.attention = AttentionWidths{64, 32, 4};
  m.text_tokens = 512;
  m.dtype = Dtype::kFp16;
  m.attn_density = 0.5;
  internal::JsonVisitor out;
  internal::Writer writer(out);
  out.begin_object({});
  describe(writer, m, /*training=*/true);
  out.end_object();
  ModelInfo back;
  simdjson::dom::parser parser;
  internal::DomFields fields{parser.parse(out.json().dump()).get_object().value()};
  fields.read(back, /*training=*/true);
  EXPECT_EQ(back.params, 1000);
  EXPECT_EQ(back.trainable, 10);
  EXPECT_TRUE(back.checkpointing);
  ASSERT_TRUE(back.attention);
  EXPECT_EQ(back.attention->cross, 32);
  EXPECT_EQ(back.text_tokens, 512);
  EXPECT_EQ(back.dtype, Dtype::kFp16);
  EXPECT_EQ(back.attn_density, 0.5);
}

// A record's "device" to its index: digits alone read directly, anything else as std::stoi
// reads it (a sign, leading blanks, digits before other text), 0 where it reads none.
TEST(RecordFields, ADevicesIndexIsItsDigitsAfterTheColon) {
  const std::vector<std::pair<std::string, int>> cases = {
      {"cuda:3", 3},          {"cuda:12", 12}, {"cuda:007", 7}, {"cuda", 0},
      {"cuda:", 0},           {"cuda:x", 0},   {"cuda: 3", 3},  {"cuda:+4", 4},
      {"cuda:-1", -1},        {"cuda:3x", 3},  {"a:b:5", 5},    {"cuda:999999999", 999999999},
      {"cuda:99999999999", 0}};
  for (const auto& [device, index] : cases) {
    EXPECT_EQ(internal::device_index_of(device), index) << device;
  }
}

}  // namespace
}  // namespace vxperf
