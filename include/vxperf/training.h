// Training measurement: each global step split into phases, with no device synchronize at all.
//
// The measurement points (explicit here, where the reference patched accelerate):
//
//   trainer.register_model(info);                  // the trained model; the largest one wins
//   for (...) {                                    // one global step
//     for (micro ...) {                            // gradient accumulation
//       vxperf::MicroStep micro;                   // gives `data` (the wait before) and `prep`
//       { vxperf::ModelCall c(vxperf::Phase::kVaeEncode); ... }
//       { vxperf::ModelCall c(vxperf::Phase::kForward, tokens, samples); ... }
//       { vxperf::Backward b; ... }
//       if (last) { vxperf::Clip c; ... }
//       { vxperf::OptimizerStep o(&optimizer, /*synced=*/last); ... }
//     }
//   }
//   vxperf::shutdown();                            // or normal exit: flush and summary
//
// A step runs from the close of the previous one to the synced step of the owning optimizer (the
// first optimizer to close a step owns the boundary from then on). A model call nested in another,
// or made during a backward (gradient-checkpointing recompute), is folded into the outer one.
// `other` is what the phases leave of the step. Device events are settled once complete (polled
// without blocking as later steps close), read off the host clock once two more steps have closed,
// and forced out at finish.
//
// Thread safety: the trainer is for the thread that runs the training loop.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vxperf/cost_model.h"
#include "vxperf/device.h"
#include "vxperf/records.h"
#include "vxperf/sink.h"

namespace vxperf {

class Engine;
struct ModelInfo;

enum class Phase : std::uint8_t {
  kData,
  kPrep,
  kVaeEncode,
  kVaeDecode,
  kTextEncoder,
  kAux,
  kForward,
  kBackward,
  kClip,
  kOptimizer,
  kOther,
};
inline constexpr int kPhaseCount = 11;
// "data", "prep", "vae_enc", "vae_dec", "text_encoder", "aux", "fwd", "bwd", "clip", "opt", "other"
const char* phase_name(Phase phase);
std::optional<Phase> phase_from_name(const std::string& name);

// A timing marker: host seconds plus an optional device event.
struct Marker {
  double host_s = 0;
  EventId event = kNoEvent;
};

class Trainer {
 public:
  explicit Trainer(Engine& engine);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // The model being trained (what the reference read from `prepare`): the largest one registered
  // wins. `info.trainable` (-1: all) and `info.checkpointing` decide the FLOPs multipliers.
  void register_model(const ModelInfo& info);
  // Sets the trained model outright, whatever its size (replay's train_model event).
  void set_model(const ModelInfo& info);
  // The device this rank trains on and the stream to record events on (-1: host clock only).
  void set_device(int device, void* stream = nullptr);

  // Flushes pending steps and the partial window, then prints the summary line. Once.
  void finish();

  std::int64_t steps_closed() const { return num_steps_; }
  // Whether a training loop is using this trainer (a model was registered or a micro-step run).
  bool in_use() const { return in_use_; }
  // Closed steps whose timings are still waiting for their device events.
  std::size_t pending_steps() const { return pending_.size(); }

  // ---- the measurement points, for the scopes below and for replay -----------------------------
  double now();   // host clock
  Marker mark();  // host clock plus a device event when training on a device
  void enter_micro(double now);
  void exit_micro(double now);
  // Whether a model call starting now would be timed (not nested, not inside a backward).
  bool model_call_timed() const { return depth_ == 0 && !in_backward_; }
  void begin_model_call(double start_s);
  void end_model_call(Phase phase, Marker start, Marker end, std::int64_t tokens,
                      std::int64_t samples);
  void begin_backward(double start_s);
  void end_backward(Marker start, Marker end);
  void add_clip(Marker start, Marker end);
  void add_optimizer_step(Marker start, Marker end, const void* optimizer, bool synced);
  // The index the next recorded pair belongs to (for replay's readiness scripting).
  std::int64_t current_step_index() const;

 private:
  struct Pair {
    Marker start, end;
    std::int64_t trace_entry = -1;  // its event in the pending trace, when tracing
  };
  struct TraceState;
  struct Step {
    std::int64_t index = 0;
    double t0 = 0;
    double total_s = 0;
    // Pairs per phase, indexed by Phase; the vectors keep their capacity from step to step.
    std::array<std::vector<Pair>, kPhaseCount> pairs;
    std::vector<Phase> order;  // phases in order of first use
    std::int64_t micro_steps = 0;
    std::optional<std::int64_t> tokens;
    std::int64_t samples = 0;
    std::int64_t fwd_calls = 0;
    Pair& add(Phase phase, Marker start, Marker end);
    void reset();
  };

  Step& current(double t0);
  void close_head(double now);
  void close_step(double t_close);
  void drain(bool force);
  bool ready(const Step& step);
  void settle(Step& step);
  void emit_window();
  TrainWindowRecord aggregate(std::vector<StepRecord>& window);
  std::optional<TrainThroughput> throughput(const std::vector<const StepRecord*>& measured);
  void release_events(Step& step);
  // Raw trace (VIDEOX_PERF_TRACE): events wait until their step settles, because only then are
  // their device times known.
  std::int64_t trace_event(std::string line, std::int64_t step);
  void trace_pair(Phase phase, Pair& pair, std::int64_t step, std::int64_t tokens,
                  std::int64_t samples, const void* optimizer, bool synced);
  void trace_flush(bool all);

  Engine& engine_;
  std::int64_t num_steps_ = 0;
  std::unique_ptr<Step> step_;
  std::deque<std::unique_ptr<Step>> pending_;
  std::vector<std::unique_ptr<Step>> spare_;  // settled steps kept for reuse (no allocation)
  std::vector<StepRecord> window_;
  std::vector<double> measured_step_s_;
  int depth_ = 0;
  bool in_backward_ = false;
  const void* step_owner_ = nullptr;
  bool head_open_ = false;
  double micro_enter_ = 0;
  std::optional<double> prev_exit_;
  int device_ = -1;
  void* stream_ = nullptr;
  std::int64_t params_ = 0;
  std::int64_t trainable_ = 0;
  bool checkpointing_ = false;
  std::optional<AttentionWidths> attention_;
  std::int64_t text_tokens_ = 0;
  bool finished_ = false;
  bool in_use_ = false;
  std::unique_ptr<TraceState> trace_;
};

// The process-wide engine's trainer, or nullptr when metrics are off.
Trainer* trainer();

namespace detail {
// The trainer whose micro-step is open on this thread (set by MicroStep), or nullptr. Lets a
// module wrapper attribute its calls to the right trainer without being told.
inline thread_local Trainer* active_trainer = nullptr;
}  // namespace detail

// ---- RAII scopes (stack only). Each is inert when its trainer is nullptr. ----------------------

class MicroStep {
 public:
  explicit MicroStep(Trainer* t = trainer()) noexcept;
  ~MicroStep();
  MicroStep(const MicroStep&) = delete;
  MicroStep& operator=(const MicroStep&) = delete;
  static void* operator new(std::size_t) = delete;

 private:
  Trainer* trainer_;
  Trainer* outer_ = nullptr;
};

// One model call, classified into its phase (vae_enc, vae_dec, text_encoder, aux or fwd). For
// the forward of the trained model, `tokens` per sample and `samples` in the call price the step.
class ModelCall {
 public:
  explicit ModelCall(Phase phase, std::int64_t tokens = 0, std::int64_t samples = 1,
                     Trainer* t = trainer()) noexcept;
  ~ModelCall();
  ModelCall(const ModelCall&) = delete;
  ModelCall& operator=(const ModelCall&) = delete;
  static void* operator new(std::size_t) = delete;

 private:
  Trainer* trainer_;  // nullptr when not timed
  Phase phase_;
  std::int64_t tokens_, samples_;
  Marker start_;
};

class Backward {
 public:
  explicit Backward(Trainer* t = trainer()) noexcept;
  ~Backward();
  Backward(const Backward&) = delete;
  Backward& operator=(const Backward&) = delete;
  static void* operator new(std::size_t) = delete;

 private:
  Trainer* trainer_;
  Marker start_;
};

class Clip {
 public:
  explicit Clip(Trainer* t = trainer()) noexcept;
  ~Clip();
  Clip(const Clip&) = delete;
  Clip& operator=(const Clip&) = delete;
  static void* operator new(std::size_t) = delete;

 private:
  Trainer* trainer_;
  Marker start_;
};

// One optimizer step call. `optimizer` identifies the optimizer (its address); `synced` says
// whether this call really stepped (false on a gradient-accumulation pass-through).
class OptimizerStep {
 public:
  explicit OptimizerStep(const void* optimizer, bool synced = true,
                         Trainer* t = trainer()) noexcept;
  ~OptimizerStep();
  OptimizerStep(const OptimizerStep&) = delete;
  OptimizerStep& operator=(const OptimizerStep&) = delete;
  static void* operator new(std::size_t) = delete;

 private:
  Trainer* trainer_;
  const void* optimizer_;
  bool synced_;
  Marker start_;
};

}  // namespace vxperf
