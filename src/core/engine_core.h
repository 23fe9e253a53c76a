// The engine's state and the request half (internal; vxperf::Engine is its public face).
//
// Thread safety: every member may be called from any thread. `mu_` guards the topology, the
// declared models, the request counter, the summary, the trainer's creation and the rank exchange;
// lines and records are emitted under `emit_mu_` only, so no I/O ever happens under `mu_`.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/fork_safety.h"
#include "core/inference_summary.h"
#include "core/pricing.h"
#include "core/request.h"
#include "vxperf/engine.h"
#include "vxperf/inference.h"
#include "vxperf/records.h"
#include "vxperf/sink.h"

namespace vxperf::detail {

class TraceWriter;

class EngineCore {
 public:
  EngineCore(Engine& engine, EngineOptions options);
  ~EngineCore();
  EngineCore(const EngineCore&) = delete;
  EngineCore& operator=(const EngineCore&) = delete;

  Engine& engine() { return engine_; }
  // Whether this engine was made before the process forked, in the child: then it is off there
  // (see core/fork_safety.h). A plain flag: only the child's fork handler sets it, when the
  // forking thread is the child's only one; the hot path pays one load.
  bool forked() const noexcept { return forked_; }
  // The fork handlers hold the engine's short-lived locks around fork(); in the child, switch it
  // (and its trainer) off.
  void lock_for_fork();
  void unlock_after_fork();
  void mark_forked();
  const Settings& settings() const { return settings_; }
  // The level in effect (settings().level, or higher when raised since).
  int level() const { return level_.load(std::memory_order_relaxed); }
  void raise_level(int level);
  Clock& clock() { return *clock_; }
  // The backend in use. Read without a lock: it is replaced only by set_device_backend, and the
  // one replaced stays alive.
  DeviceBackend& device() { return *device_.load(std::memory_order_acquire); }
  void set_device_backend(std::shared_ptr<DeviceBackend> device);
  // The backend to time `device` on: loads the CUDA backend on first use when the engine was made
  // with `cuda_on_demand` and no backend of its own.
  DeviceBackend& backend_for(int device);

  Topology topology() const;
  void set_topology(int rank, int world_size);
  void set_sequence_parallel(int sp);
  int dp_degree() const;
  bool should_log() const;

  void declare_model(std::string_view stage, const ModelInfo& info);
  // The same for one request only (see Request::models).
  void declare_model(Request& request, std::string_view stage, const ModelInfo& info);
  void add_sink(std::shared_ptr<RecordSink> sink);
  void set_rank_exchange(RankExchange exchange);
  RankExchange rank_exchange() const;
  // A line printed by every rank.
  void notice(std::string_view line) { log_(line); }
  // A line kept whole among concurrent records' lines (a summary).
  void log_line(std::string_view line);
  // The per-device peak of `device` (nullopt: host only) in `dtype`: the variable's number, else
  // (auto) a measured one, else the table's.
  ResolvedPeak peak(std::optional<int> device, Dtype dtype);
  bool wants_measured_peak() const { return settings_.measure_peak && !settings_.peak_tflops; }
  void set_measured_peak(int device, const MeasuredPeak& peak);

  Trainer& trainer();
  // The trainer if one was made, without making one. Lock-free.
  Trainer* existing_trainer() { return trainer_ptr_.load(std::memory_order_acquire); }
  void shutdown();

  // ---- requests ----
  Request* begin_request(const RequestOptions& options);
  // Ends and settles the request (synchronizing its device once), then recycles it.
  void end_request(Request* request, bool failed);
  // Forgets a request that never ended (a replayed script that stops inside one): no record, no
  // line, as the reference never reports a call that did not return; its events are released.
  void abandon_request(Request* request);

  // ---- output: the line (and level-2 dump) where this rank logs, then every sink ----
  void emit(const RequestRecord& record, const RequestDetail& detail);
  void emit(const TrainWindowRecord& record, const WindowDetail& detail);

  // ---- the raw event trace (VIDEOX_PERF_TRACE); nullptr when off ----
  TraceWriter* trace() { return trace_.get(); }
  void ensure_trace_header(int device);

 private:
  using SinkList = std::vector<std::shared_ptr<RecordSink>>;

  DeclaredModel priced_model(std::string_view stage, const ModelInfo& info) const;
  void settle(Request& request, double t_end, bool failed);
  template <class Record, class Detail>
  void deliver(const Record& record, const Detail& detail);
  void report_inference_summary();

  Engine& engine_;
  bool forked_ = false;
  Settings settings_;
  std::atomic<int> level_;
  std::shared_ptr<Clock> clock_;
  LogFn log_;
  std::atomic<DeviceBackend*> device_{nullptr};
  std::vector<std::shared_ptr<DeviceBackend>> backends_;  // every backend used; never shrinks
  bool cuda_on_demand_ = false;
  std::unique_ptr<TraceWriter> trace_;
  std::atomic<bool> trace_finished_{false};

  mutable std::mutex mu_;  // see the file comment
  Topology topology_;
  std::vector<DeclaredModel> models_;
  std::int64_t next_request_ = 0;
  InferenceSummary summary_;
  bool summary_done_ = false;
  std::unique_ptr<Trainer> trainer_;
  std::atomic<Trainer*> trainer_ptr_{nullptr};
  RankExchange rank_exchange_;
  // Measured peaks by (device, dtype); nullopt: looked for in the cache, not there (said once).
  std::map<std::pair<int, Dtype>, std::optional<double>> measured_;

  std::mutex sinks_mu_;
  std::shared_ptr<const SinkList> sinks_;
  std::mutex emit_mu_;             // keeps one record's lines together and records in settle order
  std::vector<bool> sink_failed_;  // under emit_mu_: each sink's first failure is said once
};

}  // namespace vxperf::detail
