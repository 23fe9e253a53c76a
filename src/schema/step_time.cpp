// A request's time per denoising step (vxperf/records.h's denoising_step_time): what the log
// line, the report and Prometheus all show of `denoising_steps`, computed once.
#include "vxperf/records.h"
#include "vxperf/stages.h"

namespace vxperf {

std::optional<DenoisingStepTime> denoising_step_time(const RequestRecord& record) {
  if (!record.denoising_steps || *record.denoising_steps < 1) return std::nullopt;
  DenoisingStepTime t;
  t.steps = *record.denoising_steps;
  for (const StageSummary& s : record.stages) {
    if (!is_priced_stage(s.name)) continue;
    t.calls += s.count;
    t.total_ms += s.total_ms;
  }
  if (t.calls == 0) return std::nullopt;
  return t;
}

}  // namespace vxperf
