// The training phases: the one table of their names and order.
//
// Every part of vxperf that names, orders or indexes phases reads this table: the trainer (what a
// step is split into), window records ("phases_s", in table order), the level-2 dump, `vxperf
// report` (its phase order), the cross-rank exchange (its wire layout indexes by Phase), replay
// (which phases a script may time) and the Python package (through the extension's phases()).
// A new phase is one row here, its enumerator, and the code that times it (a call phase: the
// scope or hook that makes its call).
//
// Thread safety: constant data.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace vxperf {

enum class Phase : std::uint8_t {
  kData,
  kPrep,
  kVaeEncode,
  kVaeDecode,
  kTextEncoder,
  kAux,
  kForward,
  kBackward,
  kClip,
  kOptimizer,
  kEma,
  kOther,
  kSave,
  kRestore,
  kEval,
};

// How a phase's time is measured.
enum class PhaseSource : std::uint8_t {
  kHost,       // host clock between two points of the loop (data, prep)
  kModelCall,  // a model call classified into the phase (ModelCall, a wrapped module)
  kBackward,   // the backward pass
  kCall,       // a call of its own (clip, the optimizer step)
  kResidual,   // what the other phases leave of the step (other)
  kOutside,    // a call outside the steps (a checkpoint saved or restored, an evaluation): its
               // time is taken out of the step it falls in, never a phase of one
};

struct PhaseInfo {
  Phase phase;         // its key: the index of the wire layout and of per-phase arrays
  const char* name;    // in records, lines, scripts and the Python package
  PhaseSource source;
  // A call phase (kCall, kOutside) only: the event-script kind its calls are written as, and
  // whether its
  // call bounds the step (the optimizer step: an owner, synced or a gradient-accumulation pass,
  // the first owner to step closing the step). Every other call phase is timed, traced, replayed
  // and drawn by one generic path.
  const char* event = nullptr;
  bool bounds_step = false;
};

// In order: records, lines and reports list phases in this order.
inline constexpr std::array<PhaseInfo, 15> kPhases = {{
    {Phase::kData, "data", PhaseSource::kHost},
    {Phase::kPrep, "prep", PhaseSource::kHost},
    {Phase::kVaeEncode, "vae_enc", PhaseSource::kModelCall},
    {Phase::kVaeDecode, "vae_dec", PhaseSource::kModelCall},
    {Phase::kTextEncoder, "text_encoder", PhaseSource::kModelCall},
    {Phase::kAux, "aux", PhaseSource::kModelCall},
    {Phase::kForward, "fwd", PhaseSource::kModelCall},
    {Phase::kBackward, "bwd", PhaseSource::kBackward},
    {Phase::kClip, "clip", PhaseSource::kCall, "clip"},
    {Phase::kOptimizer, "opt", PhaseSource::kCall, "optimizer_step", /*bounds_step=*/true},
    {Phase::kEma, "ema", PhaseSource::kCall, "ema"},
    {Phase::kOther, "other", PhaseSource::kResidual},
    {Phase::kSave, "save", PhaseSource::kOutside, "checkpoint_save"},
    {Phase::kRestore, "restore", PhaseSource::kOutside, "checkpoint_restore"},
    {Phase::kEval, "eval", PhaseSource::kOutside, "evaluation"},
}};
inline constexpr int kPhaseCount = static_cast<int>(kPhases.size());

constexpr bool phase_table_in_order() {
  for (int i = 0; i < kPhaseCount; ++i) {
    if (static_cast<int>(kPhases[static_cast<std::size_t>(i)].phase) != i) return false;
  }
  return true;
}
static_assert(phase_table_in_order(), "kPhases rows must follow the Phase enumerators");

constexpr bool call_phases_have_events() {
  for (const PhaseInfo& p : kPhases) {
    const bool call = p.source == PhaseSource::kCall || p.source == PhaseSource::kOutside;
    if (call != (p.event != nullptr)) return false;
    if (p.bounds_step && p.source != PhaseSource::kCall) return false;
  }
  return true;
}
static_assert(call_phases_have_events(), "a call phase, and only a call phase, names its event");

inline constexpr const PhaseInfo& phase_info(Phase phase) {
  return kPhases[static_cast<std::size_t>(phase)];
}
// Whether a phase is timed as calls of its own that leave the step where it is (clip, an EMA
// update): what begin_call / PhaseCall / vxperf.phase() time.
constexpr bool is_plain_call_phase(Phase phase) {
  return phase_info(phase).source == PhaseSource::kCall && !phase_info(phase).bounds_step;
}
// Whether a phase is time outside the steps (a checkpoint's save or restore, an evaluation).
constexpr bool is_outside_phase(Phase phase) {
  return phase_info(phase).source == PhaseSource::kOutside;
}
// "data", "prep", "vae_enc", "vae_dec", "text_encoder", "aux", "fwd", "bwd", "clip", "opt",
// "ema", "other"; outside the steps "save", "restore", "eval"
inline const char* phase_name(Phase phase) { return phase_info(phase).name; }
std::optional<Phase> phase_from_name(std::string_view name);
// Kept for callers holding a std::string.
inline std::optional<Phase> phase_from_name(const std::string& name) {
  return phase_from_name(std::string_view(name));
}
inline std::optional<Phase> phase_from_name(const char* name) {
  return phase_from_name(std::string_view(name));
}

}  // namespace vxperf
