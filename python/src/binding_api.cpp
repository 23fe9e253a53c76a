// binding_api.h over the engine's public API: vxperf/config.h, vxperf/engine.h, vxperf/markers.h
// and the headers of what it configures (peaks, CUDA, Prometheus, the cross-rank view).
#include "binding_api.h"

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

bool configured() { return g_configured.load(std::memory_order_relaxed); }

bool enabled() { return eng() != nullptr; }

int level() {
  Engine* e = eng();
  return e != nullptr ? e->level() : 0;
}

bool attention_pricing() {
  Engine* e = eng();
  return e != nullptr && e->settings().attn_flops;
}

void notice(const std::string& line) {
  if (Engine* e = eng()) e->notice(line);
}

void perf_line(const std::string& text) {
  Engine* e = eng();
  if (e != nullptr && e->should_log()) {
    e->notice("[Perf][rank" + std::to_string(e->topology().rank) + "] " + text);
  }
}

std::int64_t window_steps() {
  Engine* e = eng();
  return e != nullptr ? e->settings().every : 0;
}

void shutdown() {
  if (configured()) vxperf::shutdown();
}

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

bool wants_measured_peak() {
  Engine* e = eng();
  return e != nullptr && e->wants_measured_peak();
}

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

std::string dtype_override() {
  Engine* e = eng();
  return e != nullptr && e->settings().dtype ? dtype_name(*e->settings().dtype) : "";
}

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

void note_queued(std::int64_t delta) {
  if (Engine* e = eng()) vxperf::note_queued(*e, delta);
}

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

std::int64_t closed_calls(std::uint32_t stage) { return vxperf::closed_calls(StageId{stage}); }

std::int64_t open_calls(std::uint32_t stage) { return vxperf::open_calls(StageId{stage}); }

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

int phase_id(const std::string& name) {
  auto phase = phase_from_name(name);
  return phase ? static_cast<int>(*phase) : -1;
}

bool training_active() { return training_loop() != nullptr; }

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

TrainMark train_call_phase_begin(int phase) {
  if (phase < 0 || phase >= kPhaseCount) return {};
  return vxperf::begin_call(static_cast<Phase>(phase), trainer());
}

void train_call_phase_end(const TrainMark& mark, int phase) {
  if (phase < 0 || phase >= kPhaseCount) return;
  vxperf::end_call(mark, static_cast<Phase>(phase));
}

TrainMark train_outside_begin(int phase) {
  if (phase < 0 || phase >= kPhaseCount) return {};
  return vxperf::begin_outside(static_cast<Phase>(phase), trainer());
}

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

int trackers_setting() {
  Engine* e = eng();
  if (e == nullptr || !e->settings().trackers) return -1;
  return *e->settings().trackers ? 1 : 0;
}

bool otel_requested() {
  Engine* e = eng();
  return e != nullptr && e->settings().otel;
}

bool xrank_requested() {
  Engine* e = eng();
  return e != nullptr && e->settings().xrank;
}

double xrank_timeout_s() {
  Engine* e = eng();
  return e != nullptr ? e->settings().xrank_timeout_s : Settings{}.xrank_timeout_s;
}

std::size_t xrank_width() { return kRankWindowDoubles; }

bool add_observer(std::shared_ptr<Observer> observer) {
  Engine* e = eng();
  if (e == nullptr || !observer) return false;
  e->add_observer(std::move(observer));
  return true;
}

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

}  // namespace vxperf::binding
