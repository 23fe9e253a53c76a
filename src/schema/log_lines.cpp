// Every "[Perf]" line: see log_lines.h.
#include "schema/log_lines.h"

#include <algorithm>

#include "base/strings.h"

namespace vxperf {
namespace {

using internal::join;
using internal::log_tag;
using internal::strprintf;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string memory_segment(const DeviceReadings& peaks) {
  return strprintf("peak_alloc %.1fGiB peak_reserved %.1fGiB",
                   static_cast<double>(peaks.allocated) / kGiB,
                   static_cast<double>(peaks.reserved) / kGiB);
}

// " over N GPUs" when the MFU is taken against several devices.
std::string over_devices(int devices) {
  return devices > 1 ? " over " + std::to_string(devices) + " GPUs" : std::string();
}

}  // namespace

std::string format_log_line(const RequestRecord& r) {
  std::vector<std::string> parts;
  parts.push_back("req#" + std::to_string(r.req) + (r.warmup ? " warmup" : ""));
  parts.push_back(strprintf("e2e %.2fs", r.e2e_s));
  std::vector<const StageSummary*> sorted;
  for (const auto& s : r.stages) sorted.push_back(&s);
  std::sort(sorted.begin(), sorted.end(),
            [](const StageSummary* a, const StageSummary* b) { return a->name < b->name; });
  for (const StageSummary* s : sorted) {
    double seconds = s->total_ms / 1000.0;
    if (s->count == 1) {
      parts.push_back(strprintf("%s %.2fs(1x)", s->name.c_str(), seconds));
    } else {
      parts.push_back(strprintf("%s %.2fs(%lldx, %.0f+-%.0fms, min %.0f max %.0f)", s->name.c_str(),
                                seconds, static_cast<long long>(s->count), s->mean_ms, s->std_ms,
                                s->min_ms, s->max_ms));
    }
  }
  // Per denoising step beside the calls above, where the request said its steps (not the
  // reference's: its records never do).
  if (auto steps = denoising_step_time(r)) {
    const double calls = steps->calls_per_step();
    parts.push_back(strprintf("denoising %lld steps, %.0fms/step (%.3g call%s each)",
                              static_cast<long long>(steps->steps), steps->ms_per_step(), calls,
                              calls == 1.0 ? "" : "s"));
  }
  if (r.device) parts.push_back(memory_segment(r.readings.value_or(DeviceReadings{})));
  if (r.dit) {
    const auto& d = *r.dit;
    std::string segment = strprintf("DiT %.2e FLOPs/fwd (attn %.0f%%) -> %.1f TFLOPS",
                                    d.flops_per_fwd, d.attn_share * 100.0, d.tflops);
    if (d.mfu) {
      segment += strprintf(" (MFU %.1f%% @%.0f%s)", *d.mfu * 100.0, d.peak_tflops.value_or(0),
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
  parts.push_back(strprintf("%.2fs/step p95 %.2fs", r.step_s_p50, r.step_s_p95));
  std::vector<std::string> phases;
  for (const auto& [name, seconds] : r.phases_s) {
    phases.push_back(strprintf("%s %.2fs", name.c_str(), seconds));
  }
  parts.push_back(join(phases, " "));
  if (r.micro_steps > 1.0) parts.push_back(strprintf("%.0f micro-steps", r.micro_steps));
  // Phases that add up to more than the step mean device work drained across phase boundaries.
  if (r.overrun_s > 0.02 * std::max(r.step_s_p50, 1e-9)) {
    parts.push_back(strprintf("overrun %.2fs", r.overrun_s));
  }
  const auto& t = r.throughput;
  if (t) parts.push_back(strprintf("%.3f samples/s (local, dp=%d)", t->samples_per_s, t->dp));
  if (r.device) parts.push_back(memory_segment(r.readings.value_or(DeviceReadings{})));
  if (t && t->priced) {
    double trainable =
        t->params ? static_cast<double>(t->trainable) / static_cast<double>(t->params) * 100.0
                  : 0.0;
    std::string segment = strprintf(
        "DiT %.1fB params (trainable %.3g%%, %s, attn %.0f%%) %.2e FLOPs/step -> %.1f TFLOPS",
        static_cast<double>(t->params) / 1e9, trainable, t->flops_coef_reason.c_str(),
        t->attn_share * 100.0, t->flops_per_step, t->tflops);
    if (t->mfu) {
      segment += strprintf(" (MFU %.1f%% / HFU %.1f%% @%.0f%s)", *t->mfu * 100.0,
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
  if (r.eta_s) parts.push_back(strprintf("ETA %.1fh", *r.eta_s / 3600.0));
  return log_tag(r.rank) + " " + join(parts, " | ");
}

namespace internal {

std::string log_tag(int rank) { return "[Perf][rank" + std::to_string(rank) + "]"; }

std::vector<std::string> request_dump_lines(const RequestRecord& record,
                                            const RequestDetail& detail) {
  std::vector<std::size_t> order(record.stages.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return record.stages[a].name < record.stages[b].name;
  });
  std::string tag = log_tag(record.rank);
  std::vector<std::string> lines;
  for (std::size_t i : order) {
    std::string line = tag + " " + record.stages[i].name + " steps(ms): ";
    if (i < detail.stage_calls_ms.size()) {
      const auto& calls = detail.stage_calls_ms[i];
      for (std::size_t k = 0; k < calls.size(); ++k) {
        line += strprintf("%s%.1f", k ? ", " : "", calls[k]);
      }
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

std::vector<std::string> window_dump_lines(const TrainWindowRecord& record,
                                           const WindowDetail& detail) {
  std::string tag = log_tag(record.rank);
  std::vector<std::string> lines;
  for (const auto& step : detail.steps) {
    std::string line =
        tag + strprintf(" step %lld %.3fs:", static_cast<long long>(step.step), step.total_s);
    for (const auto& [name, seconds] : step.phases) line += strprintf(" %s %.3f", name, seconds);
    lines.push_back(std::move(line));
  }
  return lines;
}

std::string xrank_log_line(const TrainWindowRecord& r) {
  if (!r.xrank) return {};
  const CrossRankView& v = *r.xrank;
  auto p50 = [&v](int rank) {
    return rank >= 0 && static_cast<std::size_t>(rank) < v.step_s_p50.size()
               ? v.step_s_p50[static_cast<std::size_t>(rank)]
               : 0.0;
  };
  std::string line =
      log_tag(r.rank) + strprintf(" xrank step %lld-%lld", static_cast<long long>(r.step_first),
                                  static_cast<long long>(r.step_last));
  line += strprintf(" | %zu ranks: p50 %.2fs (rank %d) to %.2fs (rank %d), median %.2fs",
                    v.step_s_p50.size(), p50(v.min_rank), v.min_rank, p50(v.max_rank), v.max_rank,
                    v.median_s);
  std::vector<std::string> named;
  for (std::size_t i = 0; i < v.stragglers.size(); ++i) {
    auto rank = static_cast<std::size_t>(v.stragglers[i]);
    double excess = rank < v.excess_s.size() ? v.excess_s[rank] : 0.0;
    std::string where = i < v.straggler_phases.size() ? v.straggler_phases[i] : "";
    named.push_back(
        strprintf("rank %d (+%.3fs/step, most in %s)", v.stragglers[i], excess, where.c_str()));
  }
  return line + " | stragglers: " + (named.empty() ? std::string("none") : join(named, ", "));
}

std::string format_summary(const InferenceSummaryLine& s) {
  std::string line = log_tag(s.rank) + " === " + std::to_string(s.measured) + " reqs";
  if (s.warmup) line += " (" + std::to_string(s.warmup) + " warmup excluded)";
  line += strprintf(" | e2e p50 %.1fs p95 %.1fs", s.e2e_p50_s, s.e2e_p95_s);
  if (s.step_mean_ms) line += strprintf(" | transformer mean %.0fms/step", *s.step_mean_ms);
  if (s.total_e2e_s > 0) {
    line +=
        strprintf(" | %.1f reqs/hour", static_cast<double>(s.measured) / s.total_e2e_s * 3600.0);
  }
  return line + " ===";
}

std::string format_summary(const TrainingSummaryLine& s) {
  return log_tag(s.rank) +
         strprintf(" === %lld steps | p50 %.2fs/step p95 %.2fs | %.2fh in-loop ===",
                   static_cast<long long>(s.steps), s.p50_s, s.p95_s, s.total_s / 3600.0);
}

}  // namespace internal
}  // namespace vxperf
