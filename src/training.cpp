#include "vxperf/training.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "stats.h"
#include "trace_writer.h"
#include "vxperf/engine.h"

namespace vxperf {
namespace {

constexpr const char* kPhaseNames[kPhaseCount] = {"data",         "prep", "vae_enc", "vae_dec",
                                                  "text_encoder", "aux",  "fwd",     "bwd",
                                                  "clip",         "opt",  "other"};

// How many later steps may close before an unsettled step is read off the host clock. The loops
// that sync once per micro-step need none; the margin is for loops that never sync.
constexpr std::int64_t kSettleLag = 2;

using Json = nlohmann::ordered_json;

}  // namespace

struct Trainer::TraceState {
  struct Entry {
    Json event;
    std::int64_t step = -1;  // the step holding its pair; -1: not a pair
    bool settled = false;
    std::vector<std::string> before;  // lines to write just ahead of this one
  };
  std::deque<Entry> entries;
  std::int64_t first = 0;     // sequence number of entries.front()
  std::int64_t closing = -1;  // entry of the optimizer step closing the current step
  std::map<const void*, std::string> owners;
  Entry& at(std::int64_t id) { return entries[static_cast<std::size_t>(id - first)]; }
};

std::int64_t Trainer::trace_event(std::string line, std::int64_t step) {
  TraceState::Entry entry;
  entry.event = Json::parse(line);
  entry.step = step;
  trace_->entries.push_back(std::move(entry));
  return trace_->first + static_cast<std::int64_t>(trace_->entries.size()) - 1;
}

void Trainer::trace_pair(Phase phase, Pair& pair, std::int64_t step, std::int64_t tokens,
                         std::int64_t samples, const void* optimizer, bool synced) {
  Json ev;
  if (phase == Phase::kClip) {
    ev["ev"] = "clip";
  } else if (phase == Phase::kOptimizer) {
    ev["ev"] = "optimizer_step";
  } else {
    ev["ev"] = "phase";
    ev["name"] = phase_name(phase);
  }
  ev["t0"] = pair.start.host_s;
  ev["t1"] = pair.end.host_s;
  ev["device_ms"] = nullptr;
  ev["ready_after"] = 0;
  if (phase == Phase::kForward && tokens > 0) {
    ev["tokens"] = tokens;
    ev["samples"] = samples;
  }
  if (phase == Phase::kOptimizer) {
    auto& owners = trace_->owners;
    auto it = owners.find(optimizer);
    if (it == owners.end()) {
      it = owners.emplace(optimizer, "optimizer" + std::to_string(owners.size())).first;
    }
    ev["owner"] = it->second;
    ev["sync"] = synced;
  }
  pair.trace_entry = trace_event(ev.dump(), step);
}

void Trainer::trace_flush(bool all) {
  TraceWriter* writer = engine_.trace();
  if (writer == nullptr || !trace_) return;
  engine_.ensure_trace_header(device_);
  std::vector<std::string> lines;
  auto& entries = trace_->entries;
  while (!entries.empty() && (all || entries.front().step < 0 || entries.front().settled)) {
    for (auto& line : entries.front().before) lines.push_back(std::move(line));
    lines.push_back(entries.front().event.dump());
    entries.pop_front();
    ++trace_->first;
  }
  if (!lines.empty()) writer->write_block(lines);
}

const char* phase_name(Phase phase) { return kPhaseNames[static_cast<int>(phase)]; }

std::optional<Phase> phase_from_name(const std::string& name) {
  for (int i = 0; i < kPhaseCount; ++i) {
    if (name == kPhaseNames[i]) return static_cast<Phase>(i);
  }
  return std::nullopt;
}

Trainer::Pair& Trainer::Step::add(Phase phase, Marker start, Marker end) {
  auto& list = pairs[static_cast<std::size_t>(phase)];
  if (list.empty()) order.push_back(phase);
  list.push_back(Pair{start, end});
  return list.back();
}

void Trainer::Step::reset() {
  for (Phase phase : order) pairs[static_cast<std::size_t>(phase)].clear();
  order.clear();
  micro_steps = 0;
  tokens.reset();
  samples = 0;
  fwd_calls = 0;
}

Trainer::Trainer(Engine& engine) : engine_(engine) {
  if (engine_.trace() != nullptr) trace_ = std::make_unique<TraceState>();
}

Trainer::~Trainer() = default;

void Trainer::register_model(const ModelInfo& info) {
  const Settings& s = engine_.settings();
  std::int64_t params = s.dit_params != 0 ? s.dit_params : info.params;
  // The largest model is the one being trained: a discriminator or a teacher is smaller.
  if (params > params_) set_model(info);
}

void Trainer::set_model(const ModelInfo& info) {
  in_use_ = true;
  const Settings& s = engine_.settings();
  params_ = s.dit_params != 0 ? s.dit_params : info.params;
  trainable_ = info.trainable < 0 ? info.params : info.trainable;
  checkpointing_ = info.checkpointing;
  attention_ = usable_widths(info.attention, s.attn_flops);
  text_tokens_ = attention_ ? info.text_tokens : 0;
  if (trace_) {
    Json ev = {{"ev", "train_model"},
               {"params", info.params},
               {"trainable", trainable_},
               {"ckpt", checkpointing_},
               {"attn", info.attention ? Json{{"self", info.attention->self},
                                              {"cross", info.attention->cross},
                                              {"modules", info.attention->modules}}
                                       : Json(nullptr)},
               {"text_tokens", info.text_tokens}};
    trace_event(ev.dump(), -1);
  }
}

void Trainer::set_device(int device, void* stream) {
  device_ = device >= 0 && engine_.backend_for(device)->available() ? device : -1;
  stream_ = stream;
}

double Trainer::now() { return engine_.clock().now_s(); }

Marker Trainer::mark() {
  EventId event = device_ >= 0 ? engine_.device().record(device_, stream_) : kNoEvent;
  return Marker{engine_.clock().now_s(), event};
}

std::int64_t Trainer::current_step_index() const { return step_ ? step_->index : num_steps_; }

Trainer::Step& Trainer::current(double t0) {
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
  }
  return *step_;
}

void Trainer::close_head(double now) {
  // `prep` is what runs in a micro-step before any model does: host clock by definition.
  if (head_open_) {
    head_open_ = false;
    current(now).add(Phase::kPrep, Marker{micro_enter_, kNoEvent}, Marker{now, kNoEvent});
  }
}

void Trainer::enter_micro(double now) {
  in_use_ = true;
  Step& step = current(now);
  if (prev_exit_) {
    // The host's wait between two micro-steps (the data loader plus loop bookkeeping).
    step.add(Phase::kData, Marker{*prev_exit_, kNoEvent}, Marker{now, kNoEvent});
  }
  ++step.micro_steps;
  head_open_ = true;
  micro_enter_ = now;
  if (trace_) trace_event(Json{{"ev", "micro_enter"}, {"t", now}}.dump(), -1);
}

void Trainer::exit_micro(double now) {
  head_open_ = false;
  prev_exit_ = now;
  if (trace_) trace_event(Json{{"ev", "micro_exit"}, {"t", now}}.dump(), -1);
}

void Trainer::begin_model_call(double start_s) {
  close_head(start_s);
  ++depth_;
}

void Trainer::end_model_call(Phase phase, Marker start, Marker end, std::int64_t tokens,
                             std::int64_t samples) {
  --depth_;
  Step& step = current(end.host_s);
  Pair& pair = step.add(phase, start, end);
  if (trace_) trace_pair(phase, pair, step.index, tokens, samples, nullptr, false);
  if (phase == Phase::kForward && tokens > 0) {
    if (!step.tokens) step.tokens = tokens;
    step.samples += samples;
    ++step.fwd_calls;
  }
}

void Trainer::begin_backward(double start_s) {
  close_head(start_s);
  in_backward_ = true;
}

void Trainer::end_backward(Marker start, Marker end) {
  in_backward_ = false;
  Step& step = current(end.host_s);
  Pair& pair = step.add(Phase::kBackward, start, end);
  if (trace_) trace_pair(Phase::kBackward, pair, step.index, 0, 0, nullptr, false);
}

void Trainer::add_clip(Marker start, Marker end) {
  Step& step = current(end.host_s);
  Pair& pair = step.add(Phase::kClip, start, end);
  if (trace_) trace_pair(Phase::kClip, pair, step.index, 0, 0, nullptr, false);
}

void Trainer::add_optimizer_step(Marker start, Marker end, const void* optimizer, bool synced) {
  Step& step = current(end.host_s);
  Pair& pair = step.add(Phase::kOptimizer, start, end);
  if (trace_) {
    trace_pair(Phase::kOptimizer, pair, step.index, 0, 0, optimizer, synced);
    trace_->closing = pair.trace_entry;
  }
  if (!synced) return;  // a gradient-accumulation pass-through
  // With several optimizers, the first to close a step owns the boundary from then on.
  if (step_owner_ == nullptr) step_owner_ = optimizer;
  if (step_owner_ == optimizer) close_step(end.host_s);
}

void Trainer::close_step(double t_close) {
  if (!step_) return;
  step_->total_s = t_close - step_->t0;
  ++num_steps_;
  pending_.push_back(std::move(step_));
  current(t_close);
  head_open_ = false;
  drain(false);
}

bool Trainer::ready(const Step& step) {
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

void Trainer::drain(bool force) {
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
  if (trace_) trace_flush(false);
}

void Trainer::settle(Step& step) {
  DeviceBackend& backend = engine_.device();
  StepRecord record;
  record.step = step.index;
  record.warmup = step.index < engine_.settings().warmup;
  record.total_s = step.total_s;
  record.micro_steps = step.micro_steps;
  // Sums run left to right, in the order calls happened, so the residual below comes out
  // bit-for-bit as the reference computes it (whether `other` is exactly zero depends on it).
  double phases_total = 0.0;
  record.phases.reserve(step.order.size() + 1);
  for (Phase phase : step.order) {
    double total_ms = 0.0;
    for (const auto& pair : step.pairs[static_cast<std::size_t>(phase)]) {
      double host_ms = (pair.end.host_s - pair.start.host_s) * 1000.0;
      double ms = host_ms;
      if (pair.start.event != kNoEvent && pair.end.event != kNoEvent &&
          backend.query(pair.start.event) && backend.query(pair.end.event)) {
        if (auto elapsed = backend.elapsed_ms(pair.start.event, pair.end.event)) {
          ms = std::max(host_ms, *elapsed);
          if (trace_ && pair.trace_entry >= 0) {
            // Complete now, `num_steps_ - index - 1` steps after its own closed: a replay makes
            // it complete at the same moment, so the step settles at the same moment.
            Json& ev = trace_->at(pair.trace_entry).event;
            ev["device_ms"] = *elapsed;
            ev["ready_after"] = num_steps_ - step.index - 1;
          }
        }
      }
      if (trace_ && pair.trace_entry >= 0) trace_->at(pair.trace_entry).settled = true;
      total_ms += ms;
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
  record.tokens = step.tokens;
  record.samples = step.samples;
  record.fwd_calls = step.fwd_calls;
  if (!record.warmup) measured_step_s_.push_back(step.total_s);
  window_.push_back(std::move(record));
  if (static_cast<std::int64_t>(window_.size()) >= engine_.settings().every) emit_window();
}

void Trainer::release_events(Step& step) {
  DeviceBackend& backend = engine_.device();
  for (Phase phase : step.order) {
    for (const auto& pair : step.pairs[static_cast<std::size_t>(phase)]) {
      if (pair.start.event != kNoEvent) backend.release(pair.start.event);
      if (pair.end.event != kNoEvent) backend.release(pair.end.event);
    }
  }
}

void Trainer::emit_window() {
  std::vector<StepRecord> window = std::move(window_);
  window_.clear();
  if (window.empty()) return;
  TrainWindowRecord record = aggregate(window);
  Topology topo = engine_.topology();
  if (engine_.should_log()) {
    engine_.output().log(format_log_line(record));
    if (engine_.settings().level >= 2) {
      std::string tag = log_tag(topo.rank);
      for (const auto& entry : window) {
        char buf[96];
        std::snprintf(buf, sizeof buf, " step %lld %.3fs:", static_cast<long long>(entry.step),
                      entry.total_s);
        std::string line = tag + buf;
        for (const auto& [name, seconds] : entry.phases) {
          std::snprintf(buf, sizeof buf, " %s %.3f", name, seconds);
          line += buf;
        }
        engine_.output().log(line);
      }
    }
  }
  engine_.output().record(to_json_line(record), topo.rank, topo.world_size);
  if (trace_ && record.peaks) {
    // Replay reads the peaks from a memory event placed before the call that closed the window.
    Json memory = {{"ev", "memory"},
                   {"peak_alloc_bytes", record.peaks->allocated},
                   {"peak_reserved_bytes", record.peaks->reserved}};
    std::int64_t closing = trace_->closing;
    if (closing >= trace_->first &&
        closing < trace_->first + static_cast<std::int64_t>(trace_->entries.size())) {
      trace_->at(closing).before.push_back(memory.dump());
    } else {
      trace_event(memory.dump(), -1);
    }
  }
  // The next window's peaks start now, as a request's do.
  if (device_ >= 0) engine_.device().reset_peak_memory(device_);
}

TrainWindowRecord Trainer::aggregate(std::vector<StepRecord>& window) {
  // Warmup steps are logged but kept out of the statistics, unless that leaves nothing.
  std::vector<const StepRecord*> measured;
  for (const auto& entry : window) {
    if (!entry.warmup) measured.push_back(&entry);
  }
  if (measured.empty()) {
    for (const auto& entry : window) measured.push_back(&entry);
  }
  Topology topo = engine_.topology();
  TrainWindowRecord r;
  r.ts = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  r.rank = topo.rank;
  r.world_size = topo.world_size;
  r.step_first = window.front().step;
  r.step_last = window.back().step;
  r.steps = static_cast<std::int64_t>(measured.size());
  r.warmup_excluded = static_cast<std::int64_t>(window.size() - measured.size());
  std::vector<double> totals;
  std::vector<double> micro;
  std::vector<double> overrun;
  for (const StepRecord* e : measured) {
    totals.push_back(e->total_s);
    micro.push_back(static_cast<double>(e->micro_steps));
    overrun.push_back(e->overrun_s);
  }
  std::sort(totals.begin(), totals.end());
  r.step_s_p50 = detail::percentile(totals, 50);
  r.step_s_p95 = detail::percentile(totals, 95);
  for (int i = 0; i < kPhaseCount; ++i) {
    const char* name = kPhaseNames[i];
    std::vector<double> values;
    bool any = false;
    for (const StepRecord* e : measured) {
      double v = 0.0;
      // Step records name phases with phase_name()'s own strings: comparing pointers suffices.
      for (const auto& [phase, seconds] : e->phases) {
        if (phase == name) v = seconds;
      }
      any = any || v != 0.0;
      values.push_back(v);
    }
    if (any) r.phases_s.emplace_back(name, detail::fmean(values));
  }
  r.micro_steps = detail::fmean(micro);
  r.overrun_s = detail::fmean(overrun);
  if (device_ >= 0) {
    r.device = device_;
    r.peaks = engine_.device().peak_memory(device_).value_or(MemoryPeaks{});
  }
  r.throughput = throughput(measured);
  const Settings& s = engine_.settings();
  if (s.total_steps != 0) {
    std::int64_t remaining = std::max<std::int64_t>(0, s.total_steps - window.back().step - 1);
    r.eta_s = static_cast<double>(remaining) * r.step_s_p50;
  }
  return r;
}

std::optional<TrainThroughput> Trainer::throughput(const std::vector<const StepRecord*>& measured) {
  // Every rate is the window's own work over the window's own wall clock (sum over sum): with
  // mixed buckets, a mean of products is not a product of means.
  std::vector<double> totals;
  std::vector<double> samples;
  std::int64_t samples_total = 0;
  for (const StepRecord* e : measured) {
    totals.push_back(e->total_s);
    samples.push_back(static_cast<double>(e->samples));
    samples_total += e->samples;
  }
  double wall_s = detail::plain_sum(totals);
  if (!(wall_s > 0)) return std::nullopt;
  TrainThroughput t;
  t.samples_per_s = static_cast<double>(samples_total) / wall_s;
  t.samples = detail::fmean(samples);
  t.wall_s = wall_s;
  t.dp = engine_.dp_degree();

  // A step that captured no token count contributes neither work nor time.
  std::vector<const StepRecord*> priced;
  std::vector<double> priced_totals;
  std::vector<double> priced_tokens;
  for (const StepRecord* e : measured) {
    if (e->tokens.value_or(0) != 0 && e->samples != 0) {
      priced.push_back(e);
      priced_totals.push_back(e->total_s);
      priced_tokens.push_back(static_cast<double>(*e->tokens));
    }
  }
  double priced_s = detail::plain_sum(priced_totals);
  if (priced.empty() || !(priced_s > 0) || params_ == 0) return t;

  const Settings& s = engine_.settings();
  StepCoefficients coef = step_coefficients(params_, trainable_, checkpointing_, attention_,
                                            s.attn_flops, s.flops_coef);
  double linear = 0.0;
  double attention = 0.0;
  for (const StepRecord* e : priced) {
    double tokens = static_cast<double>(*e->tokens);
    double n = static_cast<double>(e->samples);
    linear += 2.0 * static_cast<double>(params_) * tokens * n;
    attention += attention_flops(attention_, tokens, static_cast<double>(text_tokens_)) * n;
  }
  double per_forward = linear + attention;
  double flops_total = coef.mfu * per_forward;
  double hw_flops_total = coef.hfu * per_forward;
  // A job rate: local work times the data-parallel width, against the peak of every device.
  double dp = static_cast<double>(t.dp);
  t.priced = true;
  t.params = params_;
  t.trainable = trainable_;
  t.tokens = detail::fmean(priced_tokens);
  t.priced_steps = static_cast<std::int64_t>(priced.size());
  t.priced_s = priced_s;
  t.flops_coef = coef.mfu;
  t.flops_coef_hw = coef.hfu;
  t.flops_coef_reason = coef.reason;
  t.flops_per_step = flops_total / static_cast<double>(priced.size());
  t.attn_share = per_forward != 0.0 ? attention / per_forward : 0.0;
  t.devices = engine_.topology().world_size;
  t.tflops = flops_total * dp / priced_s / 1e12;
  t.hw_tflops = hw_flops_total * dp / priced_s / 1e12;
  std::optional<std::string> name;
  if (!s.peak_tflops && device_ >= 0) name = engine_.device().device_name(device_);
  std::optional<double> per_device = per_device_peak_tflops(s.peak_tflops, name);
  if (per_device && *per_device != 0.0) {
    t.peak_tflops = *per_device * t.devices;
    t.mfu = t.tflops / *t.peak_tflops;
    t.hfu = t.hw_tflops / *t.peak_tflops;
  }
  return t;
}

void Trainer::finish() {
  if (finished_) return;
  finished_ = true;
  if (trace_) trace_->closing = -1;
  drain(true);
  emit_window();
  if (trace_) trace_flush(true);
  if (measured_step_s_.empty() || !engine_.should_log()) return;
  std::vector<double> totals = measured_step_s_;
  std::sort(totals.begin(), totals.end());
  char buf[160];
  std::snprintf(buf, sizeof buf,
                " === %zu steps | p50 %.2fs/step p95 %.2fs | %.2fh in-loop ===", totals.size(),
                detail::percentile(totals, 50), detail::percentile(totals, 95),
                detail::plain_sum(totals) / 3600.0);
  engine_.output().log(log_tag(engine_.topology().rank) + buf);
}

// ---- scopes -----------------------------------------------------------------------------------

MicroStep::MicroStep(Trainer* t) noexcept : trainer_(t) {
  if (trainer_ == nullptr) return;
  outer_ = detail::active_trainer;
  detail::active_trainer = trainer_;
  trainer_->enter_micro(trainer_->now());
}

MicroStep::~MicroStep() {
  if (trainer_ == nullptr) return;
  trainer_->exit_micro(trainer_->now());
  detail::active_trainer = outer_;
}

ModelCall::ModelCall(Phase phase, std::int64_t tokens, std::int64_t samples, Trainer* t) noexcept
    : trainer_(t != nullptr && t->model_call_timed() ? t : nullptr),
      phase_(phase),
      tokens_(tokens),
      samples_(samples > 0 ? samples : 1) {
  if (trainer_ == nullptr) return;
  start_ = trainer_->mark();
  trainer_->begin_model_call(start_.host_s);
}

ModelCall::~ModelCall() {
  if (trainer_ != nullptr) {
    trainer_->end_model_call(phase_, start_, trainer_->mark(), tokens_, samples_);
  }
}

Backward::Backward(Trainer* t) noexcept : trainer_(t) {
  if (trainer_ == nullptr) return;
  start_ = trainer_->mark();
  trainer_->begin_backward(start_.host_s);
}

Backward::~Backward() {
  if (trainer_ != nullptr) trainer_->end_backward(start_, trainer_->mark());
}

Clip::Clip(Trainer* t) noexcept : trainer_(t) {
  if (trainer_ != nullptr) start_ = trainer_->mark();
}

Clip::~Clip() {
  if (trainer_ != nullptr) trainer_->add_clip(start_, trainer_->mark());
}

OptimizerStep::OptimizerStep(const void* optimizer, bool synced, Trainer* t) noexcept
    : trainer_(t), optimizer_(optimizer), synced_(synced) {
  if (trainer_ != nullptr) start_ = trainer_->mark();
}

OptimizerStep::~OptimizerStep() {
  if (trainer_ != nullptr)
    trainer_->add_optimizer_step(start_, trainer_->mark(), optimizer_, synced_);
}

}  // namespace vxperf
