// Records as JSON lines: the only place a record becomes JSON.
#include <nlohmann/json.hpp>

#include "vxperf/records.h"

namespace vxperf {
namespace {

using Json = nlohmann::ordered_json;

Json optional_number(const std::optional<double>& value) {
  return value ? Json(*value) : Json(nullptr);
}

// Names are valid UTF-8 by the time they reach a record (stage() interns them so); a record made
// by the program itself may still carry a bad byte, written as U+FFFD rather than thrown on.
std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

std::string device_string(int index) { return "cuda:" + std::to_string(index); }

// The fields beyond the reference's, each only when it says something the reference would not
// assume, so that a run that uses none of them writes the reference's records: the peak's source
// when it is not the device table ("env": VIDEOX_PERF_PEAK_TFLOPS, "measured": a probe).
template <class Throughput>
void add_efficiency(Json& j, const Throughput& t) {
  if (t.peak_tflops && t.peak_source != PeakSource::kTable) {
    j["peak_source"] = peak_source_name(t.peak_source);
  }
  if (t.dtype != Dtype::kBf16) j["dtype"] = dtype_name(t.dtype);
  if (t.attn_density != 1.0) j["attn_density"] = t.attn_density;
  if (t.skipped_fwd) j["skipped_fwd"] = *t.skipped_fwd;
  if (t.effective_fwd) j["effective_fwd"] = *t.effective_fwd;
}

// The fields every record starts with.
Json record_head(const char* kind, double ts, int rank, int world_size) {
  Json j;
  j["kind"] = kind;
  j["ts"] = ts;
  j["rank"] = rank;
  j["world_size"] = world_size;
  return j;
}

// The device and its memory peaks, present only when the record was measured on a device.
void add_device(Json& j, const std::optional<int>& device,
                const std::optional<MemoryPeaks>& peaks) {
  if (!device) return;
  j["device"] = device_string(*device);
  j["peak_alloc_bytes"] = peaks ? peaks->allocated : 0;
  j["peak_reserved_bytes"] = peaks ? peaks->reserved : 0;
}

}  // namespace

std::string to_json_line(const RequestRecord& r) {
  Json j = record_head("request", r.ts, r.rank, r.world_size);
  j["req"] = r.req;
  j["warmup"] = r.warmup;
  j["e2e_s"] = r.e2e_s;
  Json stages = Json::object();
  for (const auto& s : r.stages) {
    stages[s.name] = {{"count", s.count},   {"total_ms", s.total_ms}, {"mean_ms", s.mean_ms},
                      {"std_ms", s.std_ms}, {"min_ms", s.min_ms},     {"max_ms", s.max_ms}};
  }
  j["stages"] = std::move(stages);
  if (r.dit) {
    const auto& d = *r.dit;
    j["dit"] = {{"params", d.params},
                {"tokens", d.tokens},
                {"batch", d.batch},
                {"devices", d.devices},
                {"flops_per_fwd", d.flops_per_fwd},
                {"attn_share", d.attn_share},
                {"tflops", d.tflops},
                {"peak_tflops", optional_number(d.peak_tflops)},
                {"mfu", optional_number(d.mfu)}};
    add_efficiency(j["dit"], d);
  } else {
    j["dit"] = nullptr;
  }
  add_device(j, r.device, r.peaks);
  return dump(j);
}

std::string to_json_line(const TrainWindowRecord& r) {
  Json j = record_head("train_window", r.ts, r.rank, r.world_size);
  j["step_first"] = r.step_first;
  j["step_last"] = r.step_last;
  j["steps"] = r.steps;
  j["warmup_excluded"] = r.warmup_excluded;
  j["step_s_p50"] = r.step_s_p50;
  j["step_s_p95"] = r.step_s_p95;
  Json phases = Json::object();
  for (const auto& [name, seconds] : r.phases_s) phases[name] = seconds;
  j["phases_s"] = std::move(phases);
  j["micro_steps"] = r.micro_steps;
  j["overrun_s"] = r.overrun_s;
  add_device(j, r.device, r.peaks);
  if (r.throughput) {
    const auto& t = *r.throughput;
    Json tj = {{"samples_per_s", t.samples_per_s},
               {"samples", t.samples},
               {"wall_s", t.wall_s},
               {"dp", t.dp}};
    if (t.priced) {
      tj["params"] = t.params;
      tj["trainable"] = t.trainable;
      tj["tokens"] = t.tokens;
      tj["priced_steps"] = t.priced_steps;
      tj["priced_s"] = t.priced_s;
      tj["flops_coef"] = t.flops_coef;
      tj["flops_coef_hw"] = t.flops_coef_hw;
      tj["flops_coef_reason"] = t.flops_coef_reason;
      tj["flops_per_step"] = t.flops_per_step;
      tj["attn_share"] = t.attn_share;
      tj["devices"] = t.devices;
      tj["tflops"] = t.tflops;
      tj["hw_tflops"] = t.hw_tflops;
      tj["peak_tflops"] = optional_number(t.peak_tflops);
      tj["mfu"] = optional_number(t.mfu);
      tj["hfu"] = optional_number(t.hfu);
      add_efficiency(tj, t);
    }
    j["throughput"] = std::move(tj);
  } else {
    j["throughput"] = nullptr;
  }
  if (r.eta_s) j["eta_s"] = *r.eta_s;
  if (r.xrank) {
    const CrossRankView& v = *r.xrank;
    auto p50 = [&v](int rank) {
      auto i = static_cast<std::size_t>(rank);
      return i < v.step_s_p50.size() ? v.step_s_p50[i] : 0.0;
    };
    Json x = {{"ranks", v.step_s_p50.size()},
              {"step_s_p50", v.step_s_p50},
              {"median_s", v.median_s},
              {"min", {{"rank", v.min_rank}, {"step_s_p50", p50(v.min_rank)}}},
              {"max", {{"rank", v.max_rank}, {"step_s_p50", p50(v.max_rank)}}},
              {"excess_s", v.excess_s},
              {"stragglers", v.stragglers},
              {"straggler_phases", v.straggler_phases},
              {"samples_per_s", optional_number(v.samples_per_s)},
              {"tflops", optional_number(v.tflops)}};
    if (v.peak_alloc) {
      x["peak_alloc_bytes"] = {{"rank", v.peak_alloc->first}, {"bytes", v.peak_alloc->second}};
    }
    x["exchange_s"] = v.exchange_s;
    j["xrank"] = std::move(x);
  }
  return dump(j);
}

}  // namespace vxperf
