// The scopes' measurement points as plain begin/end calls: for language bindings (the Python
// package) and for code whose begin and end sit in different functions, such as a pre- and a
// post-hook. In C++, prefer the scopes of vxperf/inference.h and vxperf/training.h: they are
// these calls, closed on every path.
//
// Thread safety: as the scopes. A request belongs to the thread that began it.
#pragma once

#include <cstdint>
#include <string_view>

#include "vxperf/device.h"
#include "vxperf/inference.h"
#include "vxperf/model.h"
#include "vxperf/training.h"

namespace vxperf {

// ---- inference ----------------------------------------------------------------------------------

// Opens a request on this thread, on the process-wide engine or on `engine`. False when metrics
// are off or a request is already open on the thread (a nested pipeline call: the outer request
// owns its stages); only a true begin is to be ended.
bool begin_request(const RequestOptions& options = {}) noexcept;
bool begin_request(Engine& engine, const RequestOptions& options = {}) noexcept;
// Closes the request this thread began; `failed`: the call ended by an error (still reported).
void end_request(bool failed = false) noexcept;
// Whether a request is open on this thread.
inline bool in_request() noexcept { return detail::current_request != nullptr; }

// As StageScope: `tokens` per sample and `batch` of a transformer stage's first priced call.
StageMark begin_stage(StageId stage, std::int64_t tokens = 0, std::int64_t batch = 1,
                      void* stream = nullptr) noexcept;
void end_stage(const StageMark& mark) noexcept;
// Forgets a call without recording it (a forward that raised, as a post-hook never sees it).
void drop_stage(const StageMark& mark) noexcept;
// Whether this thread's open request still has no token count for `stage`, a priced stage: the
// moment to infer one from the call's inputs (once per request and stage).
bool stage_needs_tokens(StageId stage) noexcept;

// Declares a transformer for this thread's open request only: a pipeline's own components, so that
// two pipelines served at once are each priced by their own model. Once any is declared, the
// request is priced by its own declarations instead of the engine's (Engine::declare_model).
// Nothing happens outside a request.
void declare_request_model(std::string_view stage, const ModelInfo& info) noexcept;

// ---- training -----------------------------------------------------------------------------------

TrainMark begin_micro_step(Trainer* t = trainer()) noexcept;
void end_micro_step(const TrainMark& mark) noexcept;
// Not timed (an empty mark) when nested in another model call or made inside a backward.
TrainMark begin_model_call(Trainer* t = trainer()) noexcept;
// `fraction`: of a full forward the call computed (see ModelCall::set_fraction).
void end_model_call(const TrainMark& mark, Phase phase, std::int64_t tokens = 0,
                    std::int64_t samples = 1, double fraction = 1.0) noexcept;
TrainMark begin_backward(Trainer* t = trainer()) noexcept;
void end_backward(const TrainMark& mark) noexcept;
TrainMark begin_clip(Trainer* t = trainer()) noexcept;
void end_clip(const TrainMark& mark) noexcept;
TrainMark begin_optimizer_step(Trainer* t = trainer()) noexcept;
void end_optimizer_step(const TrainMark& mark, const void* optimizer, bool synced = true) noexcept;

}  // namespace vxperf
