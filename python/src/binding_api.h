// The Python extension's only door into the C++ engine.
//
// Everything the extension (the pybind11 module, the C-implemented timed callables) needs from the
// engine is a free function of binding_api.cpp, over plain values and the engine's public types
// (vxperf/*.h), implemented over the public API alone (vxperf/markers.h, vxperf/config.h, ...): the
// extension is a front end like any other program. A call Python makes straight, with plain
// arguments, is defined and registered there alone (define_calls: a new one is its function and
// its line in that table, then _ext.pyi); this header declares what the module's own wrappers
// (Python objects, the GIL, records handed back) and the C types call.
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

namespace pybind11 {
class module_;
}  // namespace pybind11

namespace vxperf::binding {

// Registers every call Python makes straight on the engine (`m`: the extension module, after the
// types those calls name); the table is at the end of binding_api.cpp.
void define_calls(pybind11::module_& m);

// ---- the process-wide engine ----------------------------------------------------------------

// Creates the process-wide engine if it does not exist yet. level > 0: metrics on at that level,
// whatever VIDEOX_PERF says; level <= 0: from the environment. Returns whether metrics are on.
// Once created, the engine stays as it is (a later call only answers).
bool configure(int level);
// Adds `observer` to the process-wide engine (vxperf/observer.h); false with metrics off.
bool add_observer(std::shared_ptr<vxperf::Observer> observer);
// Whether metrics are on (creates the engine from the environment if needed).
bool enabled();
// Prints the exit summaries now (training first), once. Idempotent.
void shutdown();

// ---- Prometheus -------------------------------------------------------------------------------

// The Prometheus exposition text of every record settled since the first call (which adds a
// Prometheus sink to the engine); "" while metrics are off.
std::string prometheus_text();
// The same metrics as families (the structured path the Python collector reads); empty while off.
std::vector<FamilySnapshot> prometheus_families();

Topology topology();
void set_parallel(const ParallelSpec& spec);

// ---- models -----------------------------------------------------------------------------------

// Prices the forwards of inference stage `stage` ("transformer", "transformer_2", ...): for this
// thread's open request alone when one is open, else for every request.
void declare_model(const std::string& stage, const ModelInfo& model);

// ---- measured peaks (vxperf/peak.h)
// --------------------------------------------------------------

// The cached peak of `device` (a cache key) in `dtype`, else `probe`'s (then cached; `force`:
// measure even when cached). nullopt when neither, or `dtype` is unknown. Problems go to stderr.
std::optional<Calibration> calibrate(const std::string& device, const std::string& dtype,
                                     const std::function<std::optional<MeasuredPeak>()>& probe,
                                     bool force);

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
// What the blocks of the call of `stage` open on this thread computed (vxperf::ForwardWork, read
// by the block probes); outside a request, of the training forward open now.
void note_forward_work(std::uint32_t stage, const ForwardWork& work);
// The call of `stage` open on this thread (else the last one closed) ran its matmuls in `dtype`
// ("bf16", ...; the autocast state at the call): its stage is priced at that dtype's peak (the
// first one said wins). Outside a request, the training forward open now. Unknown names: ignored.
void note_compute_dtype(std::uint32_t stage, const std::string& dtype);

// ---- training ---------------------------------------------------------------------------------

// The phase table (vxperf/phases.h): names in order, and how each is timed.
const std::array<PhaseInfo, kPhaseCount>& phases();

// The trained model. replace=false: kept only if larger than the one registered (what a prepare
// of several modules does); true: replaces it (a re-reading of the same model).
void train_register_model(const ModelInfo& model, bool replace);
// Whether a model call starting now would be timed (not nested in another, not in a backward).
bool train_call_timed();
// `phase`: the call's phase where known at its start (its ranges are named so), -1: said at the
// end.
TrainMark train_call_begin(int phase = -1);
void train_call_end(const TrainMark& mark, int phase, std::int64_t tokens, std::int64_t samples,
                    double fraction = 1.0);
// owner: identifies the optimizer (the first to close a step owns the boundary); synced: whether
// this call really stepped (false on a gradient-accumulation pass-through).
void train_optimizer_end(const TrainMark& mark, std::uintptr_t owner, bool synced);
// Settles every pending step, emits the partial window and prints the training summary. Once.
void train_finish();
// Trainer::stop_exchanges: the held windows written now, the cross-rank view off.
void train_stop_exchanges(const std::string& why);

// ---- the live cross-rank view (VIDEOX_PERF_XRANK=1) --------------------------------------------

// The all-gather behind the view, called on the training thread at window ends: handed this
// rank's numbers, returns every rank's (xrank_width() each), or nullopt on failure; it may throw
// (the message is reported when the view goes off).
using PackedExchange =
    std::function<std::optional<std::vector<std::vector<double>>>(const std::vector<double>& mine)>;
void set_rank_exchange(PackedExchange exchange);

}  // namespace vxperf::binding
