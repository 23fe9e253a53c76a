// Records reader: the JSON lines the records file holds, back into the record structs.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <new>

#include "schema/json_fields.h"
#include "vxperf/analysis.h"

namespace vxperf::analysis {
namespace {

using internal::Json;

// The record fields, through the shared accessor; a wrong field throws FieldError, which
// read_records turns into an InputError naming the file and line.
struct Fields : internal::JsonFields {
  using JsonFields::JsonFields;

  int small_int(const char* field, std::int64_t fallback) const {
    std::int64_t v = integer(field, fallback);
    if (v < 0 || v > 1000000) fail(std::string("\"") + field + "\" is out of range");
    return static_cast<int>(v);
  }
  std::uint64_t bytes(const char* field) const {
    return static_cast<std::uint64_t>(count(field, 0));
  }
  Fields inner(const Json& v) const { return Fields(v); }

  // The fields beyond the reference's (record_json.cpp); absent ones keep their defaults.
  template <class Throughput>
  void efficiency(Throughput& t) const {
    std::string source = string("peak_source", "table");
    if (source == "env") {
      t.peak_source = PeakSource::kEnv;
    } else if (source == "measured") {
      t.peak_source = PeakSource::kMeasured;
    } else if (source != "table") {
      fail("\"peak_source\" must be table, env or measured");
    }
    if (has("dtype")) {
      auto dtype = parse_dtype(string("dtype"));
      if (!dtype) fail("\"dtype\" is not a known dtype");
      t.dtype = *dtype;
    }
    t.attn_density = number("attn_density", 1.0);
    if (has("skipped_fwd")) t.skipped_fwd = count("skipped_fwd", 0);
    t.effective_fwd = optional_number("effective_fwd");
  }

  // "device": "cuda:N" and the two peak counters that come with it.
  void device(std::optional<int>& index, std::optional<MemoryPeaks>& peaks) const {
    std::string d = string("device");
    if (d.empty()) return;
    auto colon = d.rfind(':');
    int n = 0;
    if (colon != std::string::npos) {
      try {
        n = std::stoi(d.substr(colon + 1));
      } catch (const std::exception&) {
        n = 0;
      }
    }
    index = n;
    peaks = MemoryPeaks{bytes("peak_alloc_bytes"), bytes("peak_reserved_bytes")};
  }
};

RequestRecord parse_request(const Fields& f) {
  RequestRecord r;
  r.ts = f.number("ts", 0);
  r.rank = f.small_int("rank", 0);
  r.world_size = f.small_int("world_size", 1);
  r.req = f.integer("req", 0);
  r.warmup = f.boolean("warmup", false);
  r.e2e_s = f.number("e2e_s");
  const Json& stages = f.object("stages");
  for (auto it = stages.begin(); it != stages.end(); ++it) {
    if (!it.value().is_object()) f.fail("stage \"" + it.key() + "\" must be an object");
    Fields s = f.inner(it.value());
    StageSummary stage;
    stage.name = it.key();
    stage.count = s.integer("count", 0);
    stage.total_ms = s.number("total_ms");
    stage.mean_ms = s.number("mean_ms", 0);
    stage.std_ms = s.number("std_ms", 0);
    stage.min_ms = s.number("min_ms", 0);
    stage.max_ms = s.number("max_ms", 0);
    r.stages.push_back(std::move(stage));
  }
  if (const Json* dit = f.find("dit")) {
    if (!dit->is_object()) f.fail("\"dit\" must be an object or null");
    Fields d = f.inner(*dit);
    DitThroughput t;
    t.params = d.integer("params", 0);
    t.tokens = d.integer("tokens", 0);
    t.batch = d.integer("batch", 1);
    t.devices = d.small_int("devices", 1);
    t.flops_per_fwd = d.number("flops_per_fwd", 0);
    t.attn_share = d.number("attn_share", 0);
    t.tflops = d.number("tflops", 0);
    t.peak_tflops = d.optional_number("peak_tflops");
    t.mfu = d.optional_number("mfu");
    d.efficiency(t);
    r.dit = t;
  }
  f.device(r.device, r.peaks);
  return r;
}

// Rank 0's cross-rank view (VIDEOX_PERF_XRANK=1).
CrossRankView parse_xrank(const Fields& f, const Json& x) {
  if (!x.is_object()) f.fail("\"xrank\" must be an object or null");
  Fields v = f.inner(x);
  auto array = [&v](const char* field) -> const Json& {
    static const Json kEmpty = Json::array();
    const Json* a = v.find(field);
    if (a == nullptr) return kEmpty;
    if (!a->is_array()) v.fail(std::string("\"xrank.") + field + "\" must be an array");
    return *a;
  };
  auto rank_of = [&v](const char* field) {
    const Json* o = v.find(field);
    if (o == nullptr) return 0;
    if (!o->is_object()) v.fail(std::string("\"xrank.") + field + "\" must be an object");
    return v.inner(*o).small_int("rank", 0);
  };
  CrossRankView out;
  for (const auto& n : array("step_s_p50")) out.step_s_p50.push_back(Fields::as_number(n, "xrank"));
  for (const auto& n : array("excess_s")) out.excess_s.push_back(Fields::as_number(n, "xrank"));
  out.median_s = v.number("median_s", 0);
  out.min_rank = rank_of("min");
  out.max_rank = rank_of("max");
  for (const auto& n : array("stragglers")) {
    std::int64_t rank = Fields::as_integer(n, "xrank.stragglers");
    if (rank < 0 || rank > 1000000) v.fail("\"xrank.stragglers\" holds a rank out of range");
    out.stragglers.push_back(static_cast<int>(rank));
  }
  for (const auto& n : array("straggler_phases")) {
    if (!n.is_string()) v.fail("\"xrank.straggler_phases\" must hold strings");
    out.straggler_phases.push_back(n.get<std::string>());
  }
  out.samples_per_s = v.optional_number("samples_per_s");
  out.tflops = v.optional_number("tflops");
  if (const Json* peak = v.find("peak_alloc_bytes")) {
    if (!peak->is_object()) v.fail("\"xrank.peak_alloc_bytes\" must be an object");
    Fields p = v.inner(*peak);
    out.peak_alloc = std::make_pair(p.small_int("rank", 0), p.bytes("bytes"));
  }
  out.exchange_s = v.number("exchange_s", 0);
  return out;
}

TrainWindowRecord parse_window(const Fields& f) {
  TrainWindowRecord r;
  r.ts = f.number("ts", 0);
  r.rank = f.small_int("rank", 0);
  r.world_size = f.small_int("world_size", 1);
  r.step_first = f.integer("step_first", 0);
  r.step_last = f.integer("step_last", 0);
  r.steps = f.integer("steps");
  if (r.steps < 0) f.fail("\"steps\" must not be negative");
  r.warmup_excluded = f.integer("warmup_excluded", 0);
  r.step_s_p50 = f.number("step_s_p50");
  r.step_s_p95 = f.number("step_s_p95");
  const Json& phases = f.object("phases_s");
  for (auto it = phases.begin(); it != phases.end(); ++it) {
    r.phases_s.emplace_back(it.key(), Fields::as_number(it.value(), it.key()));
  }
  r.micro_steps = f.number("micro_steps", 1);
  r.overrun_s = f.number("overrun_s", 0);
  f.device(r.device, r.peaks);
  if (const Json* tp = f.find("throughput")) {
    if (!tp->is_object()) f.fail("\"throughput\" must be an object or null");
    Fields t = f.inner(*tp);
    TrainThroughput out;
    out.samples_per_s = t.number("samples_per_s", 0);
    out.samples = t.number("samples", 0);
    out.wall_s = t.number("wall_s", 0);
    out.dp = t.small_int("dp", 1);
    out.priced = t.find("flops_per_step") != nullptr;
    if (out.priced) {
      out.params = t.integer("params", 0);
      out.trainable = t.integer("trainable", out.params);
      out.tokens = t.number("tokens", 0);
      out.priced_steps = t.integer("priced_steps", 0);
      out.priced_s = t.number("priced_s", 0);
      out.flops_coef = t.number("flops_coef", 0);
      out.flops_coef_hw = t.number("flops_coef_hw", 0);
      out.flops_coef_reason = t.string("flops_coef_reason");
      out.flops_per_step = t.number("flops_per_step");
      out.attn_share = t.number("attn_share", 0);
      out.devices = t.small_int("devices", 1);
      out.tflops = t.number("tflops", 0);
      out.hw_tflops = t.number("hw_tflops", 0);
      out.peak_tflops = t.optional_number("peak_tflops");
      out.mfu = t.optional_number("mfu");
      out.hfu = t.optional_number("hfu");
      t.efficiency(out);
    }
    r.throughput = out;
  }
  r.eta_s = f.optional_number("eta_s");
  if (const Json* x = f.find("xrank")) r.xrank = parse_xrank(f, *x);
  return r;
}

bool blank(const std::string& text) { return text.find_first_not_of(" \t\r") == std::string::npos; }

}  // namespace

void read_records(std::istream& in, const std::string& name, RecordSet& into) {
  std::string text;
  int line = 0;
  try {
    internal::ThrowOnBadRead throw_on_bad_read(in);  // a line too long for memory is said as such
    // One line at a time: a file far larger than memory fails on its records, not its text.
    // `line` is the line being read or parsed, so that running out of memory names it.
    while (++line, std::getline(in, text)) {
      // getline stops at the end without a newline only on a last line cut short.
      bool complete = !in.eof();
      if (blank(text)) continue;
      Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (json.is_discarded()) {
        // Only a last line without its newline can be a writer that died mid-write.
        if (!complete) {
          into.warnings.push_back(name + ":" + std::to_string(line) +
                                  ": torn last line skipped (not complete JSON)");
          continue;
        }
        throw InputError(name, line, "not valid JSON");
      }
      if (!json.is_object()) throw InputError(name, line, "a record must be a JSON object");
      Fields f(json);
      try {
        auto kind = json.find("kind");
        if (kind == json.end() || !kind->is_string()) f.fail("a record needs a string \"kind\"");
        const auto& k = kind->get_ref<const std::string&>();
        if (k == "request") {
          into.requests.push_back(parse_request(f));
        } else if (k == "train_window") {
          into.windows.push_back(parse_window(f));
        } else {
          f.fail("unknown record kind \"" + k + "\" (expected request or train_window)");
        }
      } catch (const internal::FieldError& e) {
        throw InputError(name, line, e.what());
      }
    }
  } catch (const std::bad_alloc&) {
    text = std::string();  // give back the line before saying so
    throw InputError(name, line,
                     "out of memory after " +
                         std::to_string(into.requests.size() + into.windows.size()) +
                         " records: too much to summarize at once (split the input)");
  }
}

RecordSet read_record_files(const std::vector<std::string>& paths) {
  RecordSet set;
  for (const auto& path : paths) {
    if (path == "-") {
      read_records(std::cin, "<stdin>", set);
      continue;
    }
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
      throw InputError(path, 0, "is a directory, not a records file");
    }
    std::ifstream file(path);
    if (!file) throw InputError(path, 0, std::string("cannot open: ") + std::strerror(errno));
    read_records(file, path, set);
    if (file.bad()) throw InputError(path, 0, "read error");
  }
  return set;
}

}  // namespace vxperf::analysis
