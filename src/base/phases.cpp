#include "vxperf/phases.h"

namespace vxperf {

std::optional<Phase> phase_from_name(std::string_view name) {
  for (const PhaseInfo& info : kPhases) {
    if (name == info.name) return info.phase;
  }
  return std::nullopt;
}

}  // namespace vxperf
