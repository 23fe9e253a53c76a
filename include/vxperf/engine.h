// The engine: the metrics state shared by the inference and training halves of a process.
//
// Most programs never name it: the scopes (vxperf/inference.h, vxperf/training.h) use the
// process-wide engine, which is built from the environment (and vxperf::configure, see
// vxperf/config.h) at first use, and is off unless VIDEOX_PERF is set. A program reaches it with
// vxperf::engine() to declare its transformer, set its topology or add a sink:
//
//   if (vxperf::Engine* e = vxperf::engine()) {   // nullptr when metrics are off
//     e->declare_model("transformer", info);       // so that its forwards are priced
//     e->set_topology(rank, world_size);           // when the launcher's environment is wrong
//   }
//
// An engine of one's own (several in a process, tests on virtual time) is made from EngineOptions
// and handed to the scopes explicitly.
//
// Thread safety: every member may be called from any thread. Requests on different threads are
// independent; the trainer is for the one thread that runs the training loop.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "vxperf/clock.h"
#include "vxperf/device.h"
#include "vxperf/internal/engine.h"
#include "vxperf/model.h"
#include "vxperf/observer.h"
#include "vxperf/peak.h"
#include "vxperf/settings.h"
#include "vxperf/sink.h"
#include "vxperf/topology.h"
#include "vxperf/xrank.h"

namespace vxperf {

class Trainer;

struct EngineOptions {
  Settings settings;
  std::shared_ptr<Clock> clock;           // default: SteadyClock
  std::shared_ptr<DeviceBackend> device;  // default: host-only
  Topology topology;                      // default: rank 0 of 1
  LogFn log;                              // default: stderr
  // In-process receivers of every record, beside the records file (settings.json_path).
  std::vector<std::shared_ptr<RecordSink>> sinks;
  // Receivers of every measurement point (vxperf/observer.h), beside the live trace.
  std::vector<std::shared_ptr<Observer>> observers;
  // Without `device`: load the CUDA backend the first time a request or the trainer names a
  // device (the process-wide engine does; a CPU-only run never touches the driver).
  bool cuda_on_demand = false;
  // What reads energy, power, clocks and throttling of requests and windows (vxperf/nvml.h).
  // Empty: NVML, loaded the first time an interval opens on a device the backend names by PCI
  // bus id (VIDEOX_PERF_NVML=0: never).
  std::shared_ptr<DeviceMeter> meter;
  // What reads the host's energy over the same intervals (cpu_energy_j, vxperf/powercap.h).
  // Empty: the powercap counters, read the first time an interval opens on such a device
  // (VIDEOX_PERF_POWERCAP=0: never).
  std::shared_ptr<DeviceMeter> host_meter;
  // The all-gather behind the live cross-rank view (settings.xrank; see vxperf/xrank.h).
  RankExchange rank_exchange;
  // When the process started, on `clock`: a training ledger's start-up begins there (the
  // process-wide engine reads it from the kernel; none: the ledger begins at the loop).
  std::optional<double> process_start_s;
};

class Engine {
 public:
  explicit Engine(EngineOptions options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const Settings& settings() const;
  // The level in effect: settings().level, or higher once vxperf::configure raised it.
  int level() const;

  Topology topology() const;
  // From the program's process group, when the launcher's environment does not say it right.
  void set_topology(int rank, int world_size);
  // How the job's ranks split its work, as the program reads it (vxperf/topology.h); replaces what
  // was said before. VIDEOX_PERF_SP, VIDEOX_PERF_TP and VIDEOX_PERF_DP_SHARD win over it.
  void set_parallel(const ParallelSpec& spec);
  // The sequence-parallel degree alone (the rest of the layout kept).
  void set_sequence_parallel(int sp);
  // Ranks that hold different samples: world size / (sequence- x tensor-parallel degree).
  int dp_degree() const;
  // Whether this rank logs (rank 0, or every rank with VIDEOX_PERF_RANKS=all).
  bool should_log() const;

  // Declares a transformer component (the stage name its calls are timed under, such as
  // "transformer") so that its forwards are priced. VIDEOX_PERF_DIT_PARAMS replaces `info.params`.
  void declare_model(std::string_view stage, const ModelInfo& info);

  // ---- measured peaks (vxperf/peak.h) ----
  // Whether MFU is to be taken against a measured peak (VIDEOX_PERF_PEAK_TFLOPS=auto, or a
  // Config's settings.measure_peak): what a front end asks before it calibrates.
  bool wants_measured_peak() const;
  // Hands over the measured per-device peak of `device` (-1: the host CPU) in `peak.dtype`. Used,
  // when measured peaks are wanted, for the requests and windows settled from now on.
  void set_measured_peak(int device, const MeasuredPeak& peak);

  // Times devices with `device` from now on (requests already open keep their backend).
  void set_device_backend(std::shared_ptr<DeviceBackend> device);
  // Adds an in-process receiver of every record settled from now on.
  void add_sink(std::shared_ptr<RecordSink> sink);
  // Adds a receiver of every measurement point from now on (requests already open, and the
  // training step in progress, keep the observers they began with).
  void add_observer(std::shared_ptr<Observer> observer);
  // A line of the program's own ("vxperf: ..."), printed by every rank.
  void notice(std::string_view line);
  // Gives the all-gather the live cross-rank view runs over (VIDEOX_PERF_XRANK=1; see
  // vxperf/xrank.h), before the first training window ends.
  void set_rank_exchange(RankExchange exchange);

  // The training half, made on first use.
  Trainer& trainer();
  // The training half if it was made, without making it; nullptr otherwise.
  Trainer* existing_trainer();

  // Flushes training, then prints the exit summaries (training, then inference), once. The
  // process-wide engine does it at normal exit; call it for an explicit shutdown.
  void shutdown();

 private:
  friend internal::EngineCore& internal::core_of(Engine& engine);
  std::unique_ptr<internal::EngineCore> core_;
};

// ---- the process-wide engine --------------------------------------------------------------------

// The process-wide engine, built at first use from vxperf::configure's Config and the environment,
// or nullptr when metrics are off (then nothing is measured, written or printed, and no device is
// touched). Its summaries are printed at normal exit.
Engine* engine();
// Whether the process-wide engine is on. One relaxed atomic load after the first call.
bool enabled();
// Prints the process-wide engine's summaries now (once); a no-op when off.
void shutdown();

}  // namespace vxperf
