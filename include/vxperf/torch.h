// The LibTorch adapter: reads models (C++ frontend modules and TorchScript modules) and wraps
// components so that every forward is a timed stage (inference) or phase (training), without
// editing the models.
//
//   auto dit = vxperf::torch::instrument(MiniDiT(config), vxperf::torch::Role::kTransformer);
//   auto reading = vxperf::torch::read_model(*dit.module());
//   vxperf::engine()->declare_model("transformer", reading.info());  // if metrics are on
//   ... dit(latents, t, context) ...  // a StageScope inside a request, a ModelCall in training
//
// Inside an open RequestScope a wrapped call is an inference stage; otherwise, while the
// process-wide trainer exists (metrics on), it is a training model call (the trainer folds nested
// calls and calls made during a backward). With metrics off a call costs two pointer tests.
//
// This header includes Torch; the core library never does.
#pragma once

#include <torch/script.h>
#include <torch/torch.h>

#include <functional>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "vxperf/device.h"
#include "vxperf/inference.h"
#include "vxperf/observer.h"
#include "vxperf/stages.h"
#include "vxperf/torch_probe.h"
#include "vxperf/torch_reading.h"
#include "vxperf/training.h"

namespace vxperf::torch {

// ---- model reading ------------------------------------------------------------------------------

// What TorchScript keeps as attributes (`text_len`, `patch_size`, `gradient_checkpointing`), a
// C++ frontend module says by also deriving from this.
class ModelTraits {
 public:
  virtual ~ModelTraits() = default;
  virtual std::int64_t text_len() const { return 0; }
  virtual std::optional<PatchSize> patch_size() const { return std::nullopt; }
  virtual bool gradient_checkpointing() const { return false; }
};

// A module that stands in for a linear projection (a LoRA wrapper around a frozen base layer)
// says its output width by deriving from this; torch::nn::Linear is recognized as it is.
class Projection {
 public:
  virtual ~Projection() = default;
  virtual std::int64_t out_features() const = 0;
};

ModelReading read_model(const ::torch::nn::Module& module, const ReadOptions& options = {});
ModelReading read_model(const ::torch::jit::Module& module, const ReadOptions& options = {});

// Latent tokens per sample and samples per call of one transformer forward.
struct TokenShape {
  std::int64_t tokens = 0;
  std::int64_t batch = 0;
};

// From the forward's main input: an explicit `seq_len` (> 0) wins; else a (B, T, D) tensor gives
// T; else a (B, C, F, H, W) latent gives (F/pf)*(H/ph)*(W/pw) with the model's patch size. Anything
// else (or a 5-D latent without a patch size) gives nullopt: unpriced rather than guessed.
std::optional<TokenShape> infer_tokens(const ::torch::Tensor& hidden,
                                       const std::optional<PatchSize>& patch,
                                       std::int64_t seq_len = 0);

// ---- device hooks (CUDA builds of LibTorch) -----------------------------------------------------

// Whether this adapter was built against a CUDA LibTorch.
bool cuda_build();
// The current CUDA stream of `device` as the engine's opaque stream; nullptr on the CPU.
void* current_stream(const ::torch::Device& device);
// The caching allocator's peak allocated/reserved bytes on a CUDA device; nullopt on CPU builds.
std::optional<DeviceReadings> memory_peaks(int device);
void reset_memory_peaks(int device);
// memory_peaks as the provider callback a device backend accepts.
std::function<std::optional<DeviceReadings>(int)> memory_peaks_provider();
// Gives the process-wide engine the CUDA driver backend with the caching allocator's peak
// counters. False (nothing changed) when metrics are off, on a CPU build, or without a driver.
bool use_cuda_backend();

// ---- torch profiler ranges ----------------------------------------------------------------------

// An observer (vxperf/observer.h) that, while a torch profiler records (at::RecordFunction has
// callbacks and samples this range), opens a USER_SCOPE RecordFunction named after each request
// ("request <n>"), stage, step ("step <n>"), micro-step and phase, and ends it at its close: a
// Kineto trace shows them next to the kernels. With no profiler recording a span costs one check.
std::shared_ptr<Observer> profiler_ranges();
// Adds profiler_ranges() to the process-wide engine; false when metrics are off.
bool use_profiler_ranges();

// ---- wrapping -----------------------------------------------------------------------------------

// What a component is (Role::kTransformer, kTextEncoder, kVaeDecode, ...): a row of the
// well-known stage table (vxperf/stages.h), which gives its inference stage, its training phase
// and whether it is priced (its tokens and batch then read from its inputs).
using Role = KnownStage;
// Its stage's name.
const char* role_name(Role role);

// One timed call: opens the stage or model call for `role` and closes it when destroyed.
class CallScope {
 public:
  CallScope(Role role, const ::torch::Tensor* hidden, const std::optional<PatchSize>& patch,
            std::int64_t seq_len) noexcept;
  ~CallScope();
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;
  // The call computed `fraction` of a full forward (0: skipped); see vxperf/inference.h.
  void set_fraction(double fraction) noexcept;

 private:
  std::optional<StageScope> stage_;
  std::optional<ModelCall> call_;
};

namespace internal {
inline const ::torch::Tensor* first_tensor() { return nullptr; }
template <class A, class... Rest>
const ::torch::Tensor* first_tensor(const A& a, const Rest&... rest) {
  if constexpr (std::is_same_v<std::decay_t<A>, ::torch::Tensor>) {
    return &a;
  } else if constexpr (std::is_same_v<std::decay_t<A>, std::vector<c10::IValue>>) {
    for (const auto& v : a)
      if (v.isTensor()) return &v.toTensor();
    return first_tensor(rest...);
  } else {
    return first_tensor(rest...);
  }
}
template <class Holder>
std::optional<PatchSize> patch_of(const Holder& holder) {
  if constexpr (std::is_same_v<Holder, ::torch::jit::Module>) {
    return read_model(holder).patch_size;
  } else {
    auto* traits = dynamic_cast<const ModelTraits*>(holder.get());
    return traits != nullptr ? traits->patch_size() : std::nullopt;
  }
}
}  // namespace internal

// A component whose every forward is timed. `Holder` is a C++ frontend module holder
// (torch::nn::Linear, or a TORCH_MODULE of your own) or a torch::jit::Module.
template <class Holder>
class Timed {
 public:
  Timed(Holder module, Role role) : module_(std::move(module)), role_(role) {
    if (stage_info(role_).priced) patch_ = internal::patch_of(module_);
  }

  template <class... Args>
  decltype(auto) operator()(Args&&... args) {
    CallScope scope(role_, internal::first_tensor(args...), patch_, seq_len_);
    return forward(std::forward<Args>(args)...);
  }

  // A call that computes `fraction` of the full forward (a forward that runs some blocks and
  // reuses the rest): timed as any call, priced at that fraction. A hook inside the forward may
  // say it instead, with vxperf::note_forward_fraction(stage, fraction).
  template <class... Args>
  decltype(auto) partial(double fraction, Args&&... args) {
    CallScope scope(role_, internal::first_tensor(args...), patch_, seq_len_);
    scope.set_fraction(fraction);
    return forward(std::forward<Args>(args)...);
  }

  // A skipped call (a cache hit): `fn` (what the cache does instead, such as adding a stored
  // residual) runs in the forward's place, timed as a call of this component and priced at
  // nothing. `hidden` is the input the forward would have had (for its token count).
  template <class Fn>
  decltype(auto) skip(const ::torch::Tensor& hidden, Fn&& fn) {
    CallScope scope(role_, &hidden, patch_, seq_len_);
    scope.set_fraction(0.0);
    return std::forward<Fn>(fn)();
  }

  // The padded length the blocks run on, when the program knows it (Wan's `seq_len`); 0: infer.
  void set_seq_len(std::int64_t seq_len) { seq_len_ = seq_len; }
  Holder& module() { return module_; }
  const Holder& module() const { return module_; }
  auto* operator->() {
    if constexpr (std::is_same_v<Holder, ::torch::jit::Module>) {
      return &module_;
    } else {
      return module_.get();
    }
  }
  Role role() const { return role_; }

 private:
  template <class... Args>
  decltype(auto) forward(Args&&... args) {
    if constexpr (std::is_same_v<Holder, ::torch::jit::Module>) {
      return module_.forward(std::forward<Args>(args)...);
    } else {
      return module_->forward(std::forward<Args>(args)...);
    }
  }

  Holder module_;
  Role role_;
  std::optional<PatchSize> patch_;
  std::int64_t seq_len_ = 0;
};

// The one line per component.
template <class Holder>
Timed<Holder> instrument(Holder module, Role role) {
  return Timed<Holder>(std::move(module), role);
}

}  // namespace vxperf::torch
