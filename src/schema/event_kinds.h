// The event script's kinds (docs/EVENT_SCRIPTS.md): the one list of the "ev" names, which the live
// trace writes, replay drives through an engine and the Chrome trace draws. A training phase timed
// by a call of its own (clip, the optimizer step: PhaseSource::kCall in vxperf/phases.h) is a kind
// of its own, named by its phase row's `event`, so that a new call phase needs no new kind here.
//
// Thread safety: constant data.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "vxperf/phases.h"

namespace vxperf::internal {

enum class EventKind : std::uint8_t {
  kConfig,        // the first line: settings, device, topology
  kModel,         // a pipeline's model declared (inference)
  kRequestBegin,  // a pipeline call begins
  kStage,         // a component call, host and device times
  kRequestEnd,    // the call returns, with the device's readings
  kTrainModel,    // the trained model declared
  kMicroEnter,    // a micro-step begins
  kMicroExit,     // and ends
  kPhase,         // a model call or the backward, classified into a phase by "name"
  kCall,          // a call phase (clip, optimizer_step): which one is the event's name
  kMemory,        // device readings between requests or steps
  kFinish,        // the run's end
  kPeak,          // a measured peak
  kTopology,      // rank, world and layout, set after the start
  kTrainSetup,    // the program began setting up its training (its device set)
  kTrainEnd,      // the training ended (its final record: the ledger through this moment)
};

struct EventKindInfo {
  EventKind kind;
  const char* name;  // its "ev"; empty for kCall, whose names are the call phases' events
  // A moment with nothing but its time, {"ev", "t"}, told to observers by its own hook and by
  // Observer::on_point (notify_point): the live trace writes every such kind from on_point, and
  // `vxperf trace` draws it from this row (a mark on the training's row where `marked`), so that
  // a new one is its row, its hook, where it is measured and its replay.
  bool point = false;
  bool marked = false;
};

inline constexpr std::array<EventKindInfo, 16> kEventKinds = {{
    {EventKind::kConfig, "config"},
    {EventKind::kModel, "model"},
    {EventKind::kRequestBegin, "request_begin"},
    {EventKind::kStage, "stage"},
    {EventKind::kRequestEnd, "request_end"},
    {EventKind::kTrainModel, "train_model"},
    {EventKind::kMicroEnter, "micro_enter"},
    {EventKind::kMicroExit, "micro_exit"},
    {EventKind::kPhase, "phase"},
    {EventKind::kCall, ""},
    {EventKind::kMemory, "memory"},
    {EventKind::kFinish, "finish"},
    {EventKind::kPeak, "peak"},
    {EventKind::kTopology, "topology"},
    {EventKind::kTrainSetup, "train_setup", true, false},
    {EventKind::kTrainEnd, "train_end", true, true},
}};

constexpr bool event_kinds_in_order() {
  for (std::size_t i = 0; i < kEventKinds.size(); ++i) {
    if (static_cast<std::size_t>(kEventKinds[i].kind) != i) return false;
  }
  return true;
}
static_assert(event_kinds_in_order(), "kEventKinds rows must follow the EventKind enumerators");

inline const EventKindInfo& event_kind_info(EventKind kind) {
  return kEventKinds[static_cast<std::size_t>(kind)];
}

// The "ev" of a kind (not kCall: a call phase's is phase_info(phase).event).
inline const char* event_name(EventKind kind) { return event_kind_info(kind).name; }

// What an "ev" names: its kind, and for kCall the phase. Nothing for a name no row has.
struct ParsedEventKind {
  EventKind kind;
  Phase call = Phase::kOther;  // kCall only
};
std::optional<ParsedEventKind> parse_event_kind(std::string_view name);

}  // namespace vxperf::internal
