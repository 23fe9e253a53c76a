#include "schema/event_kinds.h"

namespace vxperf::internal {

std::optional<ParsedEventKind> parse_event_kind(std::string_view name) {
  if (name.empty()) return std::nullopt;
  for (const EventKindInfo& row : kEventKinds) {
    if (name == row.name) return ParsedEventKind{row.kind};
  }
  for (const PhaseInfo& phase : kPhases) {
    if (phase.event != nullptr && name == phase.event) {
      return ParsedEventKind{EventKind::kCall, phase.phase};
    }
  }
  return std::nullopt;
}

}  // namespace vxperf::internal
