// Observers: every measurement point the engine sees, as it sees it.
//
// A record sink (vxperf/sink.h) gets what a request or a window came to; an observer gets the
// points themselves: every request, stage, training step, micro-step and phase as it opens and
// closes (with its name and device, on the thread that opens or closes it), then the numbers
// behind them once they are known (each call's device time, a window's device readings) and the
// declarations that price them. The live trace (VIDEOX_PERF_TRACE) is one observer; a range
// emitter for Nsight (NVTX) or the torch profiler is another: on_begin pushes a range named
// span.name, on_end pops it.
//
//   struct Ranges : vxperf::Observer {
//     void on_begin(const vxperf::Span& s) override { nvtxRangePushA(std::string(s.name).c_str()); }
//     void on_end(const vxperf::Span&) override { nvtxRangePop(); }
//   };
//   engine->add_observer(std::make_shared<Ranges>());
//
// Cost: with no observer attached, a measurement point tests one pointer. An observer is told of
// a begin before the point reads its clock and of an end after, so that its own cost stays outside
// the interval it observes.
//
// Thread safety: spans of requests come from the threads running them, concurrently; spans of
// training and every on_train_* call from the training thread; on_request from the thread that
// settled the request. An exception an observer throws is swallowed: measurement goes on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vxperf/cost_model.h"
#include "vxperf/device.h"
#include "vxperf/model.h"
#include "vxperf/peak.h"
#include "vxperf/phases.h"
#include "vxperf/topology.h"

namespace vxperf {

enum class SpanKind : std::uint8_t { kRequest, kStage, kStep, kMicroStep, kPhase };

// One opening or closing.
struct Span {
  SpanKind kind = SpanKind::kStage;
  // The stage's or phase's name ("transformer", "fwd", "clip", "opt"); "request", "step",
  // "micro_step". Valid for the life of the process. A model call's phase is known at its begin
  // only when the caller said it there (ModelCall, the LibTorch wrappers); else it begins as
  // "model_call" and ends under its phase.
  std::string_view name;
  int device = -1;         // the device it is timed on; -1: the host clock only
  std::int64_t index = 0;  // a request's number; for a step, micro-step or phase, the step's
  // Host seconds on the engine's clock. At a begin, t0 is the point's time when it was read before
  // observers were told (a micro-step, a step), else 0; at an end, both ends.
  double t0 = 0, t1 = 0;
};

// One timed call of a request, as settled at the request's end.
struct SettledCall {
  std::string_view stage;
  double t0 = 0, t1 = 0;            // host seconds
  std::optional<double> device_ms;  // the device's span, when it was read
  // The stage's pricing shape, as its calls said it first: latent tokens per sample (0: unknown)
  // and samples per call; and the dtype its matmuls ran in, when said.
  std::int64_t tokens = 0;
  std::int64_t batch = 1;
  std::optional<Dtype> dtype;
  double fraction = 1.0;      // of a full forward it computed
  double attn_fraction = -1;  // of the attention products, where said apart; <0: as fraction
};

struct SettledRequest {
  std::int64_t index = 0;
  int device = -1;
  double t0 = 0, t1 = 0;
  bool failed = false;
  std::int64_t videos = 1;                // generated (RequestOptions::videos)
  std::int64_t denoising_steps = 0;       // its sampler steps, where said (0: not said)
  double queue_s = -1;                    // RequestOptions::queue_s (-1: not said)
  std::int64_t frames = 0;                // RequestOptions::frames and fps (0: not said)
  double fps = 0;
  std::vector<SettledCall> calls;         // in closing order
  std::optional<DeviceReadings> readings;  // with a device
  // Transformers declared for this request alone (declare_request_model), as declared.
  std::vector<std::pair<std::string, ModelInfo>> models;
};

// One timed call of a training step (a phase, a clip, an optimizer step) as it closed.
struct TrainCall {
  std::uint64_t id = 0;  // names it in later notes and in its settlement
  Phase phase = Phase::kForward;
  std::int64_t step = 0;
  double t0 = 0, t1 = 0;
  std::int64_t tokens = 0;  // a priced forward's tokens per sample (0: not priced)
  std::int64_t samples = 0;
  double fraction = 1.0;
  double attn_fraction = -1;  // of its attention products, where said apart; <0: as fraction
  std::optional<Dtype> dtype;
  const void* optimizer = nullptr;  // an optimizer step's optimizer, and whether it really stepped
  bool synced = false;
  std::int64_t bytes = -1;  // a checkpoint's bytes written or read, where said (-1: not said)
  // A restore's: the step the loop goes on from, the one its checkpoint was saved at (-1: not
  // known, the numbering goes on).
  std::int64_t resume_step = -1;
};

// What a front end said of a training call after it closed (a hook outside the timed call).
struct TrainCallNote {
  std::optional<double> fraction;
  std::optional<Dtype> dtype;
};

class Observer {
 public:
  virtual ~Observer() = default;

  // ---- spans ----
  virtual void on_begin(const Span& span) { (void)span; }
  virtual void on_end(const Span& span) { (void)span; }

  // ---- inference: a request settled (after its line and before its record go out) ----
  virtual void on_request(const SettledRequest& request) { (void)request; }

  // ---- training ----
  virtual void on_train_call(const TrainCall& call) { (void)call; }
  virtual void on_train_note(std::uint64_t id, const TrainCallNote& note) {
    (void)id;
    (void)note;
  }
  // A call's device time, read `ready_after` steps after its own step closed (nullopt: read off
  // the host clock).
  virtual void on_train_settled(std::uint64_t id, std::optional<double> device_ms,
                                std::int64_t ready_after) {
    (void)id;
    (void)device_ms;
    (void)ready_after;
  }
  // The trainer has settled what it could (`all`: everything, at finish); `device` it trains on.
  virtual void on_train_progress(int device, bool all) {
    (void)device;
    (void)all;
  }
  // A window's device readings, read as it closed: inside the call `closing_call` (the optimizer
  // step whose close settled it), or at finish (nullopt).
  virtual void on_window_readings(const DeviceReadings& readings,
                                  std::optional<std::uint64_t> closing_call) {
    (void)readings;
    (void)closing_call;
  }

  // ---- declarations ----
  // A transformer priced in every request from now on (Engine::declare_model).
  virtual void on_model(std::string_view stage, const ModelInfo& info) {
    (void)stage;
    (void)info;
  }
  // The trained model; `trainable` resolved (all parameters when info.trainable < 0).
  virtual void on_train_model(const ModelInfo& info, std::int64_t trainable) {
    (void)info;
    (void)trainable;
  }
  // The job's rank, world size or parallel layout changed (Engine::set_topology, set_parallel).
  virtual void on_topology(const Topology& topology) { (void)topology; }
  // The program began setting up its training at `t` (Trainer::mark_setup; its device set).
  virtual void on_train_setup(double t) { (void)t; }
  // The training ended at `t` (the trainer's finish), its final record written: what settled
  // before has been told (on_train_progress with everything).
  virtual void on_train_end(double t) { (void)t; }
  // Every moment told with nothing but its time (on_train_setup, on_train_end, ...), also told
  // here first, by its event-script name (docs/EVENT_SCRIPTS.md): one override follows them all.
  virtual void on_point(std::string_view event, double t) {
    (void)event;
    (void)t;
  }
  // A measured peak handed to the engine (device -1: the host).
  virtual void on_peak(int device, const MeasuredPeak& peak) {
    (void)device;
    (void)peak;
  }
  // The engine shut down (its summaries printed), at host time `t`.
  virtual void on_finish(double t) { (void)t; }

  // ---- capture ranges ----
  // VIDEOX_PERF_PROFILE's range starts (`start`: as its first step or request begins, before
  // that one's clock is read) or stops (after its last one closed; at exit for one that never
  // did), on the thread at that boundary, after the CUDA profiler was told. A torch profiler
  // handed to vxperf.profile_range() is started and stopped here.
  virtual void on_capture(bool start) { (void)start; }
};

}  // namespace vxperf
