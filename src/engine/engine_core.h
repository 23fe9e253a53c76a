// The engine (internal; vxperf::Engine is its public face): the composition root. It holds what
// both halves share (runtime/context.h: settings, clock, device backends, observers), makes the
// inference half (inference/requests.h) and the training half (training/trainer_core.h) with
// itself as their Context, prices peaks, and writes every line and record.
//
// Thread safety: every member may be called from any thread. `mu_` guards the topology, the
// trainer's creation, the rank exchange and the measured peaks; lines and records are emitted
// under `emit_mu_` only, so no I/O ever happens under `mu_`.
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

#include "inference/requests.h"
#include "runtime/context.h"
#include "vxperf/engine.h"
#include "vxperf/records.h"
#include "vxperf/sink.h"
#include "vxperf/training.h"

namespace vxperf::internal {

class EngineCore final : public Context {
 public:
  EngineCore(Engine& engine, EngineOptions options);
  ~EngineCore() override;

  Engine& engine() { return engine_; }
  Requests& requests() { return requests_; }

  // The fork handlers hold the engine's short-lived locks around fork(); in the child, switch it
  // (and its trainer) off.
  void lock_for_fork();
  void unlock_after_fork();
  void mark_forked();
  void raise_level(int level);
  void set_device_backend(std::shared_ptr<DeviceBackend> device);

  void set_topology(int rank, int world_size);
  void set_parallel(const ParallelSpec& spec);
  void set_sequence_parallel(int sp);

  void declare_model(std::string_view stage, const ModelInfo& info) {
    requests_.declare_model(stage, info);
  }
  void add_sink(std::shared_ptr<RecordSink> sink);
  void add_observer(std::shared_ptr<Observer> observer);
  void set_rank_exchange(RankExchange exchange);
  bool wants_measured_peak() const { return settings_.measure_peak && !settings_.peak_tflops; }
  void set_measured_peak(int device, const MeasuredPeak& peak);

  Trainer& trainer();
  // The trainer if one was made, without making one. Lock-free.
  Trainer* existing_trainer() { return trainer_ptr_.load(std::memory_order_acquire); }
  void shutdown();

  // ---- Context ----
  DeviceBackend& backend_for(int device) override;
  DeviceMeter* meter() override;
  DeviceMeter* host_meter() override;
  Topology topology() const override;
  ResolvedPeak peak(std::optional<int> device, Dtype dtype) override;
  void emit(const RequestRecord& record, const RequestDetail& detail) override;
  void emit(const TrainWindowRecord& record, const WindowDetail& detail) override;
  void emit(const TrainEndRecord& record) override;
  void emit(const RequestLoad& load) override;
  void notice(std::string_view line) override { log_(line); }
  void log_line(std::string_view line) override;
  RankExchange rank_exchange() const override;

 private:
  using SinkList = std::vector<std::shared_ptr<RecordSink>>;

  template <class Call>
  void deliver(Call call);  // each sink, its first failure said once (under emit_mu_)
  // `t` made the topology, observers told when it changed.
  void change_topology(Topology t);
  // Publishes `observers` as the list the hot path reads (under mu_).
  void publish_observers_locked(std::vector<std::shared_ptr<Observer>> observers);

  Engine& engine_;
  LogFn log_;
  std::vector<std::shared_ptr<DeviceBackend>> backends_;  // every backend used; never shrinks
  bool cuda_on_demand_ = false;
  // A meter the program gave (EngineOptions::meter, host_meter), else one made on first use.
  struct LazyMeter {
    std::shared_ptr<DeviceMeter> meter;
    std::atomic<DeviceMeter*> ptr{nullptr};
    std::atomic<bool> tried{false};
    std::mutex mu;
  };
  // The meter of `lazy`, made by `make(notice)` on the first call.
  template <class Make>
  DeviceMeter* lazy_meter(LazyMeter& lazy, Make&& make);
  LazyMeter meter_;                    // NVML
  LazyMeter host_meter_;               // the powercap counters
  std::atomic<bool> finished_{false};  // observers were told of the finish

  mutable std::mutex mu_;  // see the file comment
  Topology topology_;
  std::unique_ptr<Trainer> trainer_;
  std::atomic<Trainer*> trainer_ptr_{nullptr};
  RankExchange rank_exchange_;
  // Measured peaks by (device, dtype); nullopt: looked for in the cache, not there (said once).
  std::map<std::pair<int, Dtype>, std::optional<double>> measured_;
  std::vector<std::shared_ptr<Observer>> observer_list_;  // the latest list, as added
  std::vector<std::unique_ptr<ObserverList>> published_;  // every list published; never shrinks

  Requests requests_;

  std::mutex sinks_mu_;
  std::shared_ptr<const SinkList> sinks_;
  std::mutex emit_mu_;             // keeps one record's lines together and records in settle order
  std::vector<bool> sink_failed_;  // under emit_mu_: each sink's first failure is said once
};

}  // namespace vxperf::internal
