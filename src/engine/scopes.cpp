// The request scope and the split request calls (vxperf/inference.h, vxperf/markers.h) on an
// engine, and the notes that go to whichever half is timing the call.
#include <exception>

#include "engine/engine_core.h"
#include "inference/requests.h"
#include "vxperf/engine.h"
#include "vxperf/inference.h"
#include "vxperf/markers.h"
#include "vxperf/training.h"

namespace vxperf {

RequestScope::RequestScope(const RequestOptions& options) noexcept {
  if (Engine* e = engine()) open(*e, options);
}

RequestScope::RequestScope(Engine& engine, const RequestOptions& options) noexcept {
  open(engine, options);
}

void RequestScope::open(Engine& engine, const RequestOptions& options) noexcept {
  request_ = internal::open_request(internal::core_of(engine).requests(), options);
  exceptions_ = std::uncaught_exceptions();
}

RequestScope::~RequestScope() {
  if (request_ != nullptr) {
    internal::close_request(request_, std::uncaught_exceptions() > exceptions_);
  }
}

void note_queued(Engine& engine, std::int64_t delta) noexcept {
  internal::core_of(engine).requests().note_queued(delta);
}

bool begin_request(const RequestOptions& options) noexcept {
  Engine* e = engine();
  return e != nullptr && internal::open_request(internal::core_of(*e).requests(), options);
}

bool begin_request(Engine& engine, const RequestOptions& options) noexcept {
  return internal::open_request(internal::core_of(engine).requests(), options) != nullptr;
}

void end_request(bool failed) noexcept {
  if (internal::Request* r = internal::current_request) internal::close_request(r, failed);
}

void note_denoising_steps(std::int64_t steps) noexcept {
  if (internal::Request* r = internal::current_request; r != nullptr && steps > 0) {
    r->denoising_steps = steps;
  }
}

// Inside a request, the request's call; else, inside a training micro-step, the trainer's.
void note_forward_fraction(StageId stage, double fraction) noexcept {
  if (internal::Request* r = internal::current_request) {
    r->note_fraction(stage.value, fraction);
  } else if (Trainer* t = internal::active_trainer) {
    note_forward_fraction(*t, fraction);  // a training forward: the stage does not matter there
  }
}

void note_forward_work(StageId stage, const ForwardWork& work) noexcept {
  if (internal::Request* r = internal::current_request) {
    r->note_work(stage.value, work);
  } else if (Trainer* t = internal::active_trainer) {
    note_forward_work(*t, work);
  }
}

void note_compute_dtype(StageId stage, Dtype dtype) noexcept {
  if (internal::Request* r = internal::current_request) {
    r->note_dtype(stage.value, dtype);
  } else if (Trainer* t = internal::active_trainer) {
    note_compute_dtype(*t, dtype);
  }
}

}  // namespace vxperf
