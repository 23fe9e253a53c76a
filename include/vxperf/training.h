// Training measurement: each global step split into phases, with no device synchronize at all.
//
// The measurement points (explicit here, where the reference patched accelerate):
//
//   vxperf::trainer()->register_model(info);       // the trained model; the largest one wins
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

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "vxperf/device.h"
#include "vxperf/internal/trainer.h"
#include "vxperf/model.h"
#include "vxperf/phases.h"

namespace vxperf {

class Trainer {
 public:
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // The model being trained (what the reference read from `prepare`): the largest one registered
  // wins. `info.trainable` (-1: all) and `info.checkpointing` decide the FLOPs multipliers.
  void register_model(const ModelInfo& info);
  // Sets the trained model outright, whatever its size (a re-reading of the same model).
  void set_model(const ModelInfo& info);
  // The program begins setting up its training (building the model, wrapping it, the
  // optimizer): the ledger's start-up, from the process's start, ends here and its set-up begins.
  // Once, before the loop; set_device marks it too.
  void mark_setup();
  // The device this rank trains on and the stream to record events on (-1: host clock only).
  void set_device(int device, void* stream = nullptr);

  // Flushes pending steps and the partial window, writes the training's final record (its ledger
  // through now: "train_end", after a step settled), then prints the summary line. Once.
  void finish();
  // The job was told to stop (a launcher's SIGTERM after a peer died): the cross-rank view goes
  // off, saying `why`, and the windows held for its exchange are written now, without it. Call
  // finish() (or shutdown()) next.
  void stop_exchanges(const std::string& why);
  // The loop goes on from global step `step` (a checkpoint restored by other means than
  // CheckpointRestore): the next step is numbered `step`.
  void resume_at(std::int64_t step);

  std::int64_t steps_closed() const;
  // Closed steps whose timings are still waiting for their device events.
  std::size_t pending_steps() const;
  // Whether a training loop uses this trainer: a model was registered or a micro-step run. (The
  // process-wide trainer exists as soon as anything asks for it; an inference program that asked
  // does not make a wrapped module's calls training calls.)
  bool in_use() const;

 private:
  friend internal::TrainerCore& internal::core_of(Trainer& trainer);
  friend std::unique_ptr<Trainer> internal::make_trainer(internal::Context& engine);
  explicit Trainer(internal::Context& engine);
  std::unique_ptr<internal::TrainerCore> core_;
};

// The process-wide engine's trainer, or nullptr when metrics are off.
Trainer* trainer();

// One measurement point of the training loop: where a scope (or a split begin/end call, see
// vxperf/markers.h) started. `trainer` is nullptr when the point is not timed.
struct TrainMark {
  Trainer* trainer = nullptr;
  double host_s = 0;
  EventId event = kNoEvent;
  Trainer* outer = nullptr;  // a micro-step: the trainer that was active before it
};

// Opens a model call whose phase is known at its begin (what the scopes below and the LibTorch
// wrappers do; vxperf/markers.h has the form that says it only at the end).
TrainMark begin_model_call(Trainer* t, Phase phase) noexcept;

// ---- RAII scopes (stack only). Each is inert when its trainer is nullptr. ----------------------

class MicroStep {
 public:
  explicit MicroStep(Trainer* t = trainer()) noexcept;
  ~MicroStep();
  MicroStep(const MicroStep&) = delete;
  MicroStep& operator=(const MicroStep&) = delete;
  static void* operator new(std::size_t) = delete;

 private:
  TrainMark mark_;
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

  // This forward computed `fraction` of the full model (0: skipped; a forward that ran only some
  // blocks, say). Its samples still count as consumed; its FLOPs, and its backward's, are priced
  // at that fraction, and the window's throughput gains skipped_fwd / effective_fwd.
  void set_fraction(double fraction) noexcept { fraction_ = fraction; }

 private:
  TrainMark mark_;
  Phase phase_;
  std::int64_t tokens_, samples_;
  double fraction_ = 1.0;
};

class Backward {
 public:
  explicit Backward(Trainer* t = trainer()) noexcept;
  ~Backward();
  Backward(const Backward&) = delete;
  Backward& operator=(const Backward&) = delete;
  static void* operator new(std::size_t) = delete;

 private:
  TrainMark mark_;
};

// One call of a call phase (vxperf/phases.h: clip, or a program's own such as an EMA update; a
// row and its enumerator are all a new one takes).
class PhaseCall {
 public:
  explicit PhaseCall(Phase phase, Trainer* t = trainer()) noexcept;
  ~PhaseCall();
  PhaseCall(const PhaseCall&) = delete;
  PhaseCall& operator=(const PhaseCall&) = delete;
  static void* operator new(std::size_t) = delete;

 private:
  TrainMark mark_;
  Phase phase_;
};

class Clip : public PhaseCall {
 public:
  explicit Clip(Trainer* t = trainer()) noexcept : PhaseCall(Phase::kClip, t) {}
};

// A call outside the steps: a checkpoint saved or restored, an evaluation. Its seconds (host
// clock) and bytes go to the next window's "outside" object and are taken out of the step they
// fall in, so a save every N steps never shows as a slow step or a long data wait.
class OutsideCall {
 public:
  explicit OutsideCall(Phase phase, Trainer* t = trainer()) noexcept;
  ~OutsideCall();
  OutsideCall(const OutsideCall&) = delete;
  OutsideCall& operator=(const OutsideCall&) = delete;
  static void* operator new(std::size_t) = delete;

  // Bytes written (a save) or read (a restore), where the program knows them.
  void set_bytes(std::int64_t bytes) noexcept { bytes_ = bytes; }

 protected:
  TrainMark mark_;
  Phase phase_;
  std::int64_t bytes_ = -1;
  std::string path_;
  std::int64_t resume_step_ = -1;
};

// `path`: the checkpoint's (a folder, a file), as the program names it when it restores it (a
// relative one is taken from the working directory). The step it was saved at is kept beside the
// records file, so that a later attempt of the job that restores it, on any rank, numbers its
// steps on from there.
class CheckpointSave : public OutsideCall {
 public:
  explicit CheckpointSave(Trainer* t = trainer()) noexcept : OutsideCall(Phase::kSave, t) {}
  void set_path(std::string path) { path_ = std::move(path); }
};

// The loop goes on from the step the checkpoint at `path` was saved at (a save vxperf timed, in
// this attempt or an earlier one, on this rank or another of the job: the latest save of the path
// any rank's file holds), or from `set_step`'s when the program knows it.
class CheckpointRestore : public OutsideCall {
 public:
  explicit CheckpointRestore(Trainer* t = trainer()) noexcept : OutsideCall(Phase::kRestore, t) {}
  void set_path(std::string path) { path_ = std::move(path); }
  void set_step(std::int64_t step) noexcept { resume_step_ = step; }
};

class Evaluation : public OutsideCall {
 public:
  explicit Evaluation(Trainer* t = trainer()) noexcept : OutsideCall(Phase::kEval, t) {}
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
  TrainMark mark_;
  const void* optimizer_;
  bool synced_;
};

}  // namespace vxperf
