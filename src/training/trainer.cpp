// vxperf::Trainer (the public face of TrainerCore), the phase names, and the training scopes with
// their split begin/end form (vxperf/markers.h).
#include "core/engine_core.h"
#include "training/trainer_core.h"
#include "vxperf/markers.h"
#include "vxperf/training.h"

namespace vxperf {
namespace {

constexpr const char* kPhaseNames[kPhaseCount] = {"data",         "prep", "vae_enc", "vae_dec",
                                                  "text_encoder", "aux",  "fwd",     "bwd",
                                                  "clip",         "opt",  "other"};

detail::TrainerCore& core(Trainer* t) { return detail::core_of(*t); }

detail::Marker marker(const TrainMark& m) { return detail::Marker{m.host_s, m.event}; }

TrainMark mark_of(Trainer* t) {
  detail::Marker m = core(t).mark();
  return TrainMark{t, m.host_s, m.event, nullptr};
}

}  // namespace

const char* phase_name(Phase phase) { return kPhaseNames[static_cast<int>(phase)]; }

std::optional<Phase> phase_from_name(const std::string& name) {
  for (int i = 0; i < kPhaseCount; ++i) {
    if (name == kPhaseNames[i]) return static_cast<Phase>(i);
  }
  return std::nullopt;
}

namespace detail {
TrainerCore& core_of(Trainer& trainer) { return *trainer.core_; }
}  // namespace detail

// ---- Trainer ------------------------------------------------------------------------------------
//
// Nothing here throws into the training loop: a failure (out of memory, a program's sink or log
// function throwing) costs the one measurement point, and a mark that failed to open is inert.

namespace {

template <class Fn>
void guarded(Fn&& fn) noexcept {
  try {
    fn();
  } catch (...) {
  }
}

// A mark with nothing to note at its opening (clip, optimizer step).
TrainMark plain_mark(Trainer* t) noexcept {
  if (t == nullptr) return {};
  try {
    return mark_of(t);
  } catch (...) {
    return {};
  }
}

}  // namespace

Trainer::Trainer(detail::EngineCore& engine)
    : core_(std::make_unique<detail::TrainerCore>(engine)) {}
Trainer::~Trainer() = default;
void Trainer::register_model(const ModelInfo& info) {
  guarded([&] { core_->register_model(info); });
}
void Trainer::set_device(int device, void* stream) {
  guarded([&] { core_->set_device(device, stream); });
}
void Trainer::finish() {
  guarded([&] { core_->finish(); });
}
std::int64_t Trainer::steps_closed() const { return core_->steps_closed(); }
std::size_t Trainer::pending_steps() const { return core_->pending_steps(); }

// ---- split form ---------------------------------------------------------------------------------

TrainMark begin_micro_step(Trainer* t) noexcept {
  if (t == nullptr) return {};
  TrainMark m{t, 0, kNoEvent, detail::active_trainer};
  detail::active_trainer = t;
  guarded([&] { core(t).enter_micro(core(t).now()); });
  return m;
}

void end_micro_step(const TrainMark& m) noexcept {
  if (m.trainer == nullptr) return;
  guarded([&] { core(m.trainer).exit_micro(core(m.trainer).now()); });
  detail::active_trainer = m.outer;
}

TrainMark begin_model_call(Trainer* t) noexcept {
  if (t == nullptr || !core(t).model_call_timed()) return {};
  TrainMark m;
  try {
    m = mark_of(t);
    core(t).begin_model_call(m.host_s);
  } catch (...) {
    m = TrainMark{};  // not timed; one return object, no copy
  }
  return m;
}

void end_model_call(const TrainMark& m, Phase phase, std::int64_t tokens, std::int64_t samples,
                    double fraction) noexcept {
  if (m.trainer == nullptr) return;
  detail::TrainerCore& c = core(m.trainer);
  guarded([&] {
    c.end_model_call(phase, marker(m), c.mark(), tokens, samples > 0 ? samples : 1, fraction);
  });
}

TrainMark begin_backward(Trainer* t) noexcept {
  if (t == nullptr) return {};
  TrainMark m;
  try {
    m = mark_of(t);
    core(t).begin_backward(m.host_s);
  } catch (...) {
    m = TrainMark{};  // not timed; one return object, no copy
  }
  return m;
}

void end_backward(const TrainMark& m) noexcept {
  if (m.trainer == nullptr) return;
  detail::TrainerCore& c = core(m.trainer);
  guarded([&] { c.end_backward(marker(m), c.mark()); });
}

TrainMark begin_clip(Trainer* t) noexcept { return plain_mark(t); }

void end_clip(const TrainMark& m) noexcept {
  if (m.trainer == nullptr) return;
  detail::TrainerCore& c = core(m.trainer);
  guarded([&] { c.add_clip(marker(m), c.mark()); });
}

TrainMark begin_optimizer_step(Trainer* t) noexcept { return plain_mark(t); }

void end_optimizer_step(const TrainMark& m, const void* optimizer, bool synced) noexcept {
  if (m.trainer == nullptr) return;
  detail::TrainerCore& c = core(m.trainer);
  guarded([&] { c.add_optimizer_step(marker(m), c.mark(), optimizer, synced); });
}

// ---- scopes -------------------------------------------------------------------------------------

MicroStep::MicroStep(Trainer* t) noexcept : mark_(begin_micro_step(t)) {}
MicroStep::~MicroStep() { end_micro_step(mark_); }

ModelCall::ModelCall(Phase phase, std::int64_t tokens, std::int64_t samples, Trainer* t) noexcept
    : mark_(begin_model_call(t)), phase_(phase), tokens_(tokens), samples_(samples) {}
ModelCall::~ModelCall() { end_model_call(mark_, phase_, tokens_, samples_, fraction_); }

Backward::Backward(Trainer* t) noexcept : mark_(begin_backward(t)) {}
Backward::~Backward() { end_backward(mark_); }

Clip::Clip(Trainer* t) noexcept : mark_(begin_clip(t)) {}
Clip::~Clip() { end_clip(mark_); }

OptimizerStep::OptimizerStep(const void* optimizer, bool synced, Trainer* t) noexcept
    : mark_(begin_optimizer_step(t)), optimizer_(optimizer), synced_(synced) {}
OptimizerStep::~OptimizerStep() { end_optimizer_step(mark_, optimizer_, synced_); }

}  // namespace vxperf
