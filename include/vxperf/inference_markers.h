// The inference scopes' measurement points as plain begin/end calls (see vxperf/markers.h): a
// request on this thread and the calls of its stages.
//
// Thread safety: as the scopes. A request belongs to the thread that began it.
#pragma once

#include <cstdint>
#include <string_view>

#include "vxperf/inference.h"
#include "vxperf/model.h"

namespace vxperf {

// Opens a request on this thread, on the process-wide engine or on `engine`. False when metrics
// are off or a request is already open on the thread (a nested pipeline call: the outer request
// owns its stages); only a true begin is to be ended.
bool begin_request(const RequestOptions& options = {}) noexcept;
bool begin_request(Engine& engine, const RequestOptions& options = {}) noexcept;
// Closes the request this thread began; `failed`: the call ended by an error (still reported).
void end_request(bool failed = false) noexcept;
// Whether a request is open on this thread.
inline bool in_request() noexcept { return internal::current_request != nullptr; }
// The open request's identity on this thread (nullptr: none), to tell whether the request a
// binding began is still the one open. Requests are recycled per thread: compare, never keep.
inline const void* current_request_id() noexcept { return internal::current_request; }

// As StageScope: `tokens` per sample and `batch` of a transformer stage's first priced call.
StageMark begin_stage(StageId stage, std::int64_t tokens = 0, std::int64_t batch = 1,
                      void* stream = nullptr) noexcept;
void end_stage(const StageMark& mark) noexcept;
// Forgets a call without recording it (a forward that raised, as a post-hook never sees it).
void drop_stage(const StageMark& mark) noexcept;
// Whether this thread's open request still has no token count for `stage`, a priced stage: the
// moment to infer one from the call's inputs (once per request and stage).
bool stage_needs_tokens(StageId stage) noexcept;
// Calls of `stage` closed so far, and open now, in this thread's request (0 outside one).
std::int64_t closed_calls(StageId stage) noexcept;
std::int64_t open_calls(StageId stage) noexcept;

// Declares a transformer for this thread's open request only: a pipeline's own components, so that
// two pipelines served at once are each priced by their own model. Once any is declared, the
// request is priced by its own declarations instead of the engine's (Engine::declare_model).
// Nothing happens outside a request.
void declare_request_model(std::string_view stage, const ModelInfo& info) noexcept;

}  // namespace vxperf
