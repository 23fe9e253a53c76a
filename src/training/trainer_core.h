// The training half's step lifecycle (internal; vxperf::Trainer is its public face): measurement
// points in, settled steps out, windows handed to window.h's aggregation.
//
// Thread safety: for the one thread that runs the training loop.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "output/checkpoint_steps.h"
#include "pricing/pricing.h"
#include "runtime/context.h"
#include "training/marker.h"
#include "training/xrank_view.h"
#include "vxperf/observer.h"
#include "vxperf/sink.h"
#include "vxperf/training.h"
#include "vxperf/xrank.h"

namespace vxperf::internal {

class TrainerCore {
 public:
  explicit TrainerCore(Context& engine);
  ~TrainerCore();

  void register_model(const ModelInfo& info);
  // Sets the trained model outright, whatever its size (replay's train_model event).
  void set_model(const ModelInfo& info);
  // The program begins setting up its training (model, wrapping, optimizer) at `t`: the ledger's
  // start-up ends there. Once, before the loop's first point; set_device marks it too.
  void mark_setup(double t);
  void set_device(int device, void* stream);
  void finish();
  void stop_exchanges(const std::string& why);

  // The engine is off in a forked child (runtime/fork_guard.h). The measurement points stay as
  // cheap as ever there: no device event is recorded, no step closes (so nothing settles, is
  // written or exchanged), the open step is kept empty.
  bool off() const noexcept { return forked_; }
  void mark_forked() noexcept;

  std::int64_t steps_closed() const { return num_steps_; }
  // Whether a training loop is using this trainer (a model was registered or a micro-step run).
  bool in_use() const { return in_use_; }
  std::size_t pending_steps() const { return pending_.size(); }
  // The index the next recorded pair belongs to (for replay's readiness scripting).
  std::int64_t current_step_index() const { return step_ ? step_->index : num_steps_; }

  // ---- measurement points ----
  double now();
  Marker mark();  // host clock plus a device event when training on a device
  void enter_micro(double now);
  void exit_micro(double now);
  // Whether a model call starting now would be timed (not nested, not inside a backward).
  bool model_call_timed() const { return depth_ == 0 && !in_backward_; }
  // Whether a micro-step is open (between its enter and exit).
  bool in_micro() const { return in_micro_; }
  void begin_model_call(double start_s);
  // Observers of the points of the step in progress (the engine's as the step began); nullptr
  // when there are none (the usual case) or in a forked child.
  const ObserverList* observers() const { return observers_; }
  // Tells observers of a phase's begin (before its mark is read) and end (after); one pointer
  // test without observers.
  void phase_begins(std::string_view name) {
    if (observers_ != nullptr) tell_phase_begins(name);
  }
  void phase_ends(std::string_view name, double t0, double t1) {
    if (observers_ != nullptr) tell_phase_ends(name, t0, t1);
  }
  // `fraction`: of a full forward the call computed (1 full, 0 skipped); `attn_fraction`: of its
  // attention products, where said apart (<0: as `fraction`; what its blocks computed says).
  // `dtype`: what its matmuls ran in, when the front end read it (else what note_dtype said).
  void end_model_call(Phase phase, Marker start, Marker end, std::int64_t tokens,
                      std::int64_t samples, double fraction = 1.0,
                      std::optional<Dtype> dtype = std::nullopt, double attn_fraction = -1);
  // The forward open now (else the last one of the current step) computed `fraction` of the
  // model; ModelCall::set_fraction says the same from the call's own scope.
  void note_fraction(double fraction);
  // What the blocks of the forward open now computed (its tokens, samples and share).
  void note_work(const ForwardWork& work);
  // The forward open now (else the last one of the current step) ran its matmuls in `dtype`.
  void note_dtype(Dtype dtype);
  void begin_backward(double start_s);
  void end_backward(Marker start, Marker end);
  // A call phase's call (clip, or any kCall phase that does not bound the step), or a call outside
  // the steps (a checkpoint's save or restore, an evaluation: `bytes` written or read, -1 not
  // said), whose time is taken out of the step it falls in.
  // A checkpoint's `path`, where said: a save's step is kept (output/checkpoint_steps.h), and a
  // restore before this process's first step without `resume_step` (-1) goes on from the step
  // its checkpoint was saved at.
  void add_call(Phase phase, Marker start, Marker end, std::int64_t bytes = -1,
                std::string_view path = {}, std::int64_t resume_step = -1);
  // The loop goes on from global step `step` (a checkpoint restored): the next step closed is
  // numbered `step`. What settled before goes out first, so no window spans the jump.
  void resume_at(std::int64_t step);
  void add_optimizer_step(Marker start, Marker end, const void* optimizer, bool synced);
  // A call outside the steps opened (its add_call closes it): one never closed is said at finish.
  void outside_opened() { ++outside_open_; }
  bool outside_open() const { return outside_open_ > 0; }

 private:
  struct Pair {
    Marker start, end;
    std::uint64_t id = 0;  // what observers know it by; 0: none were told of it
  };
  struct Step : StepCounts {
    std::int64_t index = 0;
    double t0 = 0;
    double total_s = 0;
    double outside_s = 0;  // calls outside the steps that fell in its span, taken out of it
    // Pairs per phase, indexed by Phase; the vectors keep their capacity from step to step.
    std::array<std::vector<Pair>, kPhaseCount> pairs;
    std::vector<Phase> order;  // phases in order of first use
    bool begun = false;        // observers were told it began (at its first point)
    Pair& add(Phase phase, Marker start, Marker end);
    void reset();
  };

  Step& current(double t0);
  // The step in progress, as a point of it is recorded: observers are told it began.
  Step& touch(double t);
  Pair& add_pair(Phase phase, Marker start, Marker end, std::int64_t tokens = 0,
                 std::int64_t samples = 0, const void* optimizer = nullptr, bool synced = false,
                 double fraction = 1.0, std::optional<Dtype> dtype = std::nullopt,
                 double attn_fraction = -1);
  // A span of the step in progress (its index, this trainer's device).
  Span point_span(SpanKind kind, std::string_view name) const;
  Span step_span(const Step& step) const;
  void tell_phase_begins(std::string_view name);
  void tell_phase_ends(std::string_view name, double t0, double t1);
  void close_head(double now);
  void close_step(double t_close);
  // The meters at a step's close: a window's last step ends its interval (the next one's opens
  // at the same reading), any other step marks it.
  void meter_step_close(std::int64_t index);
  // Opens the window's interval at `index`'s start when a device is set and none is open.
  void open_meter(std::int64_t index);
  void drain(bool force);
  bool ready(const Step& step);
  // A window's steps have settled: its record goes out (a full window's is held on rank 0 while
  // the cross-rank view waits for its exchange).
  void settle(Step& step);
  void add_outside(Phase phase, Marker start, Marker end, std::int64_t bytes,
                   std::string_view path, std::int64_t resume_step);
  std::string checkpoint_steps_file() const;
  void emit_window(bool full);
  // The cross-rank view (VIDEOX_PERF_XRANK=1; trainer_exchange.cpp): every rank exchanges a full window's numbers when
  // step `step_last + kSettleLag` closes, a point of the loop that does not depend on when its
  // device events completed, so ranks never wait in the exchange for one another's training.
  bool xrank_on();
  void run_exchanges(std::optional<std::int64_t> closed_step);
  void exchange(RankWindow& numbers, std::optional<TrainWindowRecord>& record);
  void xrank_off(const std::string& why);
  void release_events(Step& step);
  // Observers may write out what has settled (`all`: everything, at finish).
  void tell_progress(bool all);

  // How many later steps may close before an unsettled step is read off the host clock. The loops
  // that sync once per micro-step need none; the margin is for loops that never sync.
  static constexpr std::int64_t kSettleLag = 2;

  Context& engine_;
  bool forked_;  // see off(); set in a forked child only
  const ObserverList* observers_ = nullptr;
  std::int64_t num_steps_ = 0;
  std::int64_t steps_run_ = 0;     // closed in this process (num_steps_ jumps on a resume)
  std::int64_t warmup_from_ = 0;   // the first step of this process: warmup counts from it
  std::unique_ptr<Step> step_;
  std::deque<std::unique_ptr<Step>> pending_;
  std::vector<std::unique_ptr<Step>> spare_;  // settled steps kept for reuse (no allocation)
  std::vector<StepRecord> window_;
  std::vector<double> measured_step_s_;
  int depth_ = 0;
  bool in_backward_ = false;
  const void* step_owner_ = nullptr;
  bool head_open_ = false;
  bool in_micro_ = false;
  bool evaluation_goes_on_ = false;  // the last call was an evaluation's, no step point since
  double micro_enter_ = 0;
  std::optional<double> prev_exit_;
  int device_ = -1;
  // The meters' interval of the window in progress: opened as its first step begins (the first
  // window's at its first point), marked at each step's close, rolled into the next window's at
  // its last step's close. `meter_step_`: the step it opened with (-1: none open).
  Context::Metering meter_;
  std::int64_t meter_step_ = -1;
  // What the meters read over each window whose last step closed, by its first step, until the
  // window settles.
  std::deque<std::pair<std::int64_t, DeviceReadings>> metered_;
  void* stream_ = nullptr;
  ModelInfo model_;  // as priced (priced_model), its trainable count resolved
  bool finished_ = false;
  bool in_use_ = false;
  double pending_fraction_ = -1;        // noted inside the open model call; <0: none
  ForwardWork pending_work_;            // what the open model call's blocks computed
  std::optional<Dtype> pending_dtype_;  // noted inside the open model call
  // The last forward of the current step, for a fraction noted after it closed.
  struct LastForward {
    std::int64_t step = -1;
    std::int64_t samples = 0;
    std::int64_t tokens = 0;
    double fraction = 1.0;
    double attn_fraction = -1;  // <0: as `fraction`
    std::uint64_t id = 0;
  } last_fwd_;
  std::uint64_t next_call_id_ = 1;  // ids of the calls observers are told of
  // The optimizer step being closed now (its close settles steps and may end a window); 0: none.
  std::uint64_t closing_call_ = 0;
  enum class Xrank { kUndecided, kOn, kOff };
  Xrank xrank_ = Xrank::kUndecided;
  struct HeldWindow {
    RankWindow numbers;
    std::optional<TrainWindowRecord> record;  // rank 0's, emitted after the exchange
    WindowDetail detail;
  };
  std::deque<HeldWindow> held_;
  XrankHistory xrank_history_;  // rank 0's, across its views
  // Calls outside the steps since the last window went out: the next window's `outside`.
  OutsideSteps outside_;
  CheckpointSteps checkpoint_steps_;
  // The loop's ledger (vxperf/records.h), kept as steps settle: from its first point, the steps'
  // compute (their time less their data wait: the first's, the later ones' sum and the last
  // kIdealSteps of them, for the ideal step), and every call outside the steps. Bounded per step.
  static constexpr std::size_t kIdealSteps = 4096;
  struct LedgerState {
    std::optional<double> start;
    std::int64_t steps = 0;
    double first_compute_s = 0;
    double later_compute_s = 0;
    std::deque<double> recent_s;  // the later steps' compute, the last kIdealSteps
    double data_s = 0;
    double last_close = 0;
    struct Outside {
      double t0, seconds;
      Phase phase;
    };
    std::vector<Outside> outside;
  } ledger_;
  std::optional<double> setup_at_;  // mark_setup's
  std::int64_t outside_open_ = 0;   // calls outside the steps opened and not closed
  std::int64_t first_closed_ = -1;  // the first step this process closed (-1: none yet)
  // The ledger through the last settled step, or through `until` (the training's end: the calls
  // outside the steps after the last one in their parts, the rest between the steps); nullopt
  // before a step settled.
  std::optional<Ledger> ledger(std::optional<double> until = std::nullopt) const;
  // The final record (TrainEndRecord) at `end`, once every step settled and every window went out;
  // observers are told of it.
  void emit_end(double end);
};

}  // namespace vxperf::internal
