// The engine: process-wide metrics state shared by the inference and training halves.
//
// It owns the settings, the injected clock and device backend, the output, the topology, the
// transformer models declared for inference pricing, the request history the exit summary is made
// from, and the trainer. Live runs use the process-wide engine (vxperf::engine()); replay and tests
// build their own with a virtual clock and a simulated device.
//
// Thread safety: all public members may be called from any thread. Requests on different threads
// are independent; the training API is meant for the one thread that runs the training loop.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vxperf/clock.h"
#include "vxperf/cost_model.h"
#include "vxperf/device.h"
#include "vxperf/output.h"
#include "vxperf/records.h"
#include "vxperf/settings.h"

namespace vxperf {

class Trainer;
class TraceWriter;
struct Request;

struct Topology {
  int rank = 0;
  int world_size = 1;
  int sp = 1;  // sequence-parallel degree: ranks sharing one sample
};

// Rank and world size from the launcher's environment: RANK/WORLD_SIZE (torchrun, accelerate),
// else OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE (Open MPI), PMI_RANK/PMI_SIZE (MPICH, Intel MPI),
// SLURM_PROCID/SLURM_NTASKS (srun). Values that do not parse are reported in `problems`.
Topology topology_from_env(const EnvLookup& env, std::vector<std::string>* problems);

// What the engine knows of a transformer component, for pricing its forwards.
struct ModelInfo {
  std::int64_t params = 0;                   // unsharded parameter count
  std::int64_t trainable = -1;               // training only; -1: all of them
  bool checkpointing = false;                // training only: gradient checkpointing on
  std::optional<AttentionWidths> attention;  // nullopt when the widths could not be read
  std::int64_t text_tokens = 0;              // padded text length of cross-attention, 0 unknown
};

struct EngineParts {
  Settings settings;
  std::shared_ptr<Clock> clock;           // default: SteadyClock
  std::shared_ptr<DeviceBackend> device;  // default: HostOnlyBackend
  std::shared_ptr<Output> output;         // default: StandardOutput(settings.json_path)
  Topology topology;                      // default: rank 0 of 1
  // Without `device`: load the CUDA backend the first time a request or the trainer names a device
  // (the process-wide engine does; a CPU-only run never touches the driver).
  bool cuda_on_demand = false;
};

class Engine {
 public:
  explicit Engine(EngineParts parts);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const Settings& settings() const { return settings_; }
  Clock& clock() { return *clock_; }
  DeviceBackend& device() { return *device_; }
  Output& output() { return *output_; }
  void set_device_backend(std::shared_ptr<DeviceBackend> device);
  // The backend to time `device` on: loads the CUDA backend on first use when the engine was made
  // with `cuda_on_demand` and no backend of its own.
  std::shared_ptr<DeviceBackend> backend_for(int device);

  Topology topology() const;
  void set_topology(int rank, int world_size);
  void set_sequence_parallel(int sp);
  // "[Perf][rank{N}]"
  std::string tag() const;
  bool should_log() const;
  // Ranks that hold different samples: world size / sequence-parallel degree.
  int dp_degree() const;

  // Declares a transformer component (stage name such as "transformer") so that its forwards are
  // priced. VIDEOX_PERF_DIT_PARAMS replaces `info.params`.
  void declare_model(std::string_view stage, const ModelInfo& info);

  // Prints the exit summaries (training first, then inference), once. Called at normal exit for
  // the process-wide engine; call it yourself for an explicit shutdown.
  void shutdown();

  Trainer& trainer();
  // The trainer if one was made, without making one.
  Trainer* existing_trainer();

  // The raw event trace (VIDEOX_PERF_TRACE); nullptr when off.
  TraceWriter* trace() { return trace_.get(); }

  // Internal to the request scope and replay.
  Request* begin_request(int device, void* stream);
  void end_request(Request* request);
  std::vector<RequestRecord> history() const;
  void notice(std::string_view message);  // a warning line, printed by every rank

 private:
  friend class Trainer;
  struct DeclaredModel {
    std::string stage;
    std::int64_t params = 0;
    std::optional<AttentionWidths> attention;
    std::int64_t text_tokens = 0;
  };

  void settle(Request* request, double t_end);
  std::optional<DitThroughput> dit_throughput(const Request& request,
                                              const std::vector<StageSummary>& stages,
                                              const std::vector<DeclaredModel>& models,
                                              const Topology& topo);
  void ensure_trace_header(int device);
  std::optional<double> peak_tflops(std::optional<int> device);
  void report_inference_summary();

  Settings settings_;
  std::shared_ptr<Clock> clock_;
  std::shared_ptr<DeviceBackend> device_;
  std::vector<std::shared_ptr<DeviceBackend>> retired_;
  bool cuda_on_demand_ = false;
  std::shared_ptr<Output> output_;
  std::unique_ptr<TraceWriter> trace_;
  std::atomic<bool> trace_finished_{false};

  mutable std::mutex mu_;  // guards everything below
  Topology topology_;
  std::vector<DeclaredModel> models_;
  std::int64_t next_request_ = 0;
  std::vector<RequestRecord> history_;
  bool summary_done_ = false;
  std::unique_ptr<Trainer> trainer_;
};

// ---- The process-wide engine -------------------------------------------------------------------

// The engine built from the process environment at first use, or nullptr when VIDEOX_PERF is off
// (then nothing is measured, written or printed, and no device is touched). Its summaries are
// printed at normal exit.
Engine* engine();
// Whether the process-wide engine is on. One relaxed atomic load after the first call.
bool enabled();
// Prints the process-wide engine's summaries now (once); a no-op when disabled.
void shutdown();

}  // namespace vxperf
