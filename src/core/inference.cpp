// The request and stage scopes, and their split begin/end form (vxperf/markers.h).
#include "vxperf/inference.h"

#include <exception>

#include "core/engine_core.h"
#include "core/request.h"
#include "training/trainer_core.h"
#include "vxperf/engine.h"
#include "vxperf/markers.h"

namespace vxperf {
namespace {

detail::Request* open_request(Engine& engine, const RequestOptions& options) noexcept {
  // A pipeline called from inside another (an upsampler, a refiner): the outer request owns it.
  if (detail::current_request != nullptr) return nullptr;
  detail::Request* request = nullptr;
  try {
    request = detail::core_of(engine).begin_request(options);
  } catch (...) {
    request = nullptr;  // measurement never takes a run down
  }
  detail::current_request = request;
  return request;
}

void close_request(detail::Request* request, bool failed) noexcept {
  // Released first, so that even a failing settle cannot leave the thread inside a dead request.
  detail::current_request = nullptr;
  try {
    request->engine->end_request(request, failed);
  } catch (...) {
  }
}

}  // namespace

RequestScope::RequestScope(const RequestOptions& options) noexcept {
  if (Engine* e = engine()) open(*e, options);
}

RequestScope::RequestScope(Engine& engine, const RequestOptions& options) noexcept {
  open(engine, options);
}

void RequestScope::open(Engine& engine, const RequestOptions& options) noexcept {
  request_ = open_request(engine, options);
  exceptions_ = std::uncaught_exceptions();
}

RequestScope::~RequestScope() {
  if (request_ != nullptr) close_request(request_, std::uncaught_exceptions() > exceptions_);
}

namespace detail {

StageMark open_stage(StageId stage, std::int64_t tokens, std::int64_t batch,
                     void* stream) noexcept {
  Request* r = current_request;
  StageMark m;
  bool opened = false;
  try {
    m.request = r;
    m.request_index = r->index;
    m.stage = stage.value;
    m.stream = stream != nullptr ? stream : r->stream;
    r->note_stage(m.stage, tokens, batch);
    ++r->stages[m.stage].open;
    opened = true;
    m.t0 = r->clock->now_s();
    m.e0 = r->device_events ? r->backend->record(r->device, m.stream) : kNoEvent;
  } catch (...) {
    // Out of memory, or a backend that threw: this call is not timed.
    if (opened) --r->stages[stage.value].open;
    m = StageMark{};  // one return object, no copy
  }
  return m;
}

void close_stage(const StageMark& m) noexcept {
  Request* r = m.request;
  try {
    EventId e1 = r->device_events ? r->backend->record(r->device, m.stream) : kNoEvent;
    double t1 = r->clock->now_s();
    Request::StageState& st = r->stages[m.stage];
    // What the scope said, else what a hook inside the call noted, else a full forward.
    double fraction = m.fraction >= 0 ? m.fraction : st.pending_fraction;
    if (fraction < 0) fraction = 1.0;
    st.pending_fraction = -1;
    if (st.open > 0) --st.open;
    r->pairs.push_back(Request::Pair{m.stage, m.t0, t1, m.e0, e1, fraction});
  } catch (...) {
  }
}

}  // namespace detail

// ---- split form ---------------------------------------------------------------------------------

bool begin_request(const RequestOptions& options) noexcept {
  Engine* e = engine();
  return e != nullptr && open_request(*e, options) != nullptr;
}

bool begin_request(Engine& engine, const RequestOptions& options) noexcept {
  return open_request(engine, options) != nullptr;
}

void end_request(bool failed) noexcept {
  if (detail::Request* r = detail::current_request) close_request(r, failed);
}

StageMark begin_stage(StageId stage, std::int64_t tokens, std::int64_t batch,
                      void* stream) noexcept {
  if (detail::current_request == nullptr) return {};
  return detail::open_stage(stage, tokens, batch, stream);
}

namespace {

// A mark from a request that has ended since (a stage left open across a request's end) belongs
// to no request: it is never written into the next one.
using detail::Request;

bool still_open(const StageMark& mark) {
  detail::Request* r = detail::current_request;
  return mark.request != nullptr && mark.request == r && r->index == mark.request_index;
}

}  // namespace

void end_stage(const StageMark& mark) noexcept {
  if (still_open(mark)) detail::close_stage(mark);
}

void drop_stage(const StageMark& mark) noexcept {
  if (!still_open(mark)) return;
  Request::StageState& st = mark.request->stages[mark.stage];
  if (st.open > 0) --st.open;
  st.pending_fraction = -1;
  if (mark.e0 != kNoEvent) mark.request->backend->release(mark.e0);
}

void note_forward_fraction(StageId stage, double fraction) noexcept {
  if (detail::Request* r = detail::current_request) {
    r->note_fraction(stage.value, fraction);
  } else if (Trainer* t = detail::active_trainer) {
    // A training forward (the micro-step's trainer): the stage does not matter there.
    detail::core_of(*t).note_fraction(fraction);
  }
}

void note_compute_dtype(StageId stage, Dtype dtype) noexcept {
  if (detail::Request* r = detail::current_request) {
    r->note_dtype(stage.value, dtype);
  } else if (Trainer* t = detail::active_trainer) {
    detail::core_of(*t).note_dtype(dtype);
  }
}

void declare_request_model(std::string_view stage, const ModelInfo& info) noexcept {
  detail::Request* r = detail::current_request;
  if (r == nullptr) return;
  try {
    r->engine->declare_model(*r, stage, info);
  } catch (...) {
  }
}

bool stage_needs_tokens(StageId stage) noexcept {
  detail::Request* r = detail::current_request;
  return r != nullptr && r->needs_tokens(stage.value);
}

}  // namespace vxperf
