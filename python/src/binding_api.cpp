// binding_api.h over the engine's public API: vxperf/config.h, vxperf/engine.h, vxperf/markers.h
// and the headers of what it configures (peaks, CUDA, Prometheus, the cross-rank view); and the
// table of the calls Python makes straight (define_calls), each registered beside no other file.
#include "binding_api.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <cstdio>
#include <stdexcept>
#include <string_view>

#include "vxperf/config.h"
#include "vxperf/cuda_backend.h"
#include "vxperf/engine.h"
#include "vxperf/markers.h"
#include "vxperf/peak.h"
#include "vxperf/prometheus_sink.h"
#include "vxperf/training.h"
#include "vxperf/version.h"
#include "vxperf/xrank.h"

namespace vxperf::binding {
namespace {

std::atomic<bool> g_configured{false};

Engine* eng() {
  g_configured.store(true, std::memory_order_relaxed);
  return vxperf::engine();
}

Trainer* trainer() { return eng() != nullptr ? vxperf::trainer() : nullptr; }

// The process-wide trainer if the extension has been configured and a trainer was made; never
// makes either.
Trainer* existing_trainer() {
  if (!g_configured.load(std::memory_order_relaxed)) return nullptr;
  Engine* e = vxperf::engine();
  return e != nullptr ? e->existing_trainer() : nullptr;
}

// The trainer a note outside any request is for: the process-wide one, once a loop uses it.
Trainer* training_loop() {
  Trainer* t = existing_trainer();
  return t != nullptr && t->in_use() ? t : nullptr;
}

}  // namespace

// ---- the process-wide engine ----------------------------------------------------------------

bool configure(int level) {
  if (level > 0) {
    // As the reference's install(level=N): on at that level whatever VIDEOX_PERF says, or, when
    // already on, raised to it.
    Config config;
    config.level = level;
    vxperf::configure(std::move(config));
  }
  return eng() != nullptr;
}

// Whether the engine has been created (configure was called or an engine call made one).
bool configured() { return g_configured.load(std::memory_order_relaxed); }

bool enabled() { return eng() != nullptr; }

// VIDEOX_PERF level in effect (0 when off).
int level() {
  Engine* e = eng();
  return e != nullptr ? e->level() : 0;
}

// Whether the cost model prices core attention (VIDEOX_PERF_FLOPS_ATTN).
bool attention_pricing() {
  Engine* e = eng();
  return e != nullptr && e->settings().attn_flops;
}

// A warning or notice line on the engine's output (stderr); printed by every rank.
void notice(const std::string& line) {
  if (Engine* e = eng()) e->notice(line);
}

// "[Perf][rankN] " + text, where this rank logs (rank 0, or every rank with VIDEOX_PERF_RANKS=all).
void perf_line(const std::string& text) {
  Engine* e = eng();
  if (e != nullptr && e->should_log()) {
    e->notice("[Perf][rank" + std::to_string(e->topology().rank) + "] " + text);
  }
}

// Whether this rank prints its [Perf] lines: notices said once a job, not once a rank, follow it.
bool logs_here() {
  Engine* e = eng();
  return e != nullptr && e->should_log();
}

// Training steps per window (VIDEOX_PERF_EVERY).
std::int64_t window_steps() {
  Engine* e = eng();
  return e != nullptr ? e->settings().every : 0;
}

void shutdown() {
  if (configured()) vxperf::shutdown();
}

// The library's version ("0.2.0").
std::string version() { return vxperf::version(); }

// ---- Prometheus -------------------------------------------------------------------------------

namespace {

// The process's one Prometheus sink, added to the engine at the first call and kept for the life
// of the process, as the engine is; nullptr while metrics are off.
PrometheusSink* prometheus_sink() {
  Engine* e = eng();
  if (e == nullptr) return nullptr;
  static std::shared_ptr<PrometheusSink>* sink = [e] {
    auto* made = new std::shared_ptr<PrometheusSink>(std::make_shared<PrometheusSink>());
    e->add_sink(*made);
    return made;
  }();
  return sink->get();
}

}  // namespace

std::string prometheus_text() {
  PrometheusSink* sink = prometheus_sink();
  return sink != nullptr ? sink->render() : std::string();
}

std::vector<FamilySnapshot> prometheus_families() {
  PrometheusSink* sink = prometheus_sink();
  return sink != nullptr ? sink->collect() : std::vector<FamilySnapshot>();
}

Topology topology() {
  Engine* e = eng();
  return e != nullptr ? e->topology() : Topology{};
}

void set_topology(int rank, int world_size) {
  if (Engine* e = eng()) e->set_topology(rank, world_size);
}

void set_parallel(const ParallelSpec& spec) {
  if (Engine* e = eng()) e->set_parallel(spec);
}

// ---- models -----------------------------------------------------------------------------------

void declare_model(const std::string& stage, const ModelInfo& model) {
  // Inside a request, a pipeline's own components price that request alone (two pipelines
  // served at once never price each other's calls); outside one, the engine's declaration.
  if (vxperf::in_request()) {
    vxperf::declare_request_model(stage, model);
  } else if (Engine* e = eng()) {
    e->declare_model(stage, model);
  }
}

// ---- measured peaks ---------------------------------------------------------------------------

// Whether the engine wants a measured peak (VIDEOX_PERF_PEAK_TFLOPS=auto). False when off.
bool wants_measured_peak() {
  Engine* e = eng();
  return e != nullptr && e->wants_measured_peak();
}

// The cache key of the host CPU probed with `threads` threads.
std::string cpu_device_key(int threads) { return vxperf::cpu_device_key(threads); }

std::string peak_cache_path() { return vxperf::peak_cache_path(); }

std::optional<Calibration> calibrate(const std::string& device, const std::string& dtype,
                                     const std::function<std::optional<MeasuredPeak>()>& probe,
                                     bool force) {
  auto parsed = parse_dtype(dtype);
  if (!parsed) return std::nullopt;
  auto warn = [](const std::string& line) {
    if (Engine* e = configured() ? vxperf::engine() : nullptr) {
      e->notice(line);
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  };
  PeakProbe core_probe = [&]() -> std::optional<MeasuredPeak> {
    if (!probe) return std::nullopt;
    return probe();
  };
  return calibrate_peak(device, *parsed, core_probe, force, warn);
}

// VIDEOX_PERF_DTYPE ("" when unset or off): the dtype the engine prices with, whatever a model
// says, and so the one to probe.
std::string dtype_override() {
  Engine* e = eng();
  return e != nullptr && e->settings().dtype ? dtype_name(*e->settings().dtype) : "";
}

// Hands a measured peak of `device` (-1: the host) in `dtype` to the engine.
void set_measured_peak(int device, const std::string& dtype, double tflops) {
  auto parsed = parse_dtype(dtype);
  Engine* e = eng();
  if (e == nullptr || !parsed) return;
  MeasuredPeak peak;
  peak.dtype = *parsed;
  peak.tflops = tflops;
  e->set_measured_peak(device, peak);
}

// ---- devices ----------------------------------------------------------------------------------

bool use_cuda_backend(CudaOptions options, int /*device*/) {
  Engine* e = eng();
  if (e == nullptr) return false;
  if (options.library_path.empty()) options.library_path = CudaOptions{}.library_path;
  options.notice = [e](std::string_view line) { e->notice(line); };
  std::shared_ptr<DeviceBackend> cuda = make_cuda_backend(options);
  if (!cuda) return false;
  // Also ends the engine's own on-demand loading: this backend, with torch's counters, is used.
  e->set_device_backend(std::move(cuda));
  return true;
}

// ---- inference --------------------------------------------------------------------------------

std::uint32_t stage_id(const std::string& name) { return vxperf::stage(name).value; }

bool in_request() { return vxperf::in_request(); }

bool training_in_use() { return training_loop() != nullptr; }

// A server's queue grew (+1) or lost a request unserved (-1): vxperf::note_queued.
void note_queued(std::int64_t delta) {
  if (Engine* e = eng()) vxperf::note_queued(*e, delta);
}

// The denoising steps this thread's open request ran (vxperf::note_denoising_steps); below 1 or
// outside a request, nothing.
void note_denoising_steps(std::int64_t steps) { vxperf::note_denoising_steps(steps); }

const void* begin_request(int device, std::uintptr_t stream, bool own_models, std::int64_t videos,
                          double queue_s, std::int64_t frames, double fps, bool from_queue) {
  Engine* e = eng();
  RequestOptions options{device, reinterpret_cast<void*>(stream), own_models};
  options.from_queue = from_queue;
  options.videos = videos > 0 ? videos : 1;
  options.queue_s = queue_s;
  options.frames = frames;
  options.fps = fps;
  if (e != nullptr && vxperf::begin_request(*e, options)) return vxperf::current_request_id();
  return nullptr;
}

void end_request(const void* handle, bool failed) {
  if (handle != nullptr && handle == vxperf::current_request_id()) vxperf::end_request(failed);
}

bool stage_needs_tokens(std::uint32_t stage) { return vxperf::stage_needs_tokens(StageId{stage}); }

StageMark begin_stage(std::uint32_t stage, std::int64_t tokens, std::int64_t batch) {
  return vxperf::begin_stage(StageId{stage}, tokens, batch >= 0 ? batch : 1);
}

void end_stage(const StageMark& mark) { vxperf::end_stage(mark); }

void drop_stage(const StageMark& mark) { vxperf::drop_stage(mark); }

// Calls of `stage` closed so far in this thread's open request (0 outside one).
std::int64_t closed_calls(std::uint32_t stage) { return vxperf::closed_calls(StageId{stage}); }

// Calls of `stage` open now in this thread's request (0 outside one).
std::int64_t open_calls(std::uint32_t stage) { return vxperf::open_calls(StageId{stage}); }

// The call of `stage` open on this thread (else the last one closed) computed `fraction` of a
// full forward (0: skipped); outside a request, the training forward open now (else the last one
// of the current step). See vxperf/inference.h.
void note_forward_fraction(std::uint32_t stage, double fraction) {
  if (vxperf::in_request()) {
    vxperf::note_forward_fraction(StageId{stage}, fraction);
  } else if (Trainer* t = training_loop()) {
    vxperf::note_forward_fraction(*t, fraction);
  }
}

void note_forward_work(std::uint32_t stage, const ForwardWork& work) {
  if (vxperf::in_request()) {
    vxperf::note_forward_work(StageId{stage}, work);
  } else if (Trainer* t = training_loop()) {
    vxperf::note_forward_work(*t, work);
  }
}

void note_compute_dtype(std::uint32_t stage, const std::string& dtype) {
  auto parsed = parse_dtype(dtype);
  if (!parsed) return;
  if (vxperf::in_request()) {
    vxperf::note_compute_dtype(StageId{stage}, *parsed);
  } else if (Trainer* t = training_loop()) {
    vxperf::note_compute_dtype(*t, *parsed);
  }
}

// ---- training ---------------------------------------------------------------------------------

const std::array<PhaseInfo, kPhaseCount>& phases() { return kPhases; }

// Phase ids: a phase's index in the phase table (vxperf/phases.h: "data", "prep", "vae_enc",
// "vae_dec", "text_encoder", "aux", "fwd", "bwd", "clip", "opt", "ema", "other"); -1 for another
// name.
int phase_id(const std::string& name) {
  auto phase = phase_from_name(name);
  return phase ? static_cast<int>(*phase) : -1;
}

// Whether a training loop uses the trainer (a model registered or a micro-step run).
bool training_active() { return training_loop() != nullptr; }

// The device the trainer times on (-1: host clock only) and the stream to record events on.
void train_set_device(int device, std::uintptr_t stream) {
  if (Trainer* t = trainer()) t->set_device(device, reinterpret_cast<void*>(stream));
}

void train_register_model(const ModelInfo& model, bool replace) {
  Trainer* t = trainer();
  if (t == nullptr) return;
  if (replace) {
    t->set_model(model);
  } else {
    t->register_model(model);
  }
}

// The micro-step's mark is not kept: Python's loop, not a C++ scope, pairs enter and exit.
void train_micro_enter() { vxperf::enter_micro_step(trainer()); }

void train_micro_exit() { vxperf::exit_micro_step(trainer()); }

bool train_call_timed() { return vxperf::model_call_timed(trainer()); }

TrainMark train_call_begin(int phase) {
  // The phase, where known at the call's start, names its range in a profiler's trace.
  if (phase < 0 || phase >= kPhaseCount) return vxperf::begin_model_call(trainer());
  return vxperf::begin_model_call(trainer(), static_cast<Phase>(phase));
}

void train_call_end(const TrainMark& mark, int phase, std::int64_t tokens, std::int64_t samples,
                    double fraction) {
  if (phase < 0 || phase >= kPhaseCount) return;
  vxperf::end_model_call(mark, static_cast<Phase>(phase), tokens, samples, fraction);
}

TrainMark train_backward_begin() { return vxperf::begin_backward(trainer()); }

void train_backward_end(const TrainMark& mark) { vxperf::end_backward(mark); }

// One call of a call phase (clip, or another call phase of the table that leaves the step where
// it is: vxperf/phases.h); a phase that is not one is not timed.
TrainMark train_call_phase_begin(int phase) {
  if (phase < 0 || phase >= kPhaseCount) return {};
  return vxperf::begin_call(static_cast<Phase>(phase), trainer());
}

void train_call_phase_end(const TrainMark& mark, int phase) {
  if (phase < 0 || phase >= kPhaseCount) return;
  vxperf::end_call(mark, static_cast<Phase>(phase));
}

// A call outside the steps (save, restore, eval); `bytes` -1: not said.
TrainMark train_outside_begin(int phase) {
  if (phase < 0 || phase >= kPhaseCount) return {};
  return vxperf::begin_outside(static_cast<Phase>(phase), trainer());
}

// A checkpoint's `path` ("" none) and a restore's `resume_step` (-1: the step its save was at).
void train_outside_end(const TrainMark& mark, int phase, std::int64_t bytes,
                       const std::string& path, std::int64_t resume_step) {
  if (phase < 0 || phase >= kPhaseCount) return;
  vxperf::end_outside(mark, static_cast<Phase>(phase), bytes, path, resume_step);
}

TrainMark train_optimizer_begin() { return vxperf::begin_optimizer_step(trainer()); }

void train_optimizer_end(const TrainMark& mark, std::uintptr_t owner, bool synced) {
  vxperf::end_optimizer_step(mark, reinterpret_cast<const void*>(owner), synced);
}

std::int64_t train_steps_closed() {
  Trainer* t = existing_trainer();
  return t != nullptr ? t->steps_closed() : 0;
}

std::int64_t train_pending_steps() {
  Trainer* t = existing_trainer();
  return t != nullptr ? static_cast<std::int64_t>(t->pending_steps()) : 0;
}

// Trainer::mark_setup: the program begins setting up its training.
void train_mark_setup() {
  if (Trainer* t = trainer()) t->mark_setup();
}

void train_stop_exchanges(const std::string& why) {
  if (Trainer* t = existing_trainer()) t->stop_exchanges(why);
}

void train_finish() {
  if (Trainer* t = existing_trainer()) t->finish();
}

// ---- the live cross-rank view -----------------------------------------------------------------

// VIDEOX_PERF_TRACKERS: 1 or 0 as set, -1 unset (or metrics off).
int trackers_setting() {
  Engine* e = eng();
  if (e == nullptr || !e->settings().trackers) return -1;
  return *e->settings().trackers ? 1 : 0;
}

// VIDEOX_PERF_OTEL=1: requests as OpenTelemetry spans.
bool otel_requested() {
  Engine* e = eng();
  return e != nullptr && e->settings().otel;
}

// Whether VIDEOX_PERF_XRANK asks for the view, and how long one exchange may take (seconds).
bool xrank_requested() {
  Engine* e = eng();
  return e != nullptr && e->settings().xrank;
}

double xrank_timeout_s() {
  Engine* e = eng();
  return e != nullptr ? e->settings().xrank_timeout_s : Settings{}.xrank_timeout_s;
}

// How many numbers each rank contributes to an exchange.
std::size_t xrank_width() { return kRankWindowDoubles; }

bool add_observer(std::shared_ptr<Observer> observer) {
  Engine* e = eng();
  if (e == nullptr || !observer) return false;
  e->add_observer(std::move(observer));
  return true;
}

// VIDEOX_PERF_PROFILE's range: ("steps" or "requests", first, last), nullopt when none is set or
// metrics are off.
std::optional<std::tuple<std::string, std::int64_t, std::int64_t>> capture_range() {
  Engine* e = eng();
  if (e == nullptr) return std::nullopt;
  const Settings::CaptureRange& r = e->settings().profile;
  if (r.kind == Settings::CaptureRange::Kind::kNone) return std::nullopt;
  return std::make_tuple(
      std::string(r.kind == Settings::CaptureRange::Kind::kSteps ? "steps" : "requests"), r.first,
      r.last);
}

void set_rank_exchange(PackedExchange exchange) {
  Engine* e = eng();
  if (e == nullptr || !exchange) return;
  e->set_rank_exchange([exchange = std::move(exchange)](
                           const RankWindow& mine) -> std::optional<std::vector<RankWindow>> {
    std::vector<double> packed(kRankWindowDoubles);
    pack_rank_window(mine, packed.data());
    auto answers = exchange(packed);
    if (!answers) return std::nullopt;
    std::vector<RankWindow> out;
    for (std::size_t i = 0; i < answers->size(); ++i) {
      const auto& numbers = (*answers)[i];
      std::optional<RankWindow> w;
      if (numbers.size() == kRankWindowDoubles) w = unpack_rank_window(numbers.data());
      if (!w) {
        throw std::runtime_error("the numbers of process " + std::to_string(i) +
                                 " are not a vxperf window of this version");
      }
      out.push_back(*w);
    }
    return out;
  });
}

// ---- the calls Python makes straight ----------------------------------------------------------

// One line each: its Python name, its function above, its arguments and what it says; its stub is
// in vxperf/_ext.pyi (test_package holds the two to each other).
void define_calls(pybind11::module_& m) {
  namespace py = pybind11;

  // ---- the process-wide engine
  m.def("configured", &configured);
  m.def("level", &level);
  m.def("attention_pricing", &attention_pricing);
  m.def("notice", &notice, py::arg("line"));
  m.def("perf_line", &perf_line, py::arg("text"),
        "Prints '[Perf][rankN] ' + text where this rank logs.");
  m.def(
      "logs_here", &logs_here,
      "Whether this rank prints [Perf] lines (rank 0, or every rank with VIDEOX_PERF_RANKS=all).");
  m.def("window_steps", &window_steps);
  m.def("version", &version, "The version of the vxperf engine this extension was built with.");
  m.def("capture_range", &capture_range,
        "VIDEOX_PERF_PROFILE's range as (kind, first, last), None when unset or off.");
  m.def("set_topology", &set_topology, py::arg("rank"), py::arg("world_size"));

  // ---- measured peaks
  m.def("wants_measured_peak", &wants_measured_peak);
  m.def("cpu_device_key", &cpu_device_key, py::arg("threads"));
  m.def("peak_cache_path", &peak_cache_path);
  m.def("dtype_override", &dtype_override);
  m.def("set_measured_peak", &set_measured_peak, py::arg("device"), py::arg("dtype"),
        py::arg("tflops"));

  // ---- inference
  m.def("stage_id", &stage_id, py::arg("name"));
  m.def("closed_calls", &closed_calls, py::arg("stage"));
  m.def("open_calls", &open_calls, py::arg("stage"));
  m.def("note_compute_dtype", &note_compute_dtype, py::arg("stage"), py::arg("dtype"),
        "Says the dtype the open (else last) call of a stage ran its matmuls in (autocast).");
  m.def("note_forward_fraction", &note_forward_fraction, py::arg("stage"), py::arg("fraction"),
        "The open (else last) call of a stage, or the training forward, computed a fraction of a "
        "full forward.");
  m.def("in_request", &in_request);
  m.def("note_queued", &note_queued, py::arg("delta"),
        "A server's queue grew (+1) or lost a request unserved (-1).");
  m.def("note_denoising_steps", &note_denoising_steps, py::arg("steps"),
        "The denoising (sampler) steps this thread's open request ran.");

  // ---- training
  m.def("phase_id", &phase_id, py::arg("name"));
  m.def("training_active", &training_active);
  m.def("train_set_device", &train_set_device, py::arg("device"), py::arg("stream"));
  m.def("train_micro_enter", &train_micro_enter);
  m.def("train_micro_exit", &train_micro_exit);
  m.def("train_call_timed", &train_call_timed);
  m.def("train_call_begin", &train_call_begin, py::arg("phase") = -1);
  m.def("train_call_end", &train_call_end, py::arg("mark"), py::arg("phase"), py::arg("tokens"),
        py::arg("samples"), py::arg("fraction") = 1.0);
  m.def("train_backward_begin", &train_backward_begin);
  m.def("train_backward_end", &train_backward_end, py::arg("mark"));
  m.def("train_call_phase_begin", &train_call_phase_begin, py::arg("phase"));
  m.def("train_call_phase_end", &train_call_phase_end, py::arg("mark"), py::arg("phase"));
  m.def("train_outside_begin", &train_outside_begin, py::arg("phase"));
  m.def("train_outside_end", &train_outside_end, py::arg("mark"), py::arg("phase"),
        py::arg("bytes") = -1, py::arg("path") = "", py::arg("resume_step") = -1);
  m.def("train_optimizer_begin", &train_optimizer_begin);
  m.def("train_steps_closed", &train_steps_closed);
  m.def("train_pending_steps", &train_pending_steps);
  m.def("train_mark_setup", &train_mark_setup);

  // ---- the live cross-rank view
  m.def("xrank_requested", &xrank_requested);
  m.def("otel_requested", &otel_requested, "VIDEOX_PERF_OTEL=1.");
  m.def("trackers_setting", &trackers_setting,
        "VIDEOX_PERF_TRACKERS: 1 or 0 as set, -1 when unset.");
  m.def("xrank_timeout", &xrank_timeout_s);
  m.def("xrank_width", &xrank_width);
}

}  // namespace vxperf::binding
