// The stage scope inside a request, and the split begin/end form of its calls (vxperf/markers.h).
#include <exception>

#include "inference/request.h"
#include "inference/requests.h"
#include "vxperf/inference.h"
#include "vxperf/inference_markers.h"

namespace vxperf {
namespace {

Span stage_span(const internal::Request& r, std::uint32_t stage) {
  Span s;
  s.kind = SpanKind::kStage;
  s.name = r.stages[stage].name;
  s.device = r.device;
  s.index = r.index;
  return s;
}

}  // namespace

namespace internal {

StageMark open_stage(StageId stage, std::int64_t tokens, std::int64_t batch,
                     void* stream) noexcept {
  Request* r = current_request;
  StageMark m;
  bool opened = false;
  try {
    m.request = r;
    m.request_index = r->index;
    m.stage = stage.value;
    m.tokens = tokens > 0 ? tokens : 0;
    m.batch = batch >= 0 ? batch : 1;  // zero rows cost nothing
    m.stream = stream != nullptr ? stream : r->stream;
    r->note_stage(m.stage, tokens, batch);
    ++r->stages[m.stage].open;
    opened = true;
    if (r->observers != nullptr) {
      Span span = stage_span(*r, m.stage);
      notify(r->observers, [&](Observer& o) { o.on_begin(span); });
    }
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
    // What the scope said, else what a hook inside the call noted, else what its blocks were
    // seen to compute, else a full forward.
    const ForwardWork& work = st.pending_work;
    double fraction = m.fraction >= 0 ? m.fraction : st.pending_fraction;
    const bool from_work = fraction < 0 && work.fraction >= 0;
    if (fraction < 0) fraction = work.fraction;
    if (fraction < 0) fraction = 1.0;
    Request::Pair pair{m.stage, m.t0, t1, m.e0, e1, fraction};
    if (from_work) pair.attn_fraction = work.attn_fraction;
    pair.tokens = work.tokens > 0 ? work.tokens : m.tokens;
    pair.batch = work.batch > 0 ? work.batch : m.batch;
    st.pending_fraction = -1;
    st.pending_work = ForwardWork{};
    if (st.open > 0) --st.open;
    r->pairs.push_back(pair);
    if (r->observers != nullptr) {
      Span span = stage_span(*r, m.stage);
      span.t0 = m.t0;
      span.t1 = t1;
      notify(r->observers, [&](Observer& o) { o.on_end(span); });
    }
  } catch (...) {
  }
}

}  // namespace internal

// ---- split form ---------------------------------------------------------------------------------

StageMark begin_stage(StageId stage, std::int64_t tokens, std::int64_t batch,
                      void* stream) noexcept {
  if (internal::current_request == nullptr) return {};
  return internal::open_stage(stage, tokens, batch, stream);
}

namespace {

// A mark from a request that has ended since (a stage left open across a request's end) belongs
// to no request: it is never written into the next one.
bool still_open(const StageMark& mark) {
  internal::Request* r = internal::current_request;
  return mark.request != nullptr && mark.request == r && r->index == mark.request_index;
}

}  // namespace

void end_stage(const StageMark& mark) noexcept {
  if (still_open(mark)) internal::close_stage(mark);
}

void drop_stage(const StageMark& mark) noexcept {
  if (!still_open(mark)) return;
  internal::Request::StageState& st = mark.request->stages[mark.stage];
  if (st.open > 0) --st.open;
  st.pending_fraction = -1;
  st.pending_work = ForwardWork{};
  if (mark.e0 != kNoEvent) mark.request->backend->release(mark.e0);
}

void declare_request_model(std::string_view stage, const ModelInfo& info) noexcept {
  internal::Request* r = internal::current_request;
  if (r == nullptr) return;
  try {
    r->owner->declare_model(*r, stage, info);
  } catch (...) {
  }
}

bool stage_needs_tokens(StageId stage) noexcept {
  internal::Request* r = internal::current_request;
  return r != nullptr && r->needs_tokens(stage.value);
}

std::int64_t closed_calls(StageId stage) noexcept {
  const internal::Request* r = internal::current_request;
  if (r == nullptr) return 0;
  std::int64_t n = 0;
  for (const auto& p : r->pairs) n += p.stage == stage.value ? 1 : 0;
  return n;
}

std::int64_t open_calls(StageId stage) noexcept {
  const internal::Request* r = internal::current_request;
  if (r == nullptr || stage.value >= r->stages.size()) return 0;
  return r->stages[stage.value].open;
}

}  // namespace vxperf
