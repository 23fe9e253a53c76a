// vxperf::Trainer (the public face of TrainerCore) and the training scopes with their split
// begin/end form (vxperf/markers.h).
#include "training/trainer_core.h"
#include "vxperf/training_markers.h"
#include "vxperf/training.h"

namespace vxperf {
namespace {

internal::TrainerCore& core(Trainer* t) { return internal::core_of(*t); }

internal::Marker marker(const TrainMark& m) { return internal::Marker{m.host_s, m.event}; }

TrainMark mark_of(Trainer* t) {
  internal::Marker m = core(t).mark();
  return TrainMark{t, m.host_s, m.event, nullptr};
}

}  // namespace

namespace internal {
TrainerCore& core_of(Trainer& trainer) { return *trainer.core_; }
std::unique_ptr<Trainer> make_trainer(Context& engine) {
  return std::unique_ptr<Trainer>(new Trainer(engine));
}
}  // namespace internal

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

// Whether a call outside the steps (a save, a restore, an evaluation) is open and no micro-step
// inside it: the model calls made now (a validation pipeline's transformer) are part of its time,
// not a step's, neither timed nor priced.
bool outside_now(Trainer* t) { return core(t).outside_open() && !core(t).in_micro(); }

// A mark with nothing to note at its opening (clip, optimizer step), observers told first.
TrainMark plain_mark(Trainer* t, Phase phase) noexcept {
  if (t == nullptr) return {};
  try {
    core(t).phase_begins(phase_name(phase));
    return mark_of(t);
  } catch (...) {
    return {};
  }
}

// The end of a timed call: its closing mark, then what `record` does with both, then observers.
template <class Record>
void close_call(const TrainMark& m, Phase phase, Record&& record) noexcept {
  internal::TrainerCore& c = core(m.trainer);
  try {
    internal::Marker end = c.mark();
    record(c, end);
    c.phase_ends(phase_name(phase), m.host_s, end.host_s);
  } catch (...) {
  }
}

}  // namespace

Trainer::Trainer(internal::Context& engine)
    : core_(std::make_unique<internal::TrainerCore>(engine)) {}
Trainer::~Trainer() = default;
void Trainer::register_model(const ModelInfo& info) {
  guarded([&] { core_->register_model(info); });
}
void Trainer::set_model(const ModelInfo& info) {
  guarded([&] { core_->set_model(info); });
}
bool Trainer::in_use() const { return core_->in_use(); }
void Trainer::mark_setup() {
  guarded([&] { core_->mark_setup(core_->now()); });
}
void Trainer::set_device(int device, void* stream) {
  guarded([&] { core_->set_device(device, stream); });
}
void Trainer::finish() {
  guarded([&] { core_->finish(); });
}
void Trainer::stop_exchanges(const std::string& why) {
  guarded([&] { core_->stop_exchanges(why); });
}
void Trainer::resume_at(std::int64_t step) {
  guarded([&] { core_->resume_at(step); });
}
std::int64_t Trainer::steps_closed() const { return core_->steps_closed(); }
std::size_t Trainer::pending_steps() const { return core_->pending_steps(); }

// ---- split form ---------------------------------------------------------------------------------

TrainMark begin_micro_step(Trainer* t) noexcept {
  if (t == nullptr) return {};
  TrainMark m{t, 0, kNoEvent, internal::active_trainer};
  internal::active_trainer = t;
  guarded([&] { core(t).enter_micro(core(t).now()); });
  return m;
}

void end_micro_step(const TrainMark& m) noexcept {
  if (m.trainer == nullptr) return;
  guarded([&] { core(m.trainer).exit_micro(core(m.trainer).now()); });
  internal::active_trainer = m.outer;
}

void enter_micro_step(Trainer* t) noexcept {
  if (t == nullptr) return;
  guarded([&] { core(t).enter_micro(core(t).now()); });
}

void exit_micro_step(Trainer* t) noexcept {
  if (t == nullptr) return;
  guarded([&] { core(t).exit_micro(core(t).now()); });
}

bool model_call_timed(Trainer* t) noexcept {
  return t != nullptr && core(t).model_call_timed() && !outside_now(t);
}

namespace {

TrainMark open_model_call(Trainer* t, const char* name) noexcept {
  if (!model_call_timed(t)) return {};
  TrainMark m;
  try {
    core(t).phase_begins(name);
    m = mark_of(t);
    core(t).begin_model_call(m.host_s);
  } catch (...) {
    m = TrainMark{};  // not timed; one return object, no copy
  }
  return m;
}

}  // namespace

TrainMark begin_model_call(Trainer* t) noexcept { return open_model_call(t, "model_call"); }

TrainMark begin_model_call(Trainer* t, Phase phase) noexcept {
  return open_model_call(t, phase_name(phase));
}

void end_model_call(const TrainMark& m, Phase phase, std::int64_t tokens, std::int64_t samples,
                    double fraction) noexcept {
  if (m.trainer == nullptr) return;
  close_call(m, phase, [&](internal::TrainerCore& c, internal::Marker end) {
    c.end_model_call(phase, marker(m), end, tokens, samples > 0 ? samples : 1, fraction);
  });
}

TrainMark begin_backward(Trainer* t) noexcept {
  if (t == nullptr) return {};
  TrainMark m;
  try {
    core(t).phase_begins(phase_name(Phase::kBackward));
    m = mark_of(t);
    core(t).begin_backward(m.host_s);
  } catch (...) {
    m = TrainMark{};  // not timed; one return object, no copy
  }
  return m;
}

void end_backward(const TrainMark& m) noexcept {
  if (m.trainer == nullptr) return;
  close_call(m, Phase::kBackward, [&](internal::TrainerCore& c, internal::Marker end) {
    c.end_backward(marker(m), end);
  });
}

TrainMark begin_call(Phase phase, Trainer* t) noexcept {
  if (!is_plain_call_phase(phase)) return {};
  return plain_mark(t, phase);
}

void end_call(const TrainMark& m, Phase phase) noexcept {
  if (m.trainer == nullptr || !is_plain_call_phase(phase)) return;
  close_call(m, phase, [&](internal::TrainerCore& c, internal::Marker end) {
    c.add_call(phase, marker(m), end);
  });
}

TrainMark begin_outside(Phase phase, Trainer* t) noexcept {
  // One opened inside another is part of the outer one (a save_pretrained inside accelerate's
  // save_state, a pipeline's save of its components): counted once.
  if (t == nullptr || !is_outside_phase(phase) || core(t).outside_open()) return {};
  TrainMark m;
  guarded([&] {
    core(t).phase_begins(phase_name(phase));
    core(t).outside_opened();
    m = TrainMark{t, core(t).now(), kNoEvent, nullptr};
  });
  return m;
}

void end_outside(const TrainMark& m, Phase phase, std::int64_t bytes, std::string_view path,
                 std::int64_t resume_step) noexcept {
  if (m.trainer == nullptr || !is_outside_phase(phase)) return;
  guarded([&] {
    internal::TrainerCore& c = core(m.trainer);
    internal::Marker end{c.now(), kNoEvent};
    c.add_call(phase, internal::Marker{m.host_s, kNoEvent}, end, bytes, path, resume_step);
    c.phase_ends(phase_name(phase), m.host_s, end.host_s);
  });
}

TrainMark begin_optimizer_step(Trainer* t) noexcept { return plain_mark(t, Phase::kOptimizer); }

void end_optimizer_step(const TrainMark& m, const void* optimizer, bool synced) noexcept {
  if (m.trainer == nullptr) return;
  close_call(m, Phase::kOptimizer, [&](internal::TrainerCore& c, internal::Marker end) {
    c.add_optimizer_step(marker(m), end, optimizer, synced);
  });
}

void note_forward_fraction(Trainer& t, double fraction) noexcept {
  if (outside_now(&t)) return;  // of a call that was not timed
  guarded([&] { internal::core_of(t).note_fraction(fraction); });
}

void note_forward_work(Trainer& t, const ForwardWork& work) noexcept {
  guarded([&] { internal::core_of(t).note_work(work); });
}

void note_compute_dtype(Trainer& t, Dtype dtype) noexcept {
  if (outside_now(&t)) return;  // of a call that was not timed
  guarded([&] { internal::core_of(t).note_dtype(dtype); });
}

// ---- scopes -------------------------------------------------------------------------------------

MicroStep::MicroStep(Trainer* t) noexcept : mark_(begin_micro_step(t)) {}
MicroStep::~MicroStep() { end_micro_step(mark_); }

ModelCall::ModelCall(Phase phase, std::int64_t tokens, std::int64_t samples, Trainer* t) noexcept
    : mark_(begin_model_call(t, phase)), phase_(phase), tokens_(tokens), samples_(samples) {}
ModelCall::~ModelCall() { end_model_call(mark_, phase_, tokens_, samples_, fraction_); }

Backward::Backward(Trainer* t) noexcept : mark_(begin_backward(t)) {}
Backward::~Backward() { end_backward(mark_); }

PhaseCall::PhaseCall(Phase phase, Trainer* t) noexcept : mark_(begin_call(phase, t)), phase_(phase) {}
PhaseCall::~PhaseCall() { end_call(mark_, phase_); }

OutsideCall::OutsideCall(Phase phase, Trainer* t) noexcept
    : mark_(begin_outside(phase, t)), phase_(phase) {}
OutsideCall::~OutsideCall() { end_outside(mark_, phase_, bytes_, path_, resume_step_); }

OptimizerStep::OptimizerStep(const void* optimizer, bool synced, Trainer* t) noexcept
    : mark_(begin_optimizer_step(t)), optimizer_(optimizer), synced_(synced) {}
OptimizerStep::~OptimizerStep() { end_optimizer_step(mark_, optimizer_, synced_); }

}  // namespace vxperf
