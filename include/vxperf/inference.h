// Inference measurement: a request scope around one pipeline call, a stage scope around each
// component call inside it.
//
//   vxperf::RequestScope request;                        // one pipeline call
//   { vxperf::StageScope s(vxperf::kTextEncoder); ... }  // each component call
//   for (...) { vxperf::StageScope s(vxperf::kTransformer, tokens, batch); ... }
//   { vxperf::StageScope s(vxperf::kVaeDecode); ... }
//
// The current request is per thread: requests on different threads never mix. A request scope
// opened while one is already open on the thread is ignored and its stages belong to the outer
// request. Both scopes are exception-safe: unwinding closes them, and a failed request is still
// reported and leaves nothing behind.
//
// Cost when metrics are off, or outside any request: a stage scope tests one thread-local
// pointer; a request scope loads one relaxed atomic.
//
// Thread safety: scopes are per-thread objects; stage() may be called from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "vxperf/cost_model.h"
#include "vxperf/device.h"
#include "vxperf/internal/request.h"
#include "vxperf/model.h"
#include "vxperf/stages.h"

namespace vxperf {

class Engine;

// Interns `name` (thread-safe; cache the result).
StageId stage(std::string_view name);
const std::string& stage_name(StageId id);

// The well-known stages (vxperf/stages.h), pre-interned in its order. Calls of transformer stages
// ("transformer", "transformer_2", any name starting with "transformer": is_priced_stage) are the
// ones priced in FLOPs and in the step summary.
inline constexpr StageId kTransformer = stage_id(KnownStage::kTransformer);
inline constexpr StageId kTransformer2 = stage_id(KnownStage::kTransformer2);
inline constexpr StageId kTextEncoder = stage_id(KnownStage::kTextEncoder);
inline constexpr StageId kVaeEncode = stage_id(KnownStage::kVaeEncode);  // "vae_enc"
inline constexpr StageId kVaeDecode = stage_id(KnownStage::kVaeDecode);  // "vae_dec"

struct RequestOptions {
  int device = -1;         // device index the pipeline computes on; -1: host only, no device call
  void* stream = nullptr;  // stream to record events on (nullptr: the device's default stream)
  // Price the request only by transformers declared for it (declare_request_model in
  // vxperf/markers.h: a pipeline's own components), never by the engine's declarations.
  bool own_models = false;
  // Videos (or images) the call generates: a batch of prompts, or several per prompt. The record
  // says it and its energy per video (`videos`, `energy_j_per_video`) when it is more than 1.
  std::int64_t videos = 1;
  // Seconds the request waited before this scope opened (a server's queue): the record's
  // `queue_s`. Negative or not finite: not said.
  double queue_s = -1;
  // The video it makes, `frames` at `fps` (0: VIDEOX_PERF_FPS): the record then says its length
  // (`video_s`) and the end-to-end time over it (`realtime_factor`). 0 frames: not said.
  std::int64_t frames = 0;
  double fps = 0;
  // The request comes out of the server's queue (note_queued said it entered): the queued count
  // drops as it begins.
  bool from_queue = false;
  // The sampler steps it runs, each all its transformer calls (two with classifier-free guidance
  // run as two): the record's `denoising_steps`, its time per step beside its time per call.
  // 0: not said (note_denoising_steps may say it later).
  std::int64_t denoising_steps = 0;
};

// Says how many denoising (sampler) steps the request open on this thread ran, when that is
// known only once its loop has run (a scheduler's timesteps, a strength cutting them short); the
// last said wins over RequestOptions::denoising_steps. Below 1, or outside a request, nothing.
void note_denoising_steps(std::int64_t steps) noexcept;

// A server's queue in front of the pipeline: +1 as a request enters it, -1 as one leaves it
// without being served (a client that hung up); a request that begins with
// RequestOptions::from_queue leaves it then. The queued and in-flight counts go to every sink's
// on_request_load (Prometheus: vxperf_requests_queued, vxperf_requests_in_flight). Never below
// 0; inert when metrics are off.
void note_queued(Engine& engine, std::int64_t delta) noexcept;

class RequestScope {
 public:
  // Opens a request on the process-wide engine; inert when metrics are off.
  RequestScope() noexcept : RequestScope(RequestOptions{}) {}
  explicit RequestScope(const RequestOptions& options) noexcept;
  // Opens a request on a given engine (tests, embedding several engines).
  RequestScope(Engine& engine, const RequestOptions& options = {}) noexcept;
  ~RequestScope();

  RequestScope(const RequestScope&) = delete;
  RequestScope& operator=(const RequestScope&) = delete;
  RequestScope(RequestScope&&) = delete;
  RequestScope& operator=(RequestScope&&) = delete;
  static void* operator new(std::size_t) = delete;

  // Whether this scope owns a measured request (false when off, or nested).
  bool active() const { return request_ != nullptr; }

 private:
  void open(Engine& engine, const RequestOptions& options) noexcept;
  internal::Request* request_ = nullptr;
  int exceptions_ = 0;  // in flight at the opening: more at the closing means the call failed
};

// Where one call of a stage started; empty (request == nullptr) outside any request. Opaque to its
// holder: it is handed back, never read.
struct StageMark {
  internal::Request* request = nullptr;
  std::int64_t request_index = 0;  // requests are recycled: the index tells two apart
  std::uint32_t stage = 0;
  EventId e0 = kNoEvent;
  void* stream = nullptr;
  double t0 = 0;
  double fraction = -1;     // of a full forward, when the caller said (set_fraction); <0: not said
  std::int64_t tokens = 0;  // per sample, as the call opened with them; 0: unknown
  std::int64_t batch = 1;
};

// ---- skipped and partial forwards ---------------------------------------------------------------
//
// Caches that skip a transformer forward (TeaCache, cfg-skip: a cache hit reuses a residual) or cut
// it short (first-block cache: one block, then the cached rest) make a call cost a fraction of a
// full forward. Such a call is still timed, but priced at its fraction: 0 for a skipped call (not
// priced at all), 1 for a full one (the default). The request's "dit" then carries `skipped_fwd`
// and `effective_fwd`. Say it on the call's scope (StageScope::set_fraction) or, from code that
// does not hold the scope (a hook deep inside the forward), with note_forward_fraction.

// Marks the call of `stage` open on this thread (the innermost one), or, when none is open, the
// last one closed in this request, as having computed `fraction` (clamped to [0, 1]) of a full
// forward. Outside a request, inside a training micro-step (MicroStep), it marks the trained
// model's forward open now, else the step's last one. Otherwise nothing happens.
void note_forward_fraction(StageId stage, double fraction) noexcept;
inline void note_forward_skipped(StageId stage) noexcept { note_forward_fraction(stage, 0.0); }

// Marks the call of `stage` open on this thread (else the last one closed in this request) with
// what its blocks computed (ForwardWork, vxperf/model.h): the tokens and rows replace those the call opened with (a guess from
// the model's input), so each call is priced at its own length; the share applies unless the
// call's scope or note_forward_fraction said one (a caller knows better than what it sees).
// Outside a request, inside a training micro-step, it marks the trained model's forward open now.
void note_forward_work(StageId stage, const ForwardWork& work) noexcept;

// The dtype the matmuls of a call ran in, as a front end reads it at the call (the autocast state
// in effect, else the parameters' dtype). Marks the call of `stage` open on this thread (else the
// last one closed in this request): the request's calls of that stage are priced against the peak
// of this dtype instead of the declared model's; the first one said wins. Outside a request,
// inside a training micro-step, it says the same of the trained model's forward open now (else the
// step's last one). VIDEOX_PERF_DTYPE still wins over both.
void note_compute_dtype(StageId stage, Dtype dtype) noexcept;

class StageScope {
 public:
  // Times one call of `stage` inside the thread's open request. For a transformer stage, `tokens`
  // (latent tokens per sample) and `batch` (samples per call; 2 under CFG batching) price the
  // call; 0 tokens means unknown (the call is priced at the stage's first known count); a batch
  // of 0 rows costs nothing (a negative one is taken as 1).
  explicit StageScope(StageId stage, std::int64_t tokens = 0, std::int64_t batch = 1,
                      void* stream = nullptr) noexcept {
    if (internal::current_request != nullptr)
      mark_ = internal::open_stage(stage, tokens, batch, stream);
  }
  ~StageScope() {
    if (mark_.request != nullptr) internal::close_stage(mark_);
  }

  // This call computed `fraction` of a full forward (0: skipped, a cache hit); see above.
  void set_fraction(double fraction) noexcept {
    if (fraction >= 0.0) mark_.fraction = fraction > 1.0 ? 1.0 : fraction;
  }
  void skip() noexcept { set_fraction(0.0); }

  StageScope(const StageScope&) = delete;
  StageScope& operator=(const StageScope&) = delete;
  StageScope(StageScope&&) = delete;
  StageScope& operator=(StageScope&&) = delete;
  static void* operator new(std::size_t) = delete;

 private:
  StageMark mark_;
};

// Runs `fn` as one call of `stage` and returns its result.
template <class Fn>
decltype(auto) timed(StageId stage, Fn&& fn) {
  StageScope scope(stage);
  return std::forward<Fn>(fn)();
}

}  // namespace vxperf
