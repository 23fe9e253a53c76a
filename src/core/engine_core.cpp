#include "core/engine_core.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/pricing.h"
#include "core/resolve.h"
#include "core/stats.h"
#include "format/log_lines.h"
#include "format/strings.h"
#include "script/trace_events.h"
#include "script/trace_writer.h"
#include "sinks/records_file.h"
#include "sinks/write_line.h"
#include "training/trainer_core.h"
#include "vxperf/cuda_backend.h"
#include "vxperf/inference.h"
#include "vxperf/training.h"

namespace vxperf::detail {
namespace {

double wall_clock_s() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

// Requests are reused per thread: a serving loop allocates nothing per request once warm.
thread_local std::unique_ptr<Request> spare_request;

// The program's log function, made unable to throw into the engine: a line it fails on is lost,
// the measurement goes on.
LogFn never_throwing(LogFn log) {
  return [log = std::move(log)](std::string_view line) noexcept {
    try {
      log(line);
    } catch (...) {
    }
  };
}

}  // namespace

EngineCore::EngineCore(Engine& engine, EngineOptions options)
    : engine_(engine),
      settings_(std::move(options.settings)),
      level_(settings_.level),
      clock_(options.clock ? std::move(options.clock) : std::make_shared<SteadyClock>()),
      log_(options.log ? never_throwing(std::move(options.log)) : stderr_log()),
      topology_(options.topology),
      rank_exchange_(std::move(options.rank_exchange)) {
  cuda_on_demand_ = options.cuda_on_demand && !options.device;
  backends_.push_back(options.device ? std::move(options.device)
                                     : std::make_shared<HostOnlyBackend>());
  device_.store(backends_.back().get(), std::memory_order_release);
  if (settings_.sp > 0) topology_.sp = settings_.sp;
  if (!settings_.trace_path.empty()) {
    trace_ = std::make_unique<TraceWriter>(settings_.trace_path, log_);
  }
  SinkList sinks;
  if (!settings_.json_path.empty()) {
    sinks.push_back(std::make_shared<RecordsFile>(settings_.json_path, log_));
  }
  for (auto& sink : options.sinks) {
    if (sink) sinks.push_back(std::move(sink));
  }
  sinks_ = std::make_shared<const SinkList>(std::move(sinks));
  register_engine(this);
}

EngineCore::~EngineCore() { unregister_engine(this); }

// emit_mu_ is not among them: it is held across a program's sinks and log function, which may be
// what forks; the child never takes it (its engines are off).
void EngineCore::lock_for_fork() {
  mu_.lock();
  sinks_mu_.lock();
}

void EngineCore::unlock_after_fork() {
  sinks_mu_.unlock();
  mu_.unlock();
}

void EngineCore::mark_forked() {
  forked_ = true;
  if (Trainer* trainer = existing_trainer()) detail::core_of(*trainer).mark_forked();
}

void EngineCore::raise_level(int level) {
  int current = level_.load(std::memory_order_relaxed);
  while (level > current && !level_.compare_exchange_weak(current, level)) {
  }
}

void EngineCore::set_device_backend(std::shared_ptr<DeviceBackend> device) {
  std::lock_guard<std::mutex> lock(mu_);
  cuda_on_demand_ = false;  // the program chose its backend
  // The old backend stays alive: a request opened before the switch still holds it.
  backends_.push_back(device ? std::move(device) : std::make_shared<HostOnlyBackend>());
  device_.store(backends_.back().get(), std::memory_order_release);
}

DeviceBackend& EngineCore::backend_for(int device) {
  // What loading the driver says is said once mu_ is released (no I/O under the engine lock);
  // what the backend says later, it says itself.
  struct Held {
    std::atomic<bool> loading{true};
    std::vector<std::string> lines;
  };
  std::shared_ptr<Held> held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (device >= 0 && cuda_on_demand_) {
      cuda_on_demand_ = false;  // one try: an absent driver is said once, then host-only
      held = std::make_shared<Held>();
      CudaOptions options;
      options.notice = [held, log = log_](std::string_view line) {
        if (held->loading.load()) {
          held->lines.emplace_back(line);
        } else {
          log(line);
        }
      };
      if (auto cuda = make_cuda_backend(options)) {
        backends_.push_back(std::move(cuda));
        device_.store(backends_.back().get(), std::memory_order_release);
      }
      held->loading.store(false);
    }
  }
  if (held) {
    for (const auto& line : held->lines) log_(line);
  }
  return *device_.load(std::memory_order_acquire);
}

Topology EngineCore::topology() const {
  std::lock_guard<std::mutex> lock(mu_);
  return topology_;
}

void EngineCore::set_topology(int rank, int world_size) {
  std::lock_guard<std::mutex> lock(mu_);
  if (world_size < 1 || rank < 0 || rank >= world_size) return;
  topology_.rank = rank;
  topology_.world_size = world_size;
}

void EngineCore::set_sequence_parallel(int sp) {
  std::lock_guard<std::mutex> lock(mu_);
  if (sp >= 1) topology_.sp = sp;
}

int EngineCore::dp_degree() const {
  Topology t = topology();
  return std::max(1, t.world_size / std::max(1, t.sp));
}

bool EngineCore::should_log() const { return settings_.log_all_ranks || topology().rank == 0; }

DeclaredModel EngineCore::priced_model(std::string_view stage, const ModelInfo& info) const {
  DeclaredModel model;
  model.stage = valid_utf8(stage);  // as stage() interns it
  model.params = settings_.dit_params != 0 ? settings_.dit_params : info.params;
  model.attention = usable_widths(info.attention, settings_.attn_flops);
  model.text_tokens = model.attention ? info.text_tokens : 0;
  model.attn_density = priced_density(settings_.attn_density, info.attn_density);
  model.dtype = info.dtype;
  model.info = info;
  return model;
}

void EngineCore::declare_model(Request& request, std::string_view stage, const ModelInfo& info) {
  if (forked()) return;
  DeclaredModel model = priced_model(stage, info);
  request.own_models = true;
  auto it = std::find_if(request.models.begin(), request.models.end(),
                         [&](const DeclaredModel& m) { return m.stage == model.stage; });
  if (it != request.models.end()) {
    *it = std::move(model);
  } else {
    request.models.push_back(std::move(model));
  }
}

void EngineCore::declare_model(std::string_view stage, const ModelInfo& info) {
  if (forked()) return;  // the trace is the parent's
  DeclaredModel model = priced_model(stage, info);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find_if(models_.begin(), models_.end(),
                           [&](const DeclaredModel& m) { return m.stage == model.stage; });
    if (it != models_.end()) {
      *it = model;
    } else {
      models_.push_back(model);
    }
  }
  if (trace_) trace_->write(model_event(model.stage, info));
}

void EngineCore::add_sink(std::shared_ptr<RecordSink> sink) {
  if (!sink) return;
  std::lock_guard<std::mutex> lock(sinks_mu_);
  auto sinks = std::make_shared<SinkList>(*sinks_);
  sinks->push_back(std::move(sink));
  sinks_ = std::move(sinks);
}

void EngineCore::set_rank_exchange(RankExchange exchange) {
  std::lock_guard<std::mutex> lock(mu_);
  rank_exchange_ = std::move(exchange);
}

RankExchange EngineCore::rank_exchange() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rank_exchange_;
}

void EngineCore::ensure_trace_header(int device) {
  if (!trace_ || trace_->has_header()) return;
  DeviceBackend& backend = this->device();
  std::optional<std::string> name;
  if (device >= 0 && backend.available()) name = backend.device_name(device);
  Topology t = topology();
  trace_->write_header(config_event(settings_, name, device, t), t.rank, t.world_size);
}

ResolvedPeak EngineCore::peak(std::optional<int> device, Dtype dtype) {
  if (settings_.peak_tflops) return ResolvedPeak{settings_.peak_tflops, PeakSource::kEnv};
  std::optional<std::string> name;
  if (device) name = this->device().device_name(*device);
  if (settings_.measure_peak) {
    auto key = std::make_pair(device.value_or(-1), dtype);
    std::optional<double> measured;
    bool known = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = measured_.find(key);
      if (it != measured_.end()) {
        known = true;
        measured = it->second;
      }
    }
    if (!known) {
      // Nothing handed over: a GPU's cache entry (`vxperf calibrate`) serves; the host's needs a
      // front end, which knows its thread count.
      if (name && !name->empty()) {
        auto cached = load_cached_peak(peak_cache_path(), *name, dtype,
                                       [this](const std::string& line) { log_(line); });
        if (cached) measured = cached->tflops;
      }
      if (!measured) {
        log_(std::string("vxperf: VIDEOX_PERF_PEAK_TFLOPS=auto, but no peak was measured for ") +
             (name && !name->empty() ? *name : std::string("the host CPU")) + " in " +
             dtype_name(dtype) +
             " (`vxperf calibrate` measures one); MFU is against the table's peak, if any");
      }
      std::lock_guard<std::mutex> lock(mu_);
      measured_.emplace(key, measured);
    }
    if (measured) return ResolvedPeak{measured, PeakSource::kMeasured};
  }
  return ResolvedPeak{per_device_peak_tflops(std::nullopt, name, dtype), PeakSource::kTable};
}

void EngineCore::set_measured_peak(int device, const MeasuredPeak& peak) {
  if (forked()) return;  // the trace is the parent's
  if (!(peak.tflops > 0) || !std::isfinite(peak.tflops)) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    measured_[std::make_pair(device < 0 ? -1 : device, peak.dtype)] = peak.tflops;
  }
  // So that a replay prices against the same peak.
  if (trace_) trace_->write(peak_event(device, peak));
}

Trainer& EngineCore::trainer() {
  if (Trainer* t = trainer_ptr_.load(std::memory_order_acquire)) return *t;
  std::lock_guard<std::mutex> lock(mu_);
  if (!trainer_) {
    trainer_.reset(new Trainer(*this));
    trainer_ptr_.store(trainer_.get(), std::memory_order_release);
  }
  return *trainer_;
}

// ---- requests -----------------------------------------------------------------------------------

Request* EngineCore::begin_request(const RequestOptions& options) {
  if (forked()) {
    say_off_in_forked_child();
    return nullptr;
  }
  const int device = options.device;
  std::unique_ptr<Request> request = std::move(spare_request);
  if (!request) request = std::make_unique<Request>();
  DeviceBackend& backend = backend_for(device);
  {
    std::lock_guard<std::mutex> lock(mu_);
    request->index = next_request_++;
  }
  request->engine = this;
  request->clock = clock_.get();
  request->backend = &backend;
  request->device_events = device >= 0 && backend.available();
  request->device = request->device_events ? device : -1;
  request->stream = options.stream;
  request->own_models = options.own_models;
  request->warmup = request->index < settings_.warmup;
  request->t0 = clock_->now_s();
  if (request->device_events) backend.reset_peak_memory(request->device);
  return request.release();
}

void EngineCore::end_request(Request* raw, bool failed) {
  std::unique_ptr<Request> request(raw);
  if (forked()) {
    // Opened in the parent, ended in a forked child: dropped, no device call, no record.
    request->clear();
    spare_request = std::move(request);
    return;
  }
  // Before the clock is read: a pipeline returns once its last kernel is queued, so without it
  // the request would time submission, not work. The only synchronize of inference, on the
  // request's own device.
  if (request->device_events) request->backend->synchronize(request->device);
  settle(*request, clock_->now_s(), failed);
  request->clear();
  spare_request = std::move(request);
}

void EngineCore::abandon_request(Request* raw) {
  std::unique_ptr<Request> request(raw);
  if (!forked()) {
    for (const auto& p : request->pairs) {
      if (p.e0 != kNoEvent) request->backend->release(p.e0);
      if (p.e1 != kNoEvent) request->backend->release(p.e1);
    }
  }
  request->clear();
  spare_request = std::move(request);
}

void EngineCore::settle(Request& request, double t_end, bool failed) {
  DeviceBackend& backend = *request.backend;
  ensure_trace_header(request.device);
  // Every call resolved to the larger of its host and device time, grouped by stage.
  std::vector<std::vector<double>> values(request.order.size());  // by slot
  std::vector<double> device_ms(request.pairs.size(), -1.0);
  // Per stage (by slot): the full forwards its calls came to and the calls skipped outright.
  std::vector<double> effective(request.order.size(), 0.0);
  std::vector<std::int64_t> skipped(request.order.size(), 0);
  std::vector<bool> partial(request.order.size(), false);
  for (std::size_t i = 0; i < request.pairs.size(); ++i) {
    const auto& p = request.pairs[i];
    Resolved r = resolve_call(backend, p.t0, p.t1, p.e0, p.e1);
    if (r.device_ms) device_ms[i] = *r.device_ms;
    if (p.e0 != kNoEvent) backend.release(p.e0);
    if (p.e1 != kNoEvent) backend.release(p.e1);
    std::uint32_t slot = request.stages[p.stage].slot;
    values[slot].push_back(r.ms);
    effective[slot] += p.fraction;
    if (p.fraction == 0.0) ++skipped[slot];
    if (p.fraction != 1.0) partial[slot] = true;
  }

  RequestRecord record;
  RequestDetail detail;
  detail.failed = failed;
  record.ts = wall_clock_s();
  Topology topo = topology();
  record.rank = topo.rank;
  record.world_size = topo.world_size;
  record.req = request.index;
  record.warmup = request.warmup;
  record.e2e_s = t_end - request.t0;
  std::vector<double> transformer_ms;
  for (std::size_t slot = 0; slot < request.order.size(); ++slot) {
    std::uint32_t id = request.order[slot];
    std::vector<double>& v = values[slot];
    if (v.empty()) continue;
    StageSummary s;
    s.name = stage_name(StageId{id});
    s.count = static_cast<std::int64_t>(v.size());
    s.total_ms = plain_sum(v);
    s.mean_ms = fmean(v);
    s.std_ms = stdev(v);
    s.min_ms = *std::min_element(v.begin(), v.end());
    s.max_ms = *std::max_element(v.begin(), v.end());
    if (is_transformer_stage(id)) transformer_ms.insert(transformer_ms.end(), v.begin(), v.end());
    record.stages.push_back(std::move(s));
    detail.stage_calls_ms.push_back(std::move(v));
  }

  std::vector<DeclaredModel> engine_models;
  if (!request.own_models) {
    std::lock_guard<std::mutex> lock(mu_);
    engine_models = models_;
  }
  const std::vector<DeclaredModel>& models = request.own_models ? request.models : engine_models;
  std::vector<PricedStage> priced;
  {
    priced.reserve(models.size());
    for (const DeclaredModel& m : models) {
      PricedStage p;
      p.params = m.params;
      p.attention = m.attention;
      p.text_tokens = m.text_tokens;
      p.attn_density = m.attn_density;
      p.dtype = m.dtype;
      std::uint32_t id = stage(m.stage).value;
      auto summary = std::find_if(record.stages.begin(), record.stages.end(),
                                  [&](const StageSummary& s) { return s.name == m.stage; });
      if (id < request.stages.size() && summary != record.stages.end()) {
        p.called = true;
        p.tokens = request.stages[id].tokens;
        p.batch = request.stages[id].batch;
        // What autocast ran the calls in beats what the parameters are stored in.
        if (request.stages[id].dtype) p.dtype = request.stages[id].dtype;
        p.calls = summary->count;
        p.total_ms = summary->total_ms;
        std::uint32_t slot = request.stages[id].slot;
        if (partial[slot]) {
          p.effective_calls = effective[slot];
          p.skipped_calls = skipped[slot];
        }
      }
      priced.push_back(std::move(p));
    }
  }
  std::optional<int> device =
      request.device_events ? std::optional<int>(request.device) : std::nullopt;
  record.dit = price_request(priced, topo.world_size, settings_.dtype,
                             [&](Dtype dtype) { return peak(device, dtype); });
  if (request.device_events) {
    record.device = request.device;
    record.peaks = backend.peak_memory(request.device).value_or(MemoryPeaks{});
  }
  if (trace_) {
    // A request priced by its own models carries them, so that its replay prices it the same.
    std::vector<std::string> block;
    for (const DeclaredModel& m : request.models) block.push_back(model_event(m.stage, m.info));
    for (auto& line : request_events(request, device_ms, t_end, record.peaks)) {
      block.push_back(std::move(line));
    }
    trace_->write_block(block);
  }

  emit(record, detail);
  std::lock_guard<std::mutex> lock(mu_);
  summary_.add(record.warmup, record.e2e_s, transformer_ms);
}

// ---- output -------------------------------------------------------------------------------------

template <class Record, class Detail>
void EngineCore::deliver(const Record& record, const Detail& detail) {
  std::shared_ptr<const SinkList> sinks;
  {
    std::lock_guard<std::mutex> lock(sinks_mu_);
    sinks = sinks_;
  }
  if (sink_failed_.size() < sinks->size()) sink_failed_.resize(sinks->size(), false);
  for (std::size_t i = 0; i < sinks->size(); ++i) {
    try {
      if constexpr (std::is_same_v<Record, RequestRecord>) {
        (*sinks)[i]->on_request(record, detail);
      } else {
        (*sinks)[i]->on_train_window(record, detail);
      }
    } catch (const std::exception& e) {
      if (!sink_failed_[i]) {
        sink_failed_[i] = true;
        log_(std::string("vxperf: a record sink failed: ") + e.what() + "; it keeps being called");
      }
    } catch (...) {
      if (!sink_failed_[i]) {
        sink_failed_[i] = true;
        log_("vxperf: a record sink failed; it keeps being called");
      }
    }
  }
}

void EngineCore::emit(const RequestRecord& record, const RequestDetail& detail) {
  bool log = settings_.log_all_ranks || record.rank == 0;
  std::lock_guard<std::mutex> lock(emit_mu_);
  if (log) {
    log_(format_log_line(record));
    if (level() >= 2) {
      for (const auto& line : request_dump_lines(record, detail)) log_(line);
    }
  }
  deliver(record, detail);
}

void EngineCore::emit(const TrainWindowRecord& record, const WindowDetail& detail) {
  bool log = settings_.log_all_ranks || record.rank == 0;
  std::lock_guard<std::mutex> lock(emit_mu_);
  if (log) {
    log_(format_log_line(record));
    if (record.xrank) log_(xrank_log_line(record));
    if (level() >= 2) {
      for (const auto& line : window_dump_lines(record, detail)) log_(line);
    }
  }
  deliver(record, detail);
}

void EngineCore::log_line(std::string_view line) {
  std::lock_guard<std::mutex> lock(emit_mu_);
  log_(line);
}

// ---- exit ---------------------------------------------------------------------------------------

void EngineCore::shutdown() {
  if (forked()) return;  // the parent reports its own run
  // Each part on its own: one that fails (out of memory) does not cost the others.
  try {
    if (Trainer* trainer = existing_trainer()) trainer->finish();
  } catch (...) {
  }
  try {
    report_inference_summary();
  } catch (...) {
  }
  try {
    if (trace_ && !trace_finished_.exchange(true)) {
      ensure_trace_header(-1);
      trace_->write(finish_event(clock_->now_s()));
    }
  } catch (...) {
  }
}

void EngineCore::report_inference_summary() {
  std::optional<InferenceSummaryLine> line;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (summary_done_) return;
    bool log = settings_.log_all_ranks || topology_.rank == 0;
    line = summary_.line(topology_.rank);
    if (!line || !log) return;
    summary_done_ = true;
  }
  log_line(format_summary(*line));
}

}  // namespace vxperf::detail
