// The Python extension's only door into the C++ engine.
//
// Everything the extension (the pybind11 module, the C-implemented timed callables) needs from the
// engine is a free function here, over plain values and the engine's public types (vxperf/*.h);
// binding_api.cpp implements them over the public API alone (vxperf/markers.h, vxperf/config.h,
// ...): the extension is a front end like any other program.
//
// Conventions:
//   * Stages are small integers interned once from their names (stage_id).
//   * A "mark" is an opaque value returned when a measured interval opens and handed back when it
//     closes; callers keep it on their stack and never look inside.
//   * Every function is safe to call with metrics off: it does nothing (and answers false/empty).
//   * Streams are plain integers (a CUDA stream handle as torch reports it; 0 = the default).
//
// Thread safety: requests and stages are per calling thread (the engine keeps the open request in
// a thread-local); the training functions are for the one thread that runs the training loop.
// Functions that may call back into Python (the memory callbacks of use_cuda_backend, the rank
// exchange of set_rank_exchange) are called by the engine at request begin/end and window ends,
// on the thread that made the call.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "vxperf/cuda_backend.h"
#include "vxperf/inference.h"
#include "vxperf/metric_family.h"
#include "vxperf/model.h"
#include "vxperf/observer.h"
#include "vxperf/peak.h"
#include "vxperf/phases.h"
#include "vxperf/topology.h"
#include "vxperf/training.h"

namespace vxperf::binding {

// ---- the process-wide engine ----------------------------------------------------------------

// Creates the process-wide engine if it does not exist yet. level > 0: metrics on at that level,
// whatever VIDEOX_PERF says; level <= 0: from the environment. Returns whether metrics are on.
// Once created, the engine stays as it is (a later call only answers).
bool configure(int level);
// Whether the engine has been created (configure was called or an engine call made one).
bool configured();
// Adds `observer` to the process-wide engine (vxperf/observer.h); false with metrics off.
bool add_observer(std::shared_ptr<vxperf::Observer> observer);
// VIDEOX_PERF_PROFILE's range: ("steps" or "requests", first, last), nullopt when none is set or
// metrics are off.
std::optional<std::tuple<std::string, std::int64_t, std::int64_t>> capture_range();
// Whether metrics are on (creates the engine from the environment if needed).
bool enabled();
// VIDEOX_PERF level in effect (0 when off).
int level();
// Whether the cost model prices core attention (VIDEOX_PERF_FLOPS_ATTN).
bool attention_pricing();
// A warning or notice line on the engine's output (stderr); printed by every rank.
void notice(const std::string& line);
// "[Perf][rankN] " + text, where this rank logs (rank 0, or every rank with VIDEOX_PERF_RANKS=all).
void perf_line(const std::string& text);
// Training steps per window (VIDEOX_PERF_EVERY).
std::int64_t window_steps();
// Prints the exit summaries now (training first), once. Idempotent.
void shutdown();
// The library's version ("0.2.0").
std::string version();

// ---- Prometheus -------------------------------------------------------------------------------

// The Prometheus exposition text of every record settled since the first call (which adds a
// Prometheus sink to the engine); "" while metrics are off.
std::string prometheus_text();
// The same metrics as families (the structured path the Python collector reads); empty while off.
std::vector<FamilySnapshot> prometheus_families();

Topology topology();
void set_topology(int rank, int world_size);
void set_parallel(const ParallelSpec& spec);

// ---- models -----------------------------------------------------------------------------------

// Prices the forwards of inference stage `stage` ("transformer", "transformer_2", ...): for this
// thread's open request alone when one is open, else for every request.
void declare_model(const std::string& stage, const ModelInfo& model);

// ---- measured peaks (vxperf/peak.h)
// --------------------------------------------------------------

// Whether the engine wants a measured peak (VIDEOX_PERF_PEAK_TFLOPS=auto). False when off.
bool wants_measured_peak();
// The cache key of the host CPU probed with `threads` threads.
std::string cpu_device_key(int threads);
std::string peak_cache_path();
// The cached peak of `device` (a cache key) in `dtype`, else `probe`'s (then cached; `force`:
// measure even when cached). nullopt when neither, or `dtype` is unknown. Problems go to stderr.
std::optional<Calibration> calibrate(const std::string& device, const std::string& dtype,
                                     const std::function<std::optional<MeasuredPeak>()>& probe,
                                     bool force);
// VIDEOX_PERF_DTYPE ("" when unset or off): the dtype the engine prices with, whatever a model
// says, and so the one to probe.
std::string dtype_override();
// Hands a measured peak of `device` (-1: the host) in `dtype` to the engine.
void set_measured_peak(int device, const std::string& dtype, double tflops);

// ---- devices ----------------------------------------------------------------------------------

// Times devices with the CUDA driver backend made from `options` (its library, "" = the system
// driver; its peak-memory provider; its notices go to the engine's output). `device` is the first
// device about to be named. False (host-only timing stays) when the driver or a device is absent;
// the reason is printed once.
bool use_cuda_backend(CudaOptions options, int device);

// ---- inference --------------------------------------------------------------------------------

std::uint32_t stage_id(const std::string& name);

// Whether a request is open on this thread.
bool in_request();
// Whether a training loop uses the process's trainer (a model registered, a micro-step entered).
bool training_in_use();

// Opens a request on this thread (device -1: host clock only, no device call). Returns its handle,
// or nullptr when metrics are off or a request is already open here (the outer one owns the
// stages). own_models: priced only by models declared inside it (a pipeline's own components).
// videos: what the call generates (a batch of prompts, several per prompt), at least 1. queue_s:
// the seconds it waited before (negative: not said); frames at fps: the video it makes (0: not
// said).
// from_queue: it leaves the server's queue as it begins (note_queued said it entered).
const void* begin_request(int device, std::uintptr_t stream, bool own_models,
                          std::int64_t videos = 1, double queue_s = -1, std::int64_t frames = 0,
                          double fps = 0, bool from_queue = false);
// A server's queue grew (+1) or lost a request unserved (-1): vxperf::note_queued.
void note_queued(std::int64_t delta);
// The denoising steps this thread's open request ran (vxperf::note_denoising_steps); below 1 or
// outside a request, nothing.
void note_denoising_steps(std::int64_t steps);
// Closes and reports the request `handle` names, when it is still this thread's open request (one
// synchronize of its device first). `failed`: the measured call raised; reported all the same.
void end_request(const void* handle, bool failed);

// Whether this thread's open request has no token count yet for `stage` (so a caller that can
// infer one should). False outside a request.
bool stage_needs_tokens(std::uint32_t stage);
// Opens one call of `stage` in this thread's request (inert outside one). tokens: latent tokens
// per sample (0 unknown), batch: samples per call; the first known count of a stage prices it.
StageMark begin_stage(std::uint32_t stage, std::int64_t tokens, std::int64_t batch);
// Closes the call and records it.
void end_stage(const StageMark& mark);
// Forgets the call without recording it (releases its device event).
void drop_stage(const StageMark& mark);
// The call of `stage` open on this thread (else the last one closed) computed `fraction` of a
// full forward (0: skipped); outside a request, the training forward open now (else the last one
// of the current step). See vxperf/inference.h.
void note_forward_fraction(std::uint32_t stage, double fraction);
// What the blocks of the call of `stage` open on this thread computed (vxperf::ForwardWork, read
// by the block probes); outside a request, of the training forward open now.
void note_forward_work(std::uint32_t stage, const ForwardWork& work);
// The call of `stage` open on this thread (else the last one closed) ran its matmuls in `dtype`
// ("bf16", ...; the autocast state at the call): its stage is priced at that dtype's peak (the
// first one said wins). Outside a request, the training forward open now. Unknown names: ignored.
void note_compute_dtype(std::uint32_t stage, const std::string& dtype);
// Calls of `stage` closed so far in this thread's open request (0 outside one).
std::int64_t closed_calls(std::uint32_t stage);
// Calls of `stage` open now in this thread's request (0 outside one).
std::int64_t open_calls(std::uint32_t stage);

// ---- training ---------------------------------------------------------------------------------

// The phase table (vxperf/phases.h): names in order, and how each is timed.
const std::array<PhaseInfo, kPhaseCount>& phases();
// Phase ids: a phase's index in the phase table (vxperf/phases.h: "data", "prep", "vae_enc",
// "vae_dec", "text_encoder", "aux", "fwd", "bwd", "clip", "opt", "other"); -1 for another name.
int phase_id(const std::string& name);

// Whether a training loop uses the trainer (a model registered or a micro-step run).
bool training_active();
// The device the trainer times on (-1: host clock only) and the stream to record events on.
void train_set_device(int device, std::uintptr_t stream);
// The trained model. replace=false: kept only if larger than the one registered (what a prepare
// of several modules does); true: replaces it (a re-reading of the same model).
void train_register_model(const ModelInfo& model, bool replace);
void train_micro_enter();
void train_micro_exit();
// Whether a model call starting now would be timed (not nested in another, not in a backward).
bool train_call_timed();
// `phase`: the call's phase where known at its start (its ranges are named so), -1: said at the
// end.
TrainMark train_call_begin(int phase = -1);
void train_call_end(const TrainMark& mark, int phase, std::int64_t tokens, std::int64_t samples,
                    double fraction = 1.0);
TrainMark train_backward_begin();
void train_backward_end(const TrainMark& mark);
// One call of a call phase (clip, or another call phase of the table that leaves the step where
// it is: vxperf/phases.h); a phase that is not one is not timed.
TrainMark train_call_phase_begin(int phase);
void train_call_phase_end(const TrainMark& mark, int phase);
// A call outside the steps (save, restore, eval); `bytes` -1: not said.
TrainMark train_outside_begin(int phase);
// A checkpoint's `path` ("" none) and a restore's `resume_step` (-1: the step its save was at).
void train_outside_end(const TrainMark& mark, int phase, std::int64_t bytes,
                       const std::string& path, std::int64_t resume_step);
TrainMark train_optimizer_begin();
// owner: identifies the optimizer (the first to close a step owns the boundary); synced: whether
// this call really stepped (false on a gradient-accumulation pass-through).
void train_optimizer_end(const TrainMark& mark, std::uintptr_t owner, bool synced);
std::int64_t train_steps_closed();
std::int64_t train_pending_steps();
// Settles every pending step, emits the partial window and prints the training summary. Once.
void train_finish();
// Trainer::stop_exchanges: the held windows written now, the cross-rank view off.
void train_stop_exchanges(const std::string& why);
// Trainer::mark_setup: the program begins setting up its training.
void train_mark_setup();

// ---- the live cross-rank view (VIDEOX_PERF_XRANK=1) --------------------------------------------

// VIDEOX_PERF_TRACKERS: 1 or 0 as set, -1 unset (or metrics off).
int trackers_setting();

// VIDEOX_PERF_OTEL=1: requests as OpenTelemetry spans.
bool otel_requested();

// Whether VIDEOX_PERF_XRANK asks for the view, and how long one exchange may take (seconds).
bool xrank_requested();
double xrank_timeout_s();
// How many numbers each rank contributes to an exchange.
std::size_t xrank_width();
// The all-gather behind the view, called on the training thread at window ends: handed this
// rank's numbers, returns every rank's (xrank_width() each), or nullopt on failure; it may throw
// (the message is reported when the view goes off).
using PackedExchange =
    std::function<std::optional<std::vector<std::vector<double>>>(const std::vector<double>& mine)>;
void set_rank_exchange(PackedExchange exchange);

}  // namespace vxperf::binding
