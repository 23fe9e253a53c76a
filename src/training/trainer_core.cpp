#include "training/trainer_core.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "base/resolve.h"
#include "base/stats.h"
#include "base/strings.h"
#include "output/records_file.h"
#include "runtime/fork_guard.h"
#include "schema/log_lines.h"
#include "training/window.h"
#include "training/xrank_view.h"

namespace vxperf::internal {
namespace {

double wall_clock_s() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

// Adds `share` of a forward's attention products (its samples at its length) to the step's sums.
void add_attention(StepCounts& step, std::int64_t samples, std::int64_t tokens, double share) {
  const double weight = static_cast<double>(samples) * share;
  const double length = static_cast<double>(tokens);
  step.attn_tokens += weight * length;
  step.attn_tokens_sq += weight * length * length;
}

}  // namespace

TrainerCore::Pair& TrainerCore::Step::add(Phase phase, Marker start, Marker end) {
  auto& list = pairs[static_cast<std::size_t>(phase)];
  if (list.empty()) order.push_back(phase);
  list.push_back(Pair{start, end});
  return list.back();
}

void TrainerCore::Step::reset() {
  for (Phase phase : order) pairs[static_cast<std::size_t>(phase)].clear();
  order.clear();
  begun = false;
  outside_s = 0;
  static_cast<StepCounts&>(*this) = StepCounts{};
}

TrainerCore::TrainerCore(Context& engine)
    : engine_(engine),
      forked_(engine.forked()),
      observers_(forked_ ? nullptr : engine.observers()),
      checkpoint_steps_([&engine](std::string_view line) { engine.notice(line); }) {}

TrainerCore::~TrainerCore() = default;

void TrainerCore::mark_forked() noexcept {
  forked_ = true;  // observers are told nothing more: the trace is the parent's
  observers_ = nullptr;
  device_ = -1;  // no device call in the child
  meter_ = Context::Metering{};
  meter_step_ = -1;
}

void TrainerCore::register_model(const ModelInfo& info) {
  if (off()) return;
  const Settings& s = engine_.settings();
  std::int64_t params = s.dit_params != 0 ? s.dit_params : info.params;
  // The largest model is the one being trained: a discriminator or a teacher is smaller.
  if (params > model_.params) set_model(info);
}

void TrainerCore::set_model(const ModelInfo& info) {
  in_use_ = true;
  model_ = priced_model(info, engine_.settings());
  model_.trainable = info.trainable < 0 ? info.params : info.trainable;
  if (!forked_) {
    notify(engine_.observers(), [&](Observer& o) { o.on_train_model(info, model_.trainable); });
  }
}

void TrainerCore::mark_setup(double t) {
  if (off() || setup_at_ || ledger_.start) return;  // once, and only before the loop
  setup_at_ = t;
  notify_point(engine_.observers(), EventKind::kTrainSetup, t, &Observer::on_train_setup);
}

void TrainerCore::set_device(int device, void* stream) {
  if (off()) return;
  mark_setup(now());
  int was = device_;
  device_ = device >= 0 && engine_.backend_for(device).available() ? device : -1;
  stream_ = stream;
  if (device_ == was) return;
  // Not from here: the setup after set_device (loading, wrapping, the optimizer) is no window's.
  // The interval opens as a step begins; a device set inside a step (a front end that learns it
  // at the first forward) opens it now, and only the window it is that step's is kept.
  engine_.cancel_metering(meter_);
  meter_step_ = -1;
  if (step_) {
    open_meter(step_->index);
  } else if (device_ >= 0 && !finished_ && !forked_) {
    // Loading the meters and starting NVML's sampler belong to the setup too, not to step 0.
    engine_.prepare_metering(engine_.device(), device_);
  }
}

void TrainerCore::open_meter(std::int64_t index) {
  if (device_ < 0 || meter_.open() || finished_ || forked_) return;
  meter_ = engine_.begin_metering(engine_.device(), device_);
  meter_step_ = meter_.open() ? index : -1;
}

void TrainerCore::meter_step_close(std::int64_t index) {
  if (!meter_.open()) return;
  const std::int64_t every = engine_.settings().every;
  if ((index + 1) % every != 0) {
    engine_.mark_metering(meter_);
    return;
  }
  DeviceReadings readings;
  engine_.roll_metering(meter_, readings, engine_.device(), device_);
  // A window whose interval opened after its first step began (a device set late) is left out.
  std::int64_t first = index + 1 - every;
  if (meter_step_ == first) metered_.emplace_back(first, std::move(readings));
  meter_step_ = meter_.open() ? index + 1 : -1;
}

double TrainerCore::now() { return engine_.clock().now_s(); }

Marker TrainerCore::mark() {
  EventId event = device_ >= 0 ? engine_.device().record(device_, stream_) : kNoEvent;
  return Marker{engine_.clock().now_s(), event};
}

Span TrainerCore::step_span(const Step& step) const {
  Span s = point_span(SpanKind::kStep, "step");
  s.index = step.index;
  s.t0 = step.t0;
  return s;
}

TrainerCore::Step& TrainerCore::touch(double t) {
  Step& step = current(t);
  if (!step.begun) {
    step.begun = true;
    if (const ObserverList* list = observers()) {
      Span span = step_span(step);
      notify(list, [&](Observer& o) { o.on_begin(span); });
    }
  }
  return step;
}

Span TrainerCore::point_span(SpanKind kind, std::string_view name) const {
  Span s;
  s.kind = kind;
  s.name = name;
  s.device = device_;
  s.index = step_ ? step_->index : num_steps_;
  return s;
}

void TrainerCore::tell_phase_begins(std::string_view name) {
  // The step it belongs to begins first (when the step exists: the very first one is made by its
  // first point, whose time starts it).
  if (step_ && !step_->begun) touch(step_->t0);
  Span span = point_span(SpanKind::kPhase, name);
  notify(observers_, [&](Observer& o) { o.on_begin(span); });
}

void TrainerCore::tell_phase_ends(std::string_view name, double t0, double t1) {
  Span span = point_span(SpanKind::kPhase, name);
  span.t0 = t0;
  span.t1 = t1;
  notify(observers_, [&](Observer& o) { o.on_end(span); });
}

TrainerCore::Step& TrainerCore::current(double t0) {
  if (!step_) {
    if (!spare_.empty()) {
      step_ = std::move(spare_.back());
      spare_.pop_back();
    } else {
      step_ = std::make_unique<Step>();
    }
    step_->index = num_steps_;
    // The previous step's close, not this step's first micro-step: the data wait belongs inside.
    step_->t0 = t0;
    if (!ledger_.start && !forked_) ledger_.start = t0;
    // Observers added since are told from this step on.
    if (!forked_) {
      observers_ = engine_.observers();
      engine_.capture_begins(Settings::CaptureRange::Kind::kSteps, step_->index, engine_.device(),
                             device_);
      open_meter(step_->index);
    }
  }
  return *step_;
}

TrainerCore::Pair& TrainerCore::add_pair(Phase phase, Marker start, Marker end, std::int64_t tokens,
                                         std::int64_t samples, const void* optimizer, bool synced,
                                         double fraction, std::optional<Dtype> dtype,
                                         double attn_fraction) {
  Step& step = touch(end.host_s);
  Pair& pair = step.add(phase, start, end);
  evaluation_goes_on_ = false;
  if (const ObserverList* list = observers()) {
    TrainCall call;
    call.id = pair.id = next_call_id_++;
    call.phase = phase;
    call.step = step.index;
    call.t0 = start.host_s;
    call.t1 = end.host_s;
    call.tokens = tokens;
    call.samples = samples;
    call.fraction = fraction;
    call.attn_fraction = attn_fraction;
    call.dtype = dtype;
    call.optimizer = optimizer;
    call.synced = synced;
    notify(list, [&](Observer& o) { o.on_train_call(call); });
  }
  return pair;
}

void TrainerCore::close_head(double now) {
  // `prep` is what runs in a micro-step before any model does: host clock by definition.
  if (head_open_) {
    head_open_ = false;
    touch(now).add(Phase::kPrep, Marker{micro_enter_, kNoEvent}, Marker{now, kNoEvent});
  }
}

void TrainerCore::enter_micro(double now) {
  in_use_ = true;
  Step& step = touch(now);
  if (prev_exit_) {
    // The host's wait between two micro-steps (the data loader plus loop bookkeeping).
    step.add(Phase::kData, Marker{*prev_exit_, kNoEvent}, Marker{now, kNoEvent});
  }
  ++step.micro_steps;
  head_open_ = true;
  in_micro_ = true;
  evaluation_goes_on_ = false;
  micro_enter_ = now;
  if (const ObserverList* list = observers()) {
    Span span = point_span(SpanKind::kMicroStep, "micro_step");
    span.t0 = now;
    notify(list, [&](Observer& o) { o.on_begin(span); });
  }
}

void TrainerCore::exit_micro(double now) {
  head_open_ = false;
  in_micro_ = false;
  if (const ObserverList* list = observers()) {
    Span span = point_span(SpanKind::kMicroStep, "micro_step");
    span.t0 = micro_enter_;
    span.t1 = now;
    notify(list, [&](Observer& o) { o.on_end(span); });
  }
  prev_exit_ = now;
}

void TrainerCore::begin_model_call(double start_s) {
  close_head(start_s);
  ++depth_;
}

void TrainerCore::end_model_call(Phase phase, Marker start, Marker end, std::int64_t tokens,
                                 std::int64_t samples, double fraction, std::optional<Dtype> dtype,
                                 double attn_fraction) {
  --depth_;
  if (!dtype && depth_ == 0) dtype = pending_dtype_;
  if (depth_ == 0) pending_dtype_.reset();
  // The scope's own word first, else what a hook inside the call noted, else what its blocks
  // were seen to compute (whose tokens and samples replace the call's).
  if (depth_ == 0) {
    if (fraction == 1.0 && pending_fraction_ >= 0) {
      fraction = pending_fraction_;
    } else if (fraction == 1.0 && pending_work_.fraction >= 0) {
      fraction = pending_work_.fraction;
      attn_fraction = pending_work_.attn_fraction;
    }
    if (pending_work_.tokens > 0) tokens = pending_work_.tokens;
    if (pending_work_.batch > 0) samples = pending_work_.batch;
    pending_fraction_ = -1;
    pending_work_ = ForwardWork{};
  }
  if (!(fraction >= 0.0)) fraction = 1.0;
  if (fraction > 1.0) fraction = 1.0;
  if (!(attn_fraction >= 0.0)) attn_fraction = -1;
  if (attn_fraction > 1.0) attn_fraction = 1.0;
  const bool priced = phase == Phase::kForward && tokens > 0;
  Pair& pair = add_pair(phase, start, end, tokens, samples, nullptr, false, fraction,
                        priced ? dtype : std::nullopt, priced ? attn_fraction : -1);
  if (priced) {
    Step& step = current(end.host_s);
    last_fwd_ = LastForward{step.index, samples, tokens, fraction, attn_fraction, pair.id};
    if (!step.tokens) step.tokens = tokens;
    if (tokens != *step.tokens) step.mixed_tokens = true;
    step.samples += samples;
    ++step.fwd_calls;
    // A skipped forward still consumed its samples; only the work it priced shrinks.
    double effective = static_cast<double>(samples) * fraction;
    double length = static_cast<double>(tokens);
    step.effective_samples += effective;
    step.effective_fwd += fraction;
    step.sample_tokens += static_cast<double>(samples) * length;
    step.work_tokens += effective * length;
    step.work_tokens_sq += effective * length * length;
    add_attention(step, samples, tokens, attn_fraction >= 0 ? attn_fraction : fraction);
    if (attn_fraction >= 0 && attn_fraction != fraction) step.attn_cut = true;
    if (fraction == 0.0) ++step.skipped_fwd;
    if (dtype && !step.dtype) step.dtype = dtype;
  }
}

void TrainerCore::note_work(const ForwardWork& work) {
  if (depth_ == 0) return;  // only the forward open now
  pending_work_ = work;
  if (!(pending_work_.fraction >= 0.0)) pending_work_.fraction = -1;
  if (pending_work_.fraction > 1.0) pending_work_.fraction = 1.0;
  if (!(pending_work_.attn_fraction >= 0.0) || pending_work_.fraction < 0) {
    pending_work_.attn_fraction = -1;
  }
  if (pending_work_.attn_fraction > 1.0) pending_work_.attn_fraction = 1.0;
}

void TrainerCore::note_dtype(Dtype dtype) {
  if (depth_ > 0) {
    pending_dtype_ = dtype;
    return;
  }
  if (!step_ || last_fwd_.step != step_->index) return;
  if (!step_->dtype) step_->dtype = dtype;
  if (last_fwd_.id != 0) {
    TrainCallNote note;
    note.dtype = dtype;
    notify(observers(), [&](Observer& o) { o.on_train_note(last_fwd_.id, note); });
  }
}

void TrainerCore::note_fraction(double fraction) {
  if (!(fraction >= 0.0)) return;
  fraction = std::min(fraction, 1.0);
  if (depth_ > 0) {
    pending_fraction_ = fraction;
    return;
  }
  // After the call: the current step's last forward, if it has one.
  if (!step_ || last_fwd_.step != step_->index) return;
  Step& step = *step_;
  double samples = static_cast<double>(last_fwd_.samples);
  double length = static_cast<double>(last_fwd_.tokens);
  double gained = samples * (fraction - last_fwd_.fraction);
  step.effective_samples += gained;
  step.effective_fwd += fraction - last_fwd_.fraction;
  step.work_tokens += gained * length;
  step.work_tokens_sq += gained * length * length;
  // The whole call's word: its attention goes with it.
  const double attention_was =
      last_fwd_.attn_fraction >= 0 ? last_fwd_.attn_fraction : last_fwd_.fraction;
  add_attention(step, last_fwd_.samples, last_fwd_.tokens, fraction - attention_was);
  if (last_fwd_.fraction == 0.0) --step.skipped_fwd;
  if (fraction == 0.0) ++step.skipped_fwd;
  last_fwd_.fraction = fraction;
  last_fwd_.attn_fraction = -1;
  if (last_fwd_.id != 0) {
    TrainCallNote note;
    note.fraction = fraction;
    notify(observers(), [&](Observer& o) { o.on_train_note(last_fwd_.id, note); });
  }
}

void TrainerCore::begin_backward(double start_s) {
  close_head(start_s);
  in_backward_ = true;
}

void TrainerCore::end_backward(Marker start, Marker end) {
  in_backward_ = false;
  add_pair(Phase::kBackward, start, end);
}

void TrainerCore::add_call(Phase phase, Marker start, Marker end, std::int64_t bytes,
                           std::string_view path, std::int64_t resume_step) {
  if (is_outside_phase(phase)) {
    add_outside(phase, start, end, bytes, path, resume_step);
    return;
  }
  add_pair(phase, start, end);
  // A call between two micro-steps (an EMA update after the optimizer's step) is its phase's
  // time, not the data wait around it.
  if (is_plain_call_phase(phase) && !in_micro_ && prev_exit_ && *prev_exit_ <= start.host_s) {
    *prev_exit_ += std::max(0.0, end.host_s - start.host_s);
  }
}

std::string TrainerCore::checkpoint_steps_file() const {
  const Topology topo = engine_.topology();
  return CheckpointSteps::path_for(
      RecordsFile::path_for(engine_.settings().json_path, topo.rank, topo.world_size));
}

void TrainerCore::add_outside(Phase phase, Marker start, Marker end, std::int64_t bytes,
                              std::string_view path, std::int64_t resume_step) {
  if (forked_) return;
  in_use_ = true;
  if (outside_open_ > 0) --outside_open_;
  if (!path.empty() && phase == Phase::kSave) {
    checkpoint_steps_.saved(checkpoint_steps_file(), path, current_step_index(), wall_clock_s());
  }
  // A restore before this process's first step resumes a job; one later (a roll-back, an
  // evaluation's swap) keeps the numbering unless the program says the step. The step is the
  // latest save's of the checkpoint by any rank of the job (the main process alone may save it).
  if (!path.empty() && phase == Phase::kRestore && resume_step < 0 && steps_run_ == 0) {
    resume_step =
        checkpoint_steps_.step_of(CheckpointSteps::job_files(engine_.settings().json_path), path)
            .value_or(-1);
  }
  const double seconds = std::max(0.0, end.host_s - start.host_s);
  if (!ledger_.start || start.host_s < *ledger_.start) ledger_.start = start.host_s;
  ledger_.outside.push_back({start.host_s, seconds, phase});
  // Out of the step it falls in (there is none before the first point of the loop) and out of the
  // data wait it interrupted.
  if (step_) step_->outside_s += seconds;
  if (prev_exit_ && *prev_exit_ <= start.host_s) *prev_exit_ += seconds;
  auto add = [&](std::int64_t& count, double& total, std::optional<std::int64_t>* said) {
    ++count;
    total += seconds;
    if (said != nullptr && bytes >= 0) *said = said->value_or(0) + bytes;
  };
  if (phase == Phase::kSave) add(outside_.saves, outside_.save_s, &outside_.save_bytes);
  if (phase == Phase::kRestore) add(outside_.restores, outside_.restore_s, &outside_.restore_bytes);
  if (phase == Phase::kEval) {
    // Evaluation calls with no step between them are one evaluation (a validation pipeline made,
    // then called once per prompt).
    add(outside_.evals, outside_.eval_s, nullptr);
    if (evaluation_goes_on_ && outside_.evals > 1) --outside_.evals;
  }
  evaluation_goes_on_ = phase == Phase::kEval;
  if (const ObserverList* list = observers_ != nullptr ? observers_ : engine_.observers()) {
    TrainCall call;
    call.id = next_call_id_++;
    call.phase = phase;
    call.step = -1;  // of no step: written at once, never settled
    call.t0 = start.host_s;
    call.t1 = end.host_s;
    call.bytes = bytes;
    if (phase == Phase::kRestore) call.resume_step = resume_step;
    notify(list, [&](Observer& o) { o.on_train_call(call); });
  }
  if (phase == Phase::kRestore && resume_step >= 0) resume_at(resume_step);
}

void TrainerCore::resume_at(std::int64_t step) {
  const std::int64_t next = current_step_index();
  if (forked_ || step < 0 || step == next) return;
  if (step_ && !step_->order.empty()) {
    engine_.notice("vxperf: a checkpoint was restored inside a step (after its first call); the "
                   "steps stay numbered as they were");
    return;
  }
  // The steps numbered before settle and their partial window goes out (their device events are
  // waited for: a restore is outside the steps), so that no window spans the jump.
  drain(true);
  if (!window_.empty()) emit_window(false);
  if (steps_run_ == 0) warmup_from_ = step;
  num_steps_ = step;
  if (step_) step_->index = step;
  if (meter_step_ == next) meter_step_ = step;
}

void TrainerCore::add_optimizer_step(Marker start, Marker end, const void* optimizer, bool synced) {
  Pair& pair = add_pair(Phase::kOptimizer, start, end, 0, 0, optimizer, synced);
  if (!synced) return;  // a gradient-accumulation pass-through
  // With several optimizers, the first to close a step owns the boundary from then on.
  if (step_owner_ == nullptr) step_owner_ = optimizer;
  if (step_owner_ == optimizer) {
    closing_call_ = pair.id;
    close_step(end.host_s);
    closing_call_ = 0;
  }
}

void TrainerCore::close_step(double t_close) {
  if (!step_) return;
  if (forked_) {
    say_off_in_forked_child();
    step_->reset();  // bounded: the child's steps are never closed, never kept
    head_open_ = false;
    return;
  }
  step_->total_s = t_close - step_->t0 - step_->outside_s;
  if (step_->begun) {
    if (const ObserverList* list = observers()) {
      Span span = step_span(*step_);
      span.t1 = t_close;
      notify(list, [&](Observer& o) { o.on_end(span); });
    }
  }
  if (steps_run_ == 0) first_closed_ = num_steps_;
  ++num_steps_;
  ++steps_run_;
  // Before anything settles: the window this step ends may settle now.
  meter_step_close(num_steps_ - 1);
  double next_t0 = t_close;
  if (engine_.capture_ends(Settings::CaptureRange::Kind::kSteps, num_steps_ - 1, engine_.device(),
                           device_)) {
    // Stopping the capture (a torch profiler writes its trace) is no step's work: the next step
    // begins after it, and the ledger counts it between the steps.
    next_t0 = std::max(t_close, now());
  }
  pending_.push_back(std::move(step_));
  current(next_t0);
  head_open_ = false;
  drain(false);
  run_exchanges(num_steps_ - 1);
}

bool TrainerCore::ready(const Step& step) {
  // Only closing events are asked: a stream retires events in order, so a completed end implies
  // a completed start.
  DeviceBackend& backend = engine_.device();
  for (Phase phase : step.order) {
    for (const auto& pair : step.pairs[static_cast<std::size_t>(phase)]) {
      if (pair.end.event != kNoEvent && !backend.query(pair.end.event)) return false;
    }
  }
  return true;
}

void TrainerCore::drain(bool force) {
  // No synchronize, ever: a step waits until its events have completed, and once kSettleLag more
  // steps have closed without that, it is read off the host clock instead.
  while (!pending_.empty()) {
    Step& head = *pending_.front();
    if (!(force || ready(head) || num_steps_ - head.index > kSettleLag)) break;
    std::unique_ptr<Step> step = std::move(pending_.front());
    pending_.pop_front();
    settle(*step);
    step->reset();
    spare_.push_back(std::move(step));
  }
  tell_progress(false);
}

void TrainerCore::tell_progress(bool all) {
  notify(observers(), [&](Observer& o) { o.on_train_progress(device_, all); });
}

void TrainerCore::settle(Step& step) {
  DeviceBackend& backend = engine_.device();
  StepRecord record;
  static_cast<StepCounts&>(record) = step;
  record.step = step.index;
  record.warmup = step.index - warmup_from_ < engine_.settings().warmup;
  record.total_s = step.total_s;
  // Sums run left to right, in the order calls happened, so the residual below comes out
  // bit-for-bit as the reference computes it (whether `other` is exactly zero depends on it).
  double phases_total = 0.0;
  record.phases.reserve(step.order.size() + 1);
  for (Phase phase : step.order) {
    double total_ms = 0.0;
    for (const auto& pair : step.pairs[static_cast<std::size_t>(phase)]) {
      Resolved r = resolve_call(backend, pair.start.host_s, pair.end.host_s, pair.start.event,
                                pair.end.event);
      if (pair.id != 0) {
        // Complete now, `num_steps_ - index - 1` steps after its own closed: a replay makes it
        // complete at the same moment, so the step settles at the same moment.
        std::int64_t after = num_steps_ - step.index - 1;
        notify(observers(), [&](Observer& o) { o.on_train_settled(pair.id, r.device_ms, after); });
      }
      total_ms += r.ms;
    }
    double seconds = total_ms / 1000.0;
    record.phases.emplace_back(phase_name(phase), seconds);
    phases_total += seconds;
  }
  release_events(step);
  double residual = step.total_s - phases_total;
  record.phases.emplace_back(phase_name(Phase::kOther), std::max(0.0, residual));
  // Phases can outrun their step when device work of one drains inside the next; reported.
  record.overrun_s = std::max(0.0, -residual);
  if (!record.warmup) measured_step_s_.push_back(step.total_s);
  double data = 0.0;
  for (const auto& [name, seconds] : record.phases) {
    if (std::strcmp(name, phase_name(Phase::kData)) == 0) data += seconds;
  }
  const double compute = step.total_s - data;
  if (ledger_.steps++ == 0) {
    ledger_.first_compute_s = compute;
  } else {
    ledger_.later_compute_s += compute;
    ledger_.recent_s.push_back(compute);
    if (ledger_.recent_s.size() > kIdealSteps) ledger_.recent_s.pop_front();
  }
  ledger_.data_s += data;
  ledger_.last_close = step.t0 + step.total_s + step.outside_s;
  window_.push_back(std::move(record));
  if (static_cast<std::int64_t>(window_.size()) >= engine_.settings().every) emit_window(true);
}

std::optional<Ledger> TrainerCore::ledger(std::optional<double> until) const {
  if (ledger_.steps == 0 || !ledger_.start) return std::nullopt;
  Ledger l;
  const std::int64_t n = ledger_.steps;
  l.steps = n;
  // Through the last step's close, or the training's end (never before that close).
  const double end = until ? std::max(*until, ledger_.last_close) : ledger_.last_close;
  l.wall_s = end - *ledger_.start;
  // Before the loop's first point: start-up from the process's start to the set-up's (its device
  // set), then the set-up (model, wrapping, optimizer).
  if (auto born = engine_.process_start(); born && *born <= *ledger_.start) {
    const double setup_at = setup_at_ && *setup_at_ >= *born ? *setup_at_ : *ledger_.start;
    l.startup_s = setup_at - *born;
    l.setup_s = *ledger_.start - setup_at;
    l.wall_s += l.startup_s + l.setup_s;
  }
  // The first step pays for compiling and warming up: the ideal is the later steps' (the last
  // kIdealSteps of them).
  l.ideal_step_s =
      n >= 2 ? ideal_step_s(std::vector<double>(ledger_.recent_s.begin(), ledger_.recent_s.end()))
             : ledger_.first_compute_s;
  l.productive_s = l.ideal_step_s * static_cast<double>(n);
  l.first_step_excess_s = ledger_.first_compute_s - l.ideal_step_s;
  l.slow_step_excess_s = ledger_.later_compute_s - l.ideal_step_s * static_cast<double>(n - 1);
  l.data_wait_s = ledger_.data_s;
  for (const auto& o : ledger_.outside) {
    if (!until && o.t0 >= ledger_.last_close) continue;  // after this window's last step
    (o.phase == Phase::kSave ? l.save_s : o.phase == Phase::kRestore ? l.restore_s : l.eval_s) +=
        o.seconds;
  }
  l.between_steps_s =
      l.wall_s - (l.startup_s + l.setup_s + l.productive_s + l.first_step_excess_s +
                  l.slow_step_excess_s + l.data_wait_s + l.save_s + l.restore_s + l.eval_s);
  l.goodput = l.wall_s > 0 ? l.productive_s / l.wall_s : 0.0;
  return l;
}

void TrainerCore::release_events(Step& step) {
  DeviceBackend& backend = engine_.device();
  for (Phase phase : step.order) {
    for (const auto& pair : step.pairs[static_cast<std::size_t>(phase)]) {
      if (pair.start.event != kNoEvent) backend.release(pair.start.event);
      if (pair.end.event != kNoEvent) backend.release(pair.end.event);
    }
  }
}

void TrainerCore::emit_window(bool full) {
  WindowDetail detail;
  detail.steps = std::move(window_);
  window_.clear();
  if (detail.steps.empty()) return;
  const Settings& s = engine_.settings();
  Topology topo = engine_.topology();
  WindowContext ctx;
  ctx.ts = wall_clock_s();
  ctx.rank = topo.rank;
  ctx.world_size = topo.world_size;
  ctx.dp = parallel_layout(topo).dp;
  ctx.parallel = Context::record_layout(topo);
  if (device_ >= 0) {
    ctx.device = device_;
    ctx.readings = Context::read_readings(engine_.device(), device_);
    // The meters' readings of this window, taken as its last step closed.
    const std::int64_t first = detail.steps.front().step;
    while (!metered_.empty() && metered_.front().first < first) metered_.pop_front();
    if (!metered_.empty() && metered_.front().first == first) {
      Context::add_meter_readings(*ctx.readings, metered_.front().second);
      metered_.pop_front();
    }
  }
  ctx.model = model_;
  ctx.attention_enabled = s.attn_flops;
  ctx.coef_override = s.flops_coef;
  ctx.total_steps = s.total_steps;
  ctx.dtype_override = s.dtype;
  ctx.peak_tflops = [this](Dtype dtype) {
    return engine_.peak(device_ >= 0 ? std::optional<int>(device_) : std::nullopt, dtype);
  };
  TrainWindowRecord record = aggregate_window(detail.steps, ctx);
  engine_.stamp_run(record, topo);
  if (outside_.saves + outside_.restores + outside_.evals > 0) {
    record.outside = outside_;
    outside_ = OutsideSteps{};
  }
  record.ledger = ledger();
  if (record.readings && record.readings->energy_j) {
    // The meter's interval spans every step of the window, warmup ones too.
    std::int64_t samples = 0;
    for (const StepRecord& step : detail.steps) samples += step.samples;
    if (samples > 0)
      record.energy_j_per_sample = *record.readings->energy_j / static_cast<double>(samples);
  }
  std::optional<DeviceReadings> readings = record.readings;
  if (full && xrank_on()) {
    HeldWindow held;
    held.numbers = rank_window_of(record);
    if (record.rank == 0) {
      held.record = std::move(record);
      held.detail = std::move(detail);
    } else {
      engine_.emit(record, detail);
    }
    held_.push_back(std::move(held));
  } else {
    engine_.emit(record, detail);
  }
  // Replay reads the readings from a memory event placed before the call that closed the window.
  if (readings) {
    std::optional<std::uint64_t> closing =
        closing_call_ != 0 ? std::optional<std::uint64_t>(closing_call_) : std::nullopt;
    notify(observers(), [&](Observer& o) { o.on_window_readings(*readings, closing); });
  }
  // The next window's readings start now, as a request's do.
  if (device_ >= 0) Context::start_readings(engine_.device(), device_);
}

void TrainerCore::emit_end(double end) {
  std::optional<Ledger> l = ledger(end);
  if (!l) return;  // no step settled: nothing to account for
  const Topology topo = engine_.topology();
  TrainEndRecord record;
  record.ts = wall_clock_s();
  record.rank = topo.rank;
  record.world_size = topo.world_size;
  engine_.stamp_run(record, topo);
  record.step_first = first_closed_;
  record.step_last = num_steps_ - 1;
  record.steps = steps_run_;
  record.after_last_step_s = std::max(0.0, end - ledger_.last_close);
  record.ledger = l;
  engine_.emit(record);
  notify_point(observers_ != nullptr ? observers_ : engine_.observers(), EventKind::kTrainEnd, end,
               &Observer::on_train_end);
}

void TrainerCore::finish() {
  if (finished_ || off()) return;  // a forked child: the parent reports its own steps
  finished_ = true;
  // The training's end, read before what follows (settling, writing) takes its time: the final
  // record's ledger runs to here, and the trace says it, so that a replay ends here too.
  const double end = now();
  if (outside_open_ > 0) {
    engine_.notice("vxperf: " + std::to_string(outside_open_) +
                   " checkpoint or evaluation scope(s) opened and never closed; their time is in "
                   "the steps or between them");
  }
  closing_call_ = 0;
  // The partial window ends at its last step's close (its interval's last mark), not now.
  if (meter_.open()) {
    const std::int64_t every = engine_.settings().every;
    const std::int64_t first = num_steps_ - num_steps_ % every;
    if (num_steps_ > meter_step_ && meter_step_ == first) {
      DeviceReadings readings;
      engine_.end_metering_at_mark(meter_, readings);
      metered_.emplace_back(first, std::move(readings));
    } else {
      engine_.cancel_metering(meter_);
    }
    meter_step_ = -1;
  }
  drain(true);
  // Every rank runs the exchanges still due; the partial window has none (ranks may have stopped
  // at different steps).
  run_exchanges(std::nullopt);
  emit_window(false);
  tell_progress(true);
  // The step in progress never closes: its span ends here.
  if (step_ && step_->begun) {
    if (const ObserverList* list = observers()) {
      Span span = step_span(*step_);
      span.t1 = now();
      notify(list, [&](Observer& o) { o.on_end(span); });
    }
    step_->begun = false;
  }
  emit_end(end);
  if (measured_step_s_.empty() || !engine_.should_log()) return;
  std::vector<double> totals = measured_step_s_;
  TrainingSummaryLine line;
  line.rank = engine_.topology().rank;
  line.steps = static_cast<std::int64_t>(totals.size());
  std::sort(totals.begin(), totals.end());
  line.total_s = plain_sum(totals);  // of the sorted times, as the reference sums them
  line.p50_s = percentile(totals, 50);
  line.p95_s = percentile(totals, 95);
  engine_.log_line(format_summary(line));
}

}  // namespace vxperf::internal
