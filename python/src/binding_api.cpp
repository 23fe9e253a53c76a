// binding_api.h over the engine's public API (vxperf/config.h, vxperf/markers.h) and, for what a
// binding needs beyond it, the internal faces of the engine and the trainer.
#include "binding_api.h"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string_view>

#include "core/engine_core.h"
#include "core/request.h"
#include "training/trainer_core.h"
#include "vxperf/config.h"
#include "vxperf/cuda_backend.h"
#include "vxperf/engine.h"
#include "vxperf/markers.h"
#include "vxperf/peak.h"
#include "vxperf/prometheus.h"
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

detail::TrainerCore* existing_trainer() {
  if (!g_configured.load(std::memory_order_relaxed)) return nullptr;
  Engine* e = vxperf::engine();
  Trainer* t = e != nullptr ? detail::core_of(*e).existing_trainer() : nullptr;
  return t != nullptr ? &detail::core_of(*t) : nullptr;
}

static_assert(sizeof(vxperf::StageMark) <= sizeof(StageMark::opaque), "StageMark too small");
static_assert(sizeof(vxperf::TrainMark) <= sizeof(TrainMark::opaque), "TrainMark too small");

template <class Mark, class Data>
Mark pack(const Data& data) {
  Mark mark;
  std::memcpy(mark.opaque, &data, sizeof data);
  return mark;
}

template <class Data, class Mark>
Data unpack(const Mark& mark) {
  Data data;
  std::memcpy(&data, mark.opaque, sizeof data);
  return data;
}

ModelInfo to_info(const ModelDesc& d) {
  ModelInfo info;
  info.params = d.params;
  info.trainable = d.trainable;
  info.checkpointing = d.checkpointing;
  if (d.attention) {
    info.attention =
        vxperf::AttentionWidths{d.attention->self, d.attention->cross, d.attention->modules};
  }
  info.text_tokens = d.text_tokens;
  if (!d.dtype.empty()) info.dtype = parse_dtype(d.dtype);
  info.attn_density = d.attn_density;
  return info;
}

vxperf::TrainMark train(const TrainMark& mark) { return unpack<vxperf::TrainMark>(mark); }

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
  return e != nullptr ? detail::core_of(*e).level() : 0;
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

std::string prometheus_text() {
  Engine* e = eng();
  if (e == nullptr) return {};
  // Made once and kept for the life of the process, as the engine is.
  static std::shared_ptr<PrometheusSink>* sink = [e] {
    auto* made = new std::shared_ptr<PrometheusSink>(std::make_shared<PrometheusSink>());
    e->add_sink(*made);
    return made;
  }();
  return (*sink)->render();
}

Topology topology() {
  Topology out;
  if (Engine* e = eng()) {
    vxperf::Topology t = e->topology();
    out = Topology{t.rank, t.world_size, t.sp};
  }
  return out;
}

void set_topology(int rank, int world_size) {
  if (Engine* e = eng()) e->set_topology(rank, world_size);
}

void set_sequence_parallel(int sp) {
  if (Engine* e = eng()) e->set_sequence_parallel(sp);
}

// ---- models -----------------------------------------------------------------------------------

void declare_model(const std::string& stage, const ModelDesc& model) {
  // Inside a request, a pipeline's own components price that request alone (two pipelines
  // served at once never price each other's calls); outside one, the engine's declaration.
  if (vxperf::in_request()) {
    vxperf::declare_request_model(stage, to_info(model));
  } else if (Engine* e = eng()) {
    e->declare_model(stage, to_info(model));
  }
}

// ---- measured peaks ---------------------------------------------------------------------------

bool wants_measured_peak() {
  Engine* e = eng();
  return e != nullptr && e->wants_measured_peak();
}

std::string cpu_device_key(int threads) { return vxperf::cpu_device_key(threads); }

std::string peak_cache_path() { return vxperf::peak_cache_path(); }

std::optional<Peak> calibrate(const std::string& device, const std::string& dtype,
                              const std::function<std::optional<Peak>()>& probe, bool force) {
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
    auto p = probe();
    if (!p) return std::nullopt;
    MeasuredPeak m;
    m.tflops = p->tflops;
    m.n = p->n;
    m.gemms = p->gemms;
    m.seconds = p->seconds;
    m.by = p->by;
    return m;
  };
  auto result = calibrate_peak(device, *parsed, core_probe, force, warn);
  if (!result) return std::nullopt;
  const MeasuredPeak& m = result->peak;
  return Peak{m.tflops, m.n, m.gemms, m.seconds, m.by, result->from_cache};
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

bool use_cuda_backend(const MemoryCallbacks& memory, int /*device*/, const std::string& library) {
  Engine* e = eng();
  if (e == nullptr) return false;
  CudaOptions options;
  if (!library.empty()) options.library_path = library;
  options.notice = [e](std::string_view line) { e->notice(line); };
  if (memory.peaks) {
    options.memory_peaks = [peaks = memory.peaks](int d) -> std::optional<MemoryPeaks> {
      std::uint64_t allocated = 0;
      std::uint64_t reserved = 0;
      if (!peaks(d, &allocated, &reserved)) return std::nullopt;
      return MemoryPeaks{allocated, reserved};
    };
  }
  if (memory.reset) options.reset_memory_peaks = memory.reset;
  std::shared_ptr<DeviceBackend> cuda = make_cuda_backend(options);
  if (!cuda) return false;
  // Also ends the engine's own on-demand loading: this backend, with torch's counters, is used.
  e->set_device_backend(std::move(cuda));
  return true;
}

// ---- inference --------------------------------------------------------------------------------

std::uint32_t stage_id(const std::string& name) { return vxperf::stage(name).value; }

bool in_request() { return vxperf::in_request(); }

RequestMark begin_request(int device, std::uintptr_t stream, bool own_models) {
  RequestMark mark;
  Engine* e = eng();
  if (e != nullptr &&
      vxperf::begin_request(*e,
                            RequestOptions{device, reinterpret_cast<void*>(stream), own_models})) {
    mark.opaque = detail::current_request;
  }
  return mark;
}

void end_request(RequestMark mark, bool failed) {
  if (mark.opaque != nullptr && mark.opaque == detail::current_request) vxperf::end_request(failed);
}

bool stage_needs_tokens(std::uint32_t stage) { return vxperf::stage_needs_tokens(StageId{stage}); }

StageMark begin_stage(std::uint32_t stage, std::int64_t tokens, std::int64_t batch) {
  return pack<StageMark>(vxperf::begin_stage(StageId{stage}, tokens, batch > 0 ? batch : 1));
}

void end_stage(const StageMark& mark) { vxperf::end_stage(unpack<vxperf::StageMark>(mark)); }

void drop_stage(const StageMark& mark) { vxperf::drop_stage(unpack<vxperf::StageMark>(mark)); }

std::int64_t closed_calls(std::uint32_t stage) {
  const detail::Request* r = detail::current_request;
  if (r == nullptr) return 0;
  std::int64_t n = 0;
  for (const auto& p : r->pairs) n += p.stage == stage ? 1 : 0;
  return n;
}

std::int64_t open_calls(std::uint32_t stage) {
  const detail::Request* r = detail::current_request;
  if (r == nullptr || stage >= r->stages.size()) return 0;
  return r->stages[stage].open;
}

void note_forward_fraction(std::uint32_t stage, double fraction) {
  if (vxperf::in_request()) {
    vxperf::note_forward_fraction(StageId{stage}, fraction);
  } else if (detail::TrainerCore* t = existing_trainer(); t != nullptr && t->in_use()) {
    t->note_fraction(fraction);
  }
}

void note_compute_dtype(std::uint32_t stage, const std::string& dtype) {
  auto parsed = parse_dtype(dtype);
  if (!parsed) return;
  if (vxperf::in_request()) {
    vxperf::note_compute_dtype(StageId{stage}, *parsed);
  } else if (detail::TrainerCore* t = existing_trainer(); t != nullptr && t->in_use()) {
    t->note_dtype(*parsed);
  }
}

// ---- training ---------------------------------------------------------------------------------

int phase_id(const std::string& name) {
  auto phase = phase_from_name(name);
  return phase ? static_cast<int>(*phase) : -1;
}

bool training_active() {
  detail::TrainerCore* t = existing_trainer();
  return t != nullptr && t->in_use();
}

void train_set_device(int device, std::uintptr_t stream) {
  if (Trainer* t = trainer()) t->set_device(device, reinterpret_cast<void*>(stream));
}

void train_register_model(const ModelDesc& model, bool replace) {
  Trainer* t = trainer();
  if (t == nullptr) return;
  if (replace) {
    detail::core_of(*t).set_model(to_info(model));
  } else {
    t->register_model(to_info(model));
  }
}

void train_micro_enter() {
  // The micro-step's mark is not kept: Python's loop, not a C++ scope, pairs enter and exit.
  if (Trainer* t = trainer()) detail::core_of(*t).enter_micro(detail::core_of(*t).now());
}

void train_micro_exit() {
  if (Trainer* t = trainer()) detail::core_of(*t).exit_micro(detail::core_of(*t).now());
}

bool train_call_timed() {
  Trainer* t = trainer();
  return t != nullptr && detail::core_of(*t).model_call_timed();
}

TrainMark train_call_begin() { return pack<TrainMark>(vxperf::begin_model_call(trainer())); }

void train_call_end(const TrainMark& mark, int phase, std::int64_t tokens, std::int64_t samples,
                    double fraction) {
  if (phase < 0 || phase >= kPhaseCount) return;
  vxperf::end_model_call(train(mark), static_cast<Phase>(phase), tokens, samples, fraction);
}

TrainMark train_backward_begin() { return pack<TrainMark>(vxperf::begin_backward(trainer())); }

void train_backward_end(const TrainMark& mark) { vxperf::end_backward(train(mark)); }

TrainMark train_clip_begin() { return pack<TrainMark>(vxperf::begin_clip(trainer())); }

void train_clip_end(const TrainMark& mark) { vxperf::end_clip(train(mark)); }

TrainMark train_optimizer_begin() {
  return pack<TrainMark>(vxperf::begin_optimizer_step(trainer()));
}

void train_optimizer_end(const TrainMark& mark, std::uintptr_t owner, bool synced) {
  vxperf::end_optimizer_step(train(mark), reinterpret_cast<const void*>(owner), synced);
}

std::int64_t train_steps_closed() {
  detail::TrainerCore* t = existing_trainer();
  return t != nullptr ? t->steps_closed() : 0;
}

std::int64_t train_pending_steps() {
  detail::TrainerCore* t = existing_trainer();
  return t != nullptr ? static_cast<std::int64_t>(t->pending_steps()) : 0;
}

void train_finish() {
  if (detail::TrainerCore* t = existing_trainer()) t->finish();
}

// ---- the live cross-rank view -----------------------------------------------------------------

bool xrank_requested() {
  Engine* e = eng();
  return e != nullptr && e->settings().xrank;
}

double xrank_timeout_s() {
  Engine* e = eng();
  return e != nullptr ? e->settings().xrank_timeout_s : Settings{}.xrank_timeout_s;
}

std::size_t xrank_width() { return kRankWindowDoubles; }

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
