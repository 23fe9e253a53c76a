// The only place records become JSON and log lines.
#include "vxperf/records.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace vxperf {
namespace {

using Json = nlohmann::ordered_json;

std::string printf_string(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string printf_string(const char* format, ...) {
  char small[256];
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(small, sizeof small, format, args);
  va_end(args);
  std::string out;
  if (n < 0) {
    va_end(copy);
    return out;
  }
  if (static_cast<std::size_t>(n) < sizeof small) {
    out.assign(small, static_cast<std::size_t>(n));
  } else {
    out.resize(static_cast<std::size_t>(n) + 1);
    std::vsnprintf(out.data(), out.size(), format, copy);
    out.resize(static_cast<std::size_t>(n));
  }
  va_end(copy);
  return out;
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

Json optional_number(const std::optional<double>& value) {
  return value ? Json(*value) : Json(nullptr);
}

std::string device_string(int index) { return "cuda:" + std::to_string(index); }

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

std::string join(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i) out += separator;
    out += parts[i];
  }
  return out;
}

std::string memory_segment(const MemoryPeaks& peaks) {
  return printf_string("peak_alloc %.1fGiB peak_reserved %.1fGiB",
                       static_cast<double>(peaks.allocated) / kGiB,
                       static_cast<double>(peaks.reserved) / kGiB);
}

// " over N GPUs" when the MFU is taken against several devices.
std::string over_devices(int devices) {
  return devices > 1 ? " over " + std::to_string(devices) + " GPUs" : std::string();
}

}  // namespace

std::string log_tag(int rank) { return "[Perf][rank" + std::to_string(rank) + "]"; }

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
  } else {
    j["dit"] = nullptr;
  }
  add_device(j, r.device, r.peaks);
  return j.dump();
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
    }
    j["throughput"] = std::move(tj);
  } else {
    j["throughput"] = nullptr;
  }
  if (r.eta_s) j["eta_s"] = *r.eta_s;
  return j.dump();
}

std::string format_log_line(const RequestRecord& r) {
  std::vector<std::string> parts;
  parts.push_back("req#" + std::to_string(r.req) + (r.warmup ? " warmup" : ""));
  parts.push_back(printf_string("e2e %.2fs", r.e2e_s));
  std::vector<const StageSummary*> sorted;
  for (const auto& s : r.stages) sorted.push_back(&s);
  std::sort(sorted.begin(), sorted.end(),
            [](const StageSummary* a, const StageSummary* b) { return a->name < b->name; });
  for (const StageSummary* s : sorted) {
    double seconds = s->total_ms / 1000.0;
    if (s->count == 1) {
      parts.push_back(printf_string("%s %.2fs(1x)", s->name.c_str(), seconds));
    } else {
      parts.push_back(printf_string("%s %.2fs(%lldx, %.0f+-%.0fms, min %.0f max %.0f)",
                                    s->name.c_str(), seconds, static_cast<long long>(s->count),
                                    s->mean_ms, s->std_ms, s->min_ms, s->max_ms));
    }
  }
  if (r.device) parts.push_back(memory_segment(r.peaks.value_or(MemoryPeaks{})));
  if (r.dit) {
    const auto& d = *r.dit;
    std::string segment = printf_string("DiT %.2e FLOPs/fwd (attn %.0f%%) -> %.1f TFLOPS",
                                        d.flops_per_fwd, d.attn_share * 100.0, d.tflops);
    if (d.mfu) {
      segment += printf_string(" (MFU %.1f%% @%.0f%s)", *d.mfu * 100.0, d.peak_tflops.value_or(0),
                               over_devices(d.devices).c_str());
    } else {
      segment += " (MFU n/a)";
    }
    parts.push_back(segment);
  }
  return log_tag(r.rank) + " " + join(parts, " | ");
}

std::string format_log_line(const TrainWindowRecord& r) {
  std::vector<std::string> parts;
  std::string span = "step " + std::to_string(r.step_first) + "-" + std::to_string(r.step_last);
  if (r.warmup_excluded) span += " (" + std::to_string(r.warmup_excluded) + " warmup excluded)";
  parts.push_back(span);
  parts.push_back(printf_string("%.2fs/step p95 %.2fs", r.step_s_p50, r.step_s_p95));
  std::vector<std::string> phases;
  for (const auto& [name, seconds] : r.phases_s) {
    phases.push_back(printf_string("%s %.2fs", name.c_str(), seconds));
  }
  parts.push_back(join(phases, " "));
  if (r.micro_steps > 1.0) parts.push_back(printf_string("%.0f micro-steps", r.micro_steps));
  // Phases that add up to more than the step mean device work drained across phase boundaries.
  if (r.overrun_s > 0.02 * std::max(r.step_s_p50, 1e-9)) {
    parts.push_back(printf_string("overrun %.2fs", r.overrun_s));
  }
  const auto& t = r.throughput;
  if (t) parts.push_back(printf_string("%.3f samples/s (local, dp=%d)", t->samples_per_s, t->dp));
  if (r.device) parts.push_back(memory_segment(r.peaks.value_or(MemoryPeaks{})));
  if (t && t->priced) {
    double trainable =
        t->params ? static_cast<double>(t->trainable) / static_cast<double>(t->params) * 100.0
                  : 0.0;
    std::string segment = printf_string(
        "DiT %.1fB params (trainable %.3g%%, %s, attn %.0f%%) %.2e FLOPs/step -> %.1f TFLOPS",
        static_cast<double>(t->params) / 1e9, trainable, t->flops_coef_reason.c_str(),
        t->attn_share * 100.0, t->flops_per_step, t->tflops);
    if (t->mfu) {
      segment += printf_string(" (MFU %.1f%% / HFU %.1f%% @%.0f%s)", *t->mfu * 100.0,
                               t->hfu.value_or(0) * 100.0, t->peak_tflops.value_or(0),
                               over_devices(t->devices).c_str());
    } else {
      segment += " (MFU n/a)";
    }
    if (t->priced_steps < r.steps) {
      segment +=
          " [" + std::to_string(t->priced_steps) + "/" + std::to_string(r.steps) + " steps priced]";
    }
    parts.push_back(segment);
  }
  if (r.eta_s) parts.push_back(printf_string("ETA %.1fh", *r.eta_s / 3600.0));
  return log_tag(r.rank) + " " + join(parts, " | ");
}

}  // namespace vxperf
