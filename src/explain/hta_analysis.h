// HTA's analyses of one rank's trace: the profiler-step window (§2 of the definitions), then the
// temporal breakdown, idle time per stream, communication overlap, kernel types and kernels,
// launch statistics and profiler steps (§5). Pure functions of the rows read.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "explain/hta_rules.h"
#include "explain/kineto_trace.h"
#include "vxperf/explain.h"

namespace vxperf::explain {

// A row of the window that ran on the device side (HTA's "GPU rows": stream != -1): the row, the
// copies the window's join keeps of it (HTA duplicates the row), its type. 16 bytes.
struct DeviceRow {
  const Row* row = nullptr;
  std::uint32_t weight = 1;
  KernelType type = KernelType::kOther;
  double ts() const { return row->ts; }
  double dur() const { return row->dur; }
  double end() const { return row->end(); }
};

// What the window keeps of one rank.
struct RankWindow {
  const KinetoTrace* trace = nullptr;
  std::vector<DeviceRow> device;      // in file order
  std::uint64_t plain_host_kept = 0;  // kept host rows read as their start only
  double last_start = 0;              // where the window ends (when it filters)
  bool filtered = false;
  // The correlations of the kept host rows read whole (sorted), and the number of kept host rows
  // without one, plain ones included: what the join counts a device row's copies by.
  std::vector<std::int64_t> host_correlations;
  std::uint64_t hosts_without_correlation = 0;

  // The copies of a device row the window keeps (0: none).
  std::uint32_t copies_of(const Row& device_row) const;
  bool keeps_device(const Row& device_row) const { return copies_of(device_row) > 0; }
  // Whether a host row read whole is in the window (those after the last step's start are not).
  bool keeps_host(const Row& r) const { return !r.device && (!filtered || r.ts < last_start); }
};

// The strings matching ^ProfilerStep#\d+ among a trace's names and categories (W1).
std::set<std::string> profiler_step_strings(const KinetoTrace& trace);

// The window of one rank (W2, W3). `job_steps`: the step strings of every rank of the job
// (profiler_step_strings, together) are at least two, which is all the window takes from the
// other ranks.
RankWindow apply_window(const KinetoTrace& trace, bool job_steps);

// The step numbers the window keeps (§5.6).
std::set<std::int64_t> profiler_steps(const RankWindow& w);

// Every HTA analysis of one rank but the steps, which are global. What could not be done as HTA
// does goes to `problems` (without the file's name).
RankExplanation analyse_rank(const RankWindow& w, std::vector<std::string>& problems);

// HTA's launch calls (cudaLaunchKernel, cudaMemcpyAsync, ...), as its launch statistics list them.
bool is_launch_name(std::string_view n);

// HTA's type of each interned name of a trace.
std::vector<KernelType> types_of(const KinetoTrace& trace);

}  // namespace vxperf::explain
