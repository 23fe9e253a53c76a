// The training scopes' measurement points as plain begin/end calls (see vxperf/markers.h).
//
// Thread safety: as the scopes: for the thread that runs the training loop.
#pragma once

#include <cstdint>
#include <string_view>

#include "vxperf/cost_model.h"
#include "vxperf/training.h"

namespace vxperf {

TrainMark begin_micro_step(Trainer* t = trainer()) noexcept;
void end_micro_step(const TrainMark& mark) noexcept;
// A micro-step's two boundaries for a binding whose enter and exit are not one scope: as
// begin/end_micro_step, without making `t` this thread's active trainer.
void enter_micro_step(Trainer* t) noexcept;
void exit_micro_step(Trainer* t) noexcept;
// The trainer whose micro-step (MicroStep, begin_micro_step) is open on this thread, or nullptr.
inline Trainer* active_trainer() noexcept { return internal::active_trainer; }
// Whether a model call starting now on `t` would be timed (not nested, not inside a backward).
bool model_call_timed(Trainer* t) noexcept;
// Not timed (an empty mark) when nested in another model call or made inside a backward. The
// phase is said at the end; begin_model_call(t, phase) in vxperf/training.h says it here.
TrainMark begin_model_call(Trainer* t = trainer()) noexcept;
// `fraction`: of a full forward the call computed (see ModelCall::set_fraction).
void end_model_call(const TrainMark& mark, Phase phase, std::int64_t tokens = 0,
                    std::int64_t samples = 1, double fraction = 1.0) noexcept;
TrainMark begin_backward(Trainer* t = trainer()) noexcept;
void end_backward(const TrainMark& mark) noexcept;
// One call of a call phase (vxperf/phases.h: a kCall row that does not bound the step: clip, or
// a program's own such as an EMA update). A phase that is not one is not timed (an empty mark).
TrainMark begin_call(Phase phase, Trainer* t = trainer()) noexcept;
void end_call(const TrainMark& mark, Phase phase) noexcept;
// begin_call / end_call of Phase::kClip.
inline TrainMark begin_clip(Trainer* t = trainer()) noexcept { return begin_call(Phase::kClip, t); }
inline void end_clip(const TrainMark& mark) noexcept { end_call(mark, Phase::kClip); }
// A call outside the steps (Phase::kSave, kRestore, kEval): host clock only; its time is taken out
// of the step it falls in. `bytes`: written or read, where known (-1: not). A phase that is not
// one is not timed.
TrainMark begin_outside(Phase phase, Trainer* t = trainer()) noexcept;
// A checkpoint's `path` (as the program names it), where said: a save's step is kept beside the
// records file, and a restore goes on from the step its checkpoint was saved at (by any rank of
// the job), or from `resume_step` where that is said (>= 0).
void end_outside(const TrainMark& mark, Phase phase, std::int64_t bytes = -1,
                 std::string_view path = {}, std::int64_t resume_step = -1) noexcept;
TrainMark begin_optimizer_step(Trainer* t = trainer()) noexcept;
void end_optimizer_step(const TrainMark& mark, const void* optimizer, bool synced = true) noexcept;
// As note_forward_fraction and note_compute_dtype (vxperf/inference.h) outside a request, for a
// given trainer: its forward open now, else its current step's last one.
void note_forward_fraction(Trainer& t, double fraction) noexcept;
// As note_forward_work (vxperf/inference.h), for the forward open now only: its tokens and samples
// replace those the call ends with.
void note_forward_work(Trainer& t, const ForwardWork& work) noexcept;
void note_compute_dtype(Trainer& t, Dtype dtype) noexcept;

}  // namespace vxperf
