#include "engine/engine_core.h"

#include <algorithm>
#include <cmath>

#include "engine/fork_safety.h"
#include "output/records_file.h"
#include "output/stderr_log.h"
#include "schema/log_lines.h"
#include "trace/live_trace.h"
#include "trace/trace_events.h"
#include "training/trainer_core.h"
#include "vxperf/cuda_backend.h"
#include "vxperf/nvml.h"
#include "vxperf/nvtx.h"
#include "vxperf/powercap.h"

namespace vxperf::internal {
namespace {

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

void set_source(LayoutSources& from, const std::string& dim, const std::string& source) {
  for (auto& entry : from) {
    if (entry.first == dim) {
      entry.second = source;
      return;
    }
  }
  from.emplace_back(dim, source);
}

void drop_source(LayoutSources& from, const std::string& dim) {
  from.erase(std::remove_if(from.begin(), from.end(), [&](const auto& e) { return e.first == dim; }),
             from.end());
}

// The topology with what the environment says of the layout in its place (VIDEOX_PERF_SP,
// VIDEOX_PERF_TP, VIDEOX_PERF_DP_SHARD): a home-made setup no front end can read.
Topology with_settings(const Settings& s, Topology t) {
  if (s.sp > 0) {
    t.sp = s.sp;
    set_source(t.from, "cp", "env");
  }
  if (s.tp > 0) {
    t.tp = s.tp;
    set_source(t.from, "tp", "env");
  }
  if (s.sp > 0 || s.tp > 0) {  // a request's group and this rank's place in it follow from them
    t.group = 0;
    t.dp_rank = -1;
    drop_source(t.from, "group");
  }
  if (s.dp_shard > 0) {
    t.dp_shard = s.dp_shard;
    t.dp_replicate = 0;
    set_source(t.from, "dp_shard", "env");
    drop_source(t.from, "dp_replicate");
  }
  return t;
}

bool same_topology(const Topology& a, const Topology& b) {
  return a.rank == b.rank && a.world_size == b.world_size && a.sp == b.sp && a.tp == b.tp &&
         a.dp_shard == b.dp_shard && a.dp_replicate == b.dp_replicate && a.group == b.group &&
         a.dp_rank == b.dp_rank && a.from == b.from && a.v1 == b.v1;
}

}  // namespace

EngineCore::EngineCore(Engine& engine, EngineOptions options)
    : Context(std::move(options.settings), std::move(options.clock)),
      engine_(engine),
      log_(options.log ? never_throwing(std::move(options.log)) : stderr_log()),
      topology_(options.topology),
      rank_exchange_(std::move(options.rank_exchange)),
      requests_(*this) {
  cuda_on_demand_ = options.cuda_on_demand && !options.device;
  process_start_ = options.process_start_s;
  for (auto [given, lazy] : {std::make_pair(&options.meter, &meter_),
                             std::make_pair(&options.host_meter, &host_meter_)}) {
    if (!*given) continue;
    lazy->meter = std::move(*given);
    lazy->ptr.store(lazy->meter.get(), std::memory_order_release);
    lazy->tried.store(true);
  }
  backends_.push_back(options.device ? std::move(options.device)
                                     : std::make_shared<HostOnlyBackend>());
  device_.store(backends_.back().get(), std::memory_order_release);
  topology_ = with_settings(settings_, topology_);
  std::vector<std::shared_ptr<Observer>> observers;
  if (!settings_.trace_path.empty()) {
    // The live trace is one observer among others; its first line waits for the device.
    observers.push_back(std::make_shared<LiveTrace>(settings_.trace_path, log_, [this](int device) {
      DeviceBackend& backend = this->device();
      std::optional<std::string> name;
      if (device >= 0 && backend.available()) name = backend.device_name(device);
      Topology t = topology();
      return TraceHeader{config_event(settings_, name, device, t, process_start_), t.rank,
                         t.world_size};
    }));
  }
  if (settings_.nvtx) {
    // VIDEOX_PERF_NVTX=1: Nsight's ranges (off: nothing attached, nothing loaded).
    NvtxOptions nvtx;
    nvtx.notice = log_;
    if (auto ranges = make_nvtx_ranges(nvtx)) observers.push_back(std::move(ranges));
  }
  for (auto& observer : options.observers) {
    if (observer) observers.push_back(std::move(observer));
  }
  if (!observers.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    publish_observers_locked(std::move(observers));
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
  requests_.lock_for_fork();
  mu_.lock();
  sinks_mu_.lock();
}

void EngineCore::unlock_after_fork() {
  sinks_mu_.unlock();
  mu_.unlock();
  requests_.unlock_after_fork();
}

void EngineCore::mark_forked() {
  forked_ = true;
  if (Trainer* trainer = existing_trainer()) internal::core_of(*trainer).mark_forked();
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

template <class Make>
DeviceMeter* EngineCore::lazy_meter(LazyMeter& lazy, Make&& make) {
  if (DeviceMeter* m = lazy.ptr.load(std::memory_order_acquire)) return m;
  if (lazy.tried.load(std::memory_order_acquire)) return nullptr;
  // One try, on the first interval of a device whose backend names its PCI bus id: a host without
  // the library or the counters says so once. What loading says is said once the lock is
  // released; later notices (a device NVML cannot see, a bad reading) go to the log as they come.
  struct Held {
    std::atomic<bool> loading{true};
    std::vector<std::string> lines;
  };
  auto held = std::make_shared<Held>();
  {
    std::lock_guard<std::mutex> lock(lazy.mu);
    if (!lazy.tried.load()) {
      auto notice = [held, log = log_](std::string_view line) {
        if (held->loading.load()) {
          held->lines.emplace_back(line);
        } else {
          log(line);
        }
      };
      lazy.meter = make(notice);
      lazy.ptr.store(lazy.meter.get(), std::memory_order_release);
      lazy.tried.store(true, std::memory_order_release);
    }
    held->loading.store(false);
  }
  for (const auto& line : held->lines) log_(line);
  return lazy.ptr.load(std::memory_order_acquire);
}

DeviceMeter* EngineCore::meter() {
  return lazy_meter(meter_, [](std::function<void(std::string_view)> notice) {
    NvmlOptions options;
    options.notice = std::move(notice);
    return make_nvml_meter(options);
  });
}

DeviceMeter* EngineCore::host_meter() {
  return lazy_meter(host_meter_, [](std::function<void(std::string_view)> notice) {
    PowercapOptions options;
    options.notice = std::move(notice);
    return make_powercap_meter(options);
  });
}

Topology EngineCore::topology() const {
  std::lock_guard<std::mutex> lock(mu_);
  return topology_;
}

void EngineCore::change_topology(Topology t) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    t = with_settings(settings_, t);
    if (same_topology(t, topology_)) return;
    topology_ = t;
  }
  notify(observers(), [&](Observer& o) { o.on_topology(t); });
}

void EngineCore::set_topology(int rank, int world_size) {
  if (world_size < 1 || rank < 0 || rank >= world_size) return;
  Topology t = topology();
  t.rank = rank;
  t.world_size = world_size;
  change_topology(std::move(t));
}

void EngineCore::set_parallel(const ParallelSpec& spec) {
  Topology t = topology();
  set_parallel_spec(t, spec);
  change_topology(std::move(t));
}

void EngineCore::set_sequence_parallel(int sp) {
  if (sp < 1) return;
  Topology t = topology();
  t.sp = sp;
  set_source(t.from, "cp", "program");
  change_topology(std::move(t));
}

void EngineCore::add_sink(std::shared_ptr<RecordSink> sink) {
  if (!sink) return;
  std::lock_guard<std::mutex> lock(sinks_mu_);
  auto sinks = std::make_shared<SinkList>(*sinks_);
  sinks->push_back(std::move(sink));
  sinks_ = std::move(sinks);
}

void EngineCore::publish_observers_locked(std::vector<std::shared_ptr<Observer>> observers) {
  observer_list_ = observers;
  published_.push_back(std::make_unique<ObserverList>(std::move(observers)));
  observers_.store(published_.back().get(), std::memory_order_release);
}

void EngineCore::add_observer(std::shared_ptr<Observer> observer) {
  if (!observer || forked()) return;
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<Observer>> observers = observer_list_;
  observers.push_back(std::move(observer));
  publish_observers_locked(std::move(observers));
}

void EngineCore::set_rank_exchange(RankExchange exchange) {
  std::lock_guard<std::mutex> lock(mu_);
  rank_exchange_ = std::move(exchange);
}

RankExchange EngineCore::rank_exchange() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rank_exchange_;
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
  notify(observers(), [&](Observer& o) { o.on_peak(device, peak); });
}

Trainer& EngineCore::trainer() {
  if (Trainer* t = trainer_ptr_.load(std::memory_order_acquire)) return *t;
  std::lock_guard<std::mutex> lock(mu_);
  if (!trainer_) {
    trainer_ = make_trainer(*this);
    trainer_ptr_.store(trainer_.get(), std::memory_order_release);
  }
  return *trainer_;
}

// ---- output -------------------------------------------------------------------------------------

template <class Call>
void EngineCore::deliver(Call call) {
  std::shared_ptr<const SinkList> sinks;
  {
    std::lock_guard<std::mutex> lock(sinks_mu_);
    sinks = sinks_;
  }
  if (sink_failed_.size() < sinks->size()) sink_failed_.resize(sinks->size(), false);
  for (std::size_t i = 0; i < sinks->size(); ++i) {
    try {
      call(*(*sinks)[i]);
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
  deliver([&](RecordSink& sink) { sink.on_request(record, detail); });
}

void EngineCore::emit(const RequestLoad& load) {
  std::lock_guard<std::mutex> lock(emit_mu_);
  deliver([&](RecordSink& sink) { sink.on_request_load(load); });
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
  deliver([&](RecordSink& sink) { sink.on_train_window(record, detail); });
}

// No line of its own: the training summary the trainer logs next is the reference's.
void EngineCore::emit(const TrainEndRecord& record) {
  std::lock_guard<std::mutex> lock(emit_mu_);
  deliver([&](RecordSink& sink) { sink.on_train_end(record); });
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
    if (auto line = requests_.take_summary()) log_line(format_summary(*line));
  } catch (...) {
  }
  try {
    finish_capture();
  } catch (...) {
  }
  try {
    if (!finished_.exchange(true)) {
      double t = clock_->now_s();
      notify(observers(), [&](Observer& o) { o.on_finish(t); });
    }
  } catch (...) {
  }
}

}  // namespace vxperf::internal
