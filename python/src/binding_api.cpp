// binding_api.h over today's engine: the public headers, plus the open request's state
// (src/request.h) and the trainer's raw measurement points, because the Python side opens and
// closes intervals from callbacks rather than from C++ scopes.
#include "binding_api.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>

#include "request.h"
#include "vxperf/cuda_backend.h"
#include "vxperf/engine.h"
#include "vxperf/inference.h"
#include "vxperf/training.h"

namespace vxperf::binding {
namespace {

std::mutex g_configure_mu;
std::atomic<bool> g_configured{false};
std::atomic<Trainer*> g_trainer{nullptr};

Engine* eng() {
  g_configured.store(true, std::memory_order_relaxed);
  return vxperf::engine();
}

Trainer* trainer() {
  Trainer* t = g_trainer.load(std::memory_order_acquire);
  if (t != nullptr) return t;
  Engine* e = eng();
  if (e == nullptr) return nullptr;
  t = &e->trainer();  // lives as long as the engine, which is never destroyed
  g_trainer.store(t, std::memory_order_release);
  return t;
}

// What a StageMark holds.
struct StageData {
  Request* request;
  std::int64_t index;  // the request's number: a reused Request object is not the same request
  double t0;
  std::uint32_t stage;
  EventId e0;
};
static_assert(sizeof(StageData) <= sizeof(StageMark::opaque), "StageMark too small");

// What a TrainMark holds.
struct TrainData {
  double host_s;
  EventId event;
  bool timed;
};
static_assert(sizeof(TrainData) <= sizeof(TrainMark::opaque), "TrainMark too small");

template <class Mark, class Data>
Mark pack(const Data& data) {
  Mark mark;
  std::memcpy(mark.opaque, &data, sizeof data);
  return mark;
}

template <class Data, class Mark>
Data unpack(const Mark& mark) {
  Data data;
  std::memcpy(&data, mark.opaque, sizeof data);
  return data;
}

ModelInfo to_info(const ModelDesc& d) {
  ModelInfo info;
  info.params = d.params;
  info.trainable = d.trainable;
  info.checkpointing = d.checkpointing;
  if (d.attention) {
    info.attention =
        vxperf::AttentionWidths{d.attention->self, d.attention->cross, d.attention->modules};
  }
  info.text_tokens = d.text_tokens;
  return info;
}

TrainMark train_mark(bool timed) {
  TrainData data{0.0, kNoEvent, false};
  Trainer* t = trainer();
  if (t != nullptr && timed) {
    Marker m = t->mark();
    data = TrainData{m.host_s, m.event, true};
  }
  return pack<TrainMark>(data);
}

Marker marker(const TrainData& d) { return Marker{d.host_s, d.event}; }

}  // namespace

// ---- the process-wide engine ----------------------------------------------------------------

bool configure(int level) {
  std::lock_guard<std::mutex> lock(g_configure_mu);
  if (g_configured.load(std::memory_order_relaxed) || level <= 0) return eng() != nullptr;
  // TEMPORARY: the process-wide engine reads its settings from the environment only, so a level
  // given by the program is passed the same way while the engine is made, and the variable is
  // put back afterwards (child processes must not inherit it). To be replaced by
  // vxperf::configure(Config).
  const char* previous = std::getenv("VIDEOX_PERF");
  std::string saved = previous != nullptr ? previous : "";
  bool had = previous != nullptr;
  ::setenv("VIDEOX_PERF", std::to_string(level).c_str(), 1);
  bool on = eng() != nullptr;
  if (had) {
    ::setenv("VIDEOX_PERF", saved.c_str(), 1);
  } else {
    ::unsetenv("VIDEOX_PERF");
  }
  return on;
}

bool configured() { return g_configured.load(std::memory_order_relaxed); }

bool enabled() { return eng() != nullptr; }

int level() {
  Engine* e = eng();
  return e != nullptr ? e->settings().level : 0;
}

bool attention_pricing() {
  Engine* e = eng();
  return e != nullptr && e->settings().attn_flops;
}

void notice(const std::string& line) {
  if (Engine* e = eng()) e->notice(line);
}

void shutdown() {
  if (configured()) vxperf::shutdown();
}

Topology topology() {
  Topology out;
  if (Engine* e = eng()) {
    vxperf::Topology t = e->topology();
    out = Topology{t.rank, t.world_size, t.sp};
  }
  return out;
}

void set_topology(int rank, int world_size) {
  if (Engine* e = eng()) e->set_topology(rank, world_size);
}

void set_sequence_parallel(int sp) {
  if (Engine* e = eng()) e->set_sequence_parallel(sp);
}

// ---- models -----------------------------------------------------------------------------------

void declare_model(const std::string& stage, const ModelDesc& model) {
  if (Engine* e = eng()) e->declare_model(stage, to_info(model));
}

// ---- devices ----------------------------------------------------------------------------------

bool use_cuda_backend(const MemoryCallbacks& memory, int device, const std::string& library) {
  Engine* e = eng();
  if (e == nullptr) return false;
  // The engine loads a plain CUDA backend the first time a device is named. Let it do that now,
  // so that it does not replace the one made below later on.
  if (device >= 0) e->backend_for(device);
  CudaOptions options;
  if (!library.empty()) options.library_path = library;
  options.notice = [e](std::string_view line) { e->notice(line); };
  if (memory.peaks) {
    options.memory_peaks = [peaks = memory.peaks](int d) -> std::optional<MemoryPeaks> {
      std::uint64_t allocated = 0;
      std::uint64_t reserved = 0;
      if (!peaks(d, &allocated, &reserved)) return std::nullopt;
      return MemoryPeaks{allocated, reserved};
    };
  }
  if (memory.reset) options.reset_memory_peaks = memory.reset;
  std::shared_ptr<DeviceBackend> cuda = make_cuda_backend(options);
  if (!cuda) return false;
  e->set_device_backend(std::move(cuda));
  return true;
}

// ---- inference --------------------------------------------------------------------------------

std::uint32_t stage_id(const std::string& name) { return vxperf::stage(name).value; }

bool in_request() { return vxperf::detail::current_request != nullptr; }

RequestMark begin_request(int device, std::uintptr_t stream) {
  RequestMark mark;
  if (vxperf::detail::current_request != nullptr) return mark;  // nested: the outer one owns it
  Engine* e = eng();
  if (e == nullptr) return mark;
  try {
    Request* r = e->begin_request(device, reinterpret_cast<void*>(stream));
    vxperf::detail::current_request = r;
    mark.opaque = r;
  } catch (...) {
    // Measurement never takes a run down: the call runs unmeasured.
  }
  return mark;
}

void end_request(RequestMark mark, bool /*failed*/) {
  // A failing request is reported like any other (what it ran until it failed); the flag is
  // for an engine that tells the two apart.
  auto* r = static_cast<Request*>(mark.opaque);
  if (r == nullptr) return;
  if (vxperf::detail::current_request == r) vxperf::detail::current_request = nullptr;
  try {
    r->engine->end_request(r);
  } catch (...) {
  }
}

bool stage_needs_tokens(std::uint32_t stage) {
  Request* r = vxperf::detail::current_request;
  if (r == nullptr) return false;
  return stage >= r->stages.size() || r->stages[stage].tokens == 0;
}

StageMark begin_stage(std::uint32_t stage, std::int64_t tokens, std::int64_t batch) {
  StageData d{nullptr, 0, 0.0, stage, kNoEvent};
  Request* r = vxperf::detail::current_request;
  if (r == nullptr) return pack<StageMark>(d);
  r->note_stage(stage, tokens, batch > 0 ? batch : 1);
  d.request = r;
  d.index = r->index;
  d.t0 = r->clock->now_s();
  d.e0 = r->device_events ? r->backend->record(r->device, r->stream) : kNoEvent;
  return pack<StageMark>(d);
}

void end_stage(const StageMark& mark) {
  auto d = unpack<StageData>(mark);
  Request* r = vxperf::detail::current_request;
  if (d.request == nullptr || r != d.request || r->index != d.index) return;
  EventId e1 = r->device_events ? r->backend->record(r->device, r->stream) : kNoEvent;
  double t1 = r->clock->now_s();
  r->pairs.push_back(Request::Pair{d.stage, d.t0, t1, d.e0, e1});
}

void drop_stage(const StageMark& mark) {
  auto d = unpack<StageData>(mark);
  Request* r = vxperf::detail::current_request;
  if (d.request == nullptr || r != d.request || r->index != d.index) return;
  if (d.e0 != kNoEvent) r->backend->release(d.e0);
}

// ---- training ---------------------------------------------------------------------------------

int phase_id(const std::string& name) {
  auto phase = phase_from_name(name);
  return phase ? static_cast<int>(*phase) : -1;
}

bool training_active() {
  if (!configured()) return false;
  Engine* e = eng();
  Trainer* t = e != nullptr ? e->existing_trainer() : nullptr;
  return t != nullptr && t->in_use();
}

void train_set_device(int device, std::uintptr_t stream) {
  if (Trainer* t = trainer()) t->set_device(device, reinterpret_cast<void*>(stream));
}

void train_register_model(const ModelDesc& model, bool replace) {
  Trainer* t = trainer();
  if (t == nullptr) return;
  if (replace) {
    t->set_model(to_info(model));
  } else {
    t->register_model(to_info(model));
  }
}

void train_micro_enter() {
  if (Trainer* t = trainer()) t->enter_micro(t->now());
}

void train_micro_exit() {
  if (Trainer* t = trainer()) t->exit_micro(t->now());
}

bool train_call_timed() {
  Trainer* t = trainer();
  return t != nullptr && t->model_call_timed();
}

TrainMark train_call_begin() {
  TrainMark mark = train_mark(train_call_timed());
  auto d = unpack<TrainData>(mark);
  if (d.timed) trainer()->begin_model_call(d.host_s);
  return mark;
}

void train_call_end(const TrainMark& mark, int phase, std::int64_t tokens, std::int64_t samples) {
  auto d = unpack<TrainData>(mark);
  Trainer* t = trainer();
  if (!d.timed || t == nullptr || phase < 0 || phase >= kPhaseCount) return;
  t->end_model_call(static_cast<Phase>(phase), marker(d), t->mark(), tokens,
                    samples > 0 ? samples : 1);
}

TrainMark train_backward_begin() {
  TrainMark mark = train_mark(true);
  auto d = unpack<TrainData>(mark);
  if (d.timed) trainer()->begin_backward(d.host_s);
  return mark;
}

void train_backward_end(const TrainMark& mark) {
  auto d = unpack<TrainData>(mark);
  if (Trainer* t = trainer(); t != nullptr && d.timed) t->end_backward(marker(d), t->mark());
}

TrainMark train_clip_begin() { return train_mark(true); }

void train_clip_end(const TrainMark& mark) {
  auto d = unpack<TrainData>(mark);
  if (Trainer* t = trainer(); t != nullptr && d.timed) t->add_clip(marker(d), t->mark());
}

TrainMark train_optimizer_begin() { return train_mark(true); }

void train_optimizer_end(const TrainMark& mark, std::uintptr_t owner, bool synced) {
  auto d = unpack<TrainData>(mark);
  Trainer* t = trainer();
  if (t == nullptr || !d.timed) return;
  t->add_optimizer_step(marker(d), t->mark(), reinterpret_cast<const void*>(owner), synced);
}

std::int64_t train_steps_closed() {
  Trainer* t = configured() && eng() != nullptr ? eng()->existing_trainer() : nullptr;
  return t != nullptr ? t->steps_closed() : 0;
}

std::int64_t train_pending_steps() {
  Trainer* t = configured() && eng() != nullptr ? eng()->existing_trainer() : nullptr;
  return t != nullptr ? static_cast<std::int64_t>(t->pending_steps()) : 0;
}

void train_finish() {
  if (!configured()) return;
  Engine* e = eng();
  if (Trainer* t = e != nullptr ? e->existing_trainer() : nullptr) t->finish();
}

}  // namespace vxperf::binding
