// HTA's analyses of one rank's trace: the profiler-step window (§2 of the definitions), then the
// temporal breakdown, idle time per stream, communication overlap, kernel types and kernels,
// launch statistics and profiler steps (§5). Pure functions of the rows read.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "explain/hta_rules.h"
#include "explain/kineto_trace.h"
#include "vxperf/explain.h"

namespace vxperf::explain {

// A row of the window that ran on the device side (HTA's "GPU rows": stream != -1).
struct DeviceRow {
  double ts = 0, dur = 0;
  std::int64_t stream = -1;
  std::int64_t correlation = -1;
  std::int64_t partner = -1;
  std::uint32_t name = 0, cat = 0;
  std::uint32_t weight = 1;  // copies the window's join keeps (HTA duplicates the row)
  KernelType type = KernelType::kOther;
  double end() const { return ts + dur; }
};

// What the window keeps of one rank.
struct RankWindow {
  const KinetoTrace* trace = nullptr;
  std::vector<DeviceRow> device;      // in file order
  std::vector<const Row*> host;       // kept host rows read whole
  std::uint64_t plain_host_kept = 0;  // kept host rows read as their start only
  double last_start = 0;              // where the window ends (when it filters)
  bool filtered = false;
};

// The strings matching ^ProfilerStep#\d+ among a trace's names and categories (W1).
std::set<std::string> profiler_step_strings(const KinetoTrace& trace);

// The window of one rank, given the step strings of every rank (W2, W3).
RankWindow apply_window(const KinetoTrace& trace, const std::set<std::string>& steps);

// The step numbers the window keeps (§5.6).
std::set<std::int64_t> profiler_steps(const RankWindow& w);

// Every HTA analysis of one rank but the steps, which are global.
RankExplanation analyse_rank(const RankWindow& w);

// HTA's type of each interned name of a trace.
std::vector<KernelType> types_of(const KinetoTrace& trace);

}  // namespace vxperf::explain
