#include "explain/hta_analysis.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>

#include "base/strings.h"

namespace vxperf::explain {
namespace {

using internal::starts_with;

// ProfilerStep\s*#\s*(\d+) at the start of the name: its number, or -1.
std::int64_t step_number(std::string_view s) {
  constexpr std::string_view kPrefix = "ProfilerStep";
  if (!starts_with(s, kPrefix)) return -1;
  std::size_t i = kPrefix.size();
  auto space = [&](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
  };
  while (i < s.size() && space(s[i])) ++i;
  if (i >= s.size() || s[i] != '#') return -1;
  ++i;
  while (i < s.size() && space(s[i])) ++i;
  if (i >= s.size() || s[i] < '0' || s[i] > '9') return -1;
  std::int64_t n = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9' && n < (std::int64_t{1} << 58)) {
    n = n * 10 + (s[i++] - '0');
  }
  return n;
}

std::optional<double> percent_of(double part, double whole, int decimals) {
  if (whole == 0 || !std::isfinite(part / whole)) return std::nullopt;
  return numpy_round(100 * (part / whole), decimals);
}

// The union of the rows of one type (or of all, without one); `rows` are in order of start.
// `clamped`: a row of negative duration counts as one of none.
std::vector<Interval> union_of_type(const std::vector<DeviceRow>& rows,
                                    std::optional<KernelType> type, bool clamped = false) {
  UnionBuilder u;
  for (int pass = 0; pass < 2; ++pass) {  // the groups counted, then made in a vector that size
    if (pass == 1) u.reserve();
    for (const DeviceRow& r : rows) {
      if (!type || r.type == *type) u.add(r.ts(), clamped ? std::max(r.ts(), r.end()) : r.end());
    }
  }
  return u.take();
}

Temporal temporal_of(const std::vector<DeviceRow>& rows, bool clamped) {
  Temporal t;
  if (rows.empty()) return t;
  double first = std::numeric_limits<double>::infinity();
  double last = -first;
  for (const DeviceRow& r : rows) {
    first = std::min(first, r.ts());
    last = std::max(last, clamped ? std::max(r.ts(), r.end()) : r.end());
  }
  t.kernel_time_us = last - first;
  t.idle_time_us = t.kernel_time_us - length(union_of_type(rows, std::nullopt, clamped));
  t.compute_time_us = length(union_of_type(rows, KernelType::kComputation, clamped));
  t.non_compute_time_us = t.kernel_time_us - t.compute_time_us - t.idle_time_us;
  t.idle_pct = percent_of(t.idle_time_us, t.kernel_time_us, 2);
  t.compute_pct = percent_of(t.compute_time_us, t.kernel_time_us, 2);
  t.non_compute_pct = percent_of(t.non_compute_time_us, t.kernel_time_us, 2);
  return t;
}

// HTA's temporal breakdown; where HTA stops with an assertion (rows of negative duration after
// its rounding can make a union shorter than a part of it: a non-compute time below 0, idle or
// compute time beyond the span), the breakdown with those rows as 0 us, and that is said.
Temporal temporal_breakdown(const std::vector<DeviceRow>& rows,
                            std::vector<std::string>& problems) {
  Temporal t = temporal_of(rows, false);
  const bool asserts = t.idle_time_us > t.kernel_time_us || t.compute_time_us > t.kernel_time_us ||
                       t.non_compute_time_us < 0;
  if (!asserts) return t;
  const Temporal c = temporal_of(rows, true);
  auto us = [](double v) {
    return internal::strprintf(v == std::floor(v) ? "%.0f us" : "%.3f us", v);
  };
  problems.push_back(
      "HTA's temporal breakdown stops here with an assertion (non-compute " +
      us(t.non_compute_time_us) + ", idle " + us(t.idle_time_us) + " and compute " +
      us(t.compute_time_us) + " of a span of " + us(t.kernel_time_us) +
      ", from rows of negative duration): given with those rows as 0 us (non-compute " +
      us(c.non_compute_time_us) + ", idle " + us(c.idle_time_us) + ", compute " +
      us(c.compute_time_us) + " of " + us(c.kernel_time_us) + ")");
  return c;
}

bool is_idle_category(std::string_view cat) {
  return cat == "kernel" || cat == "Kernel" || cat == "gpu_memset" || cat == "Memset" ||
         cat == "gpu_memcpy" || cat == "Memcpy" || cat == "mtia_ccp_events";
}

std::vector<StreamIdle> idle_by_stream(const RankWindow& w) {
  const KinetoTrace& trace = *w.trace;
  // The launch's start: the kept row at the index the launch link gives (a device row is kept
  // when the window kept it).
  auto launch_ts = [&](std::int64_t index) -> std::optional<double> {
    const Row* r = trace.row_at(index);
    if (r == nullptr) return std::nullopt;
    if (r->device ? !w.keeps_device(*r) : !w.keeps_host(*r)) return std::nullopt;
    return r->ts;
  };
  std::map<std::int64_t, std::vector<const DeviceRow*>> streams;
  std::vector<char> counted(trace.categories.size(), 0);
  for (std::size_t i = 0; i < trace.categories.size(); ++i) {
    counted[i] = is_idle_category(trace.categories[i]) ? 1 : 0;
  }
  for (const DeviceRow& r : w.device) {  // in order of start
    if (counted[r.row->cat]) streams[r.row->stream].push_back(&r);
  }
  std::vector<StreamIdle> out;
  for (auto& [stream, rows] : streams) {
    double host = 0, kernel = 0, other = 0;
    bool first = true;
    double prev_end = 0;
    for (const DeviceRow* r : rows) {
      const std::optional<double> launch = launch_ts(r->row->partner);
      for (std::uint32_t copy = 0; copy < r->weight; ++copy) {
        if (!first) {
          const double gap = r->ts() - prev_end;
          if (launch && *launch > prev_end) {
            host += gap;
          } else if (gap < 30) {
            kernel += gap;
          } else {
            other += gap;
          }
        }
        first = false;
        prev_end = r->end();
      }
    }
    StreamIdle s;
    s.stream = trace.stream(*rows.front()->row);
    s.host_wait_us = numpy_round(host, 2);
    s.kernel_wait_us = numpy_round(kernel, 2);
    s.other_us = numpy_round(other, 2);
    const double total = host + kernel + other;
    if (total != 0 && std::isfinite(host / total)) {
      s.host_wait_ratio = numpy_round(host / total, 2);
      s.kernel_wait_ratio = numpy_round(kernel / total, 2);
      s.other_ratio = numpy_round(other / total, 2);
    }
    out.push_back(s);
  }
  return out;
}

// The segments of the timeline by which of computation, communication and memory run.
std::map<std::string, double> kernel_type_segments(const std::vector<DeviceRow>& rows) {
  const KernelType kTypes[] = {KernelType::kComputation, KernelType::kCommunication,
                               KernelType::kMemory};
  std::vector<std::vector<Interval>> unions;
  for (KernelType t : kTypes) unions.push_back(union_of_type(rows, t));
  std::map<std::string, double> out;
  sweep(unions, [&](int running, double length) {
    if (running <= 0) return;
    std::string label;
    for (int bit = 0; bit < 3; ++bit) {
      if (running & (1 << bit)) {
        if (!label.empty()) label += " overlapping ";
        label += kernel_type_name(kTypes[bit]);
      }
    }
    out[label] += std::trunc(length);  // HTA makes each segment an integer (astype(int))
  });
  return out;
}

// One name's durations, summed as they come: count, sum, max, min, and the squared deviations
// by Welford's update (weighted: a row the window keeps k times counts k times).
struct NameStats {
  std::uint32_t name = 0;
  std::int64_t count = 0;
  double sum = 0, max = -std::numeric_limits<double>::infinity(),
         min = std::numeric_limits<double>::infinity(), mean = 0, std = 0;
  double running_mean = 0, m2 = 0;

  void add(double v, std::uint32_t weight) {
    for (std::uint32_t k = 0; k < weight; ++k) {
      ++count;
      sum += v;
      const double delta = v - running_mean;
      running_mean += delta / static_cast<double>(count);
      m2 += delta * (v - running_mean);
    }
    max = std::max(max, v);
    min = std::min(min, v);
  }
  void finish() {
    mean = sum / static_cast<double>(count);
    std = count > 1 ? std::sqrt(m2 / static_cast<double>(count - 1)) : 0;
  }
};

// HTA's per-kernel table of one type: stats of `dur` per name, the names past the 10th or the 0.8
// quantile of the cumulative sum folded into "others".
std::vector<KernelStats> kernel_table(const RankWindow& w, KernelType type) {
  std::unordered_map<std::uint32_t, NameStats> by_name;
  for (const DeviceRow& r : w.device) {
    if (r.type != type) continue;
    NameStats& s = by_name[r.row->name];
    s.name = r.row->name;
    s.add(r.dur(), r.weight);
  }
  std::vector<NameStats> stats;
  for (auto& [name, s] : by_name) {
    s.finish();
    stats.push_back(s);
  }
  const KinetoTrace& trace = *w.trace;
  std::sort(stats.begin(), stats.end(), [&](const NameStats& a, const NameStats& b) {
    if (a.sum != b.sum) return a.sum > b.sum;
    return trace.str(a.name) < trace.str(b.name);
  });
  std::vector<KernelStats> out;
  const char* type_name = kernel_type_name(type);
  auto row = [&](std::string name, const NameStats& s, std::int64_t count) {
    out.push_back({std::move(name), type_name, count, s.sum, s.max, s.min, s.mean, s.std});
  };
  constexpr std::size_t kNamed = 10;
  if (stats.size() <= kNamed) {
    for (const NameStats& s : stats) row(std::string(trace.str(s.name)), s, s.count);
    return out;
  }
  std::vector<double> cumsum;
  double running = 0;
  for (const NameStats& s : stats) cumsum.push_back(running += s.sum);
  const double cut = numpy_quantile(cumsum, 0.8);
  // Regrouped as HTA does: over the per-name sums, so a named row's max, min and mean are its sum.
  std::map<std::string, std::pair<NameStats, std::int64_t>> groups;  // and the rows (or names)
  for (std::size_t i = 0; i < stats.size(); ++i) {
    const bool other = cumsum[i] > cut || i >= kNamed;
    auto& [sums, count] = groups[other ? "others" : std::string(trace.str(stats[i].name))];
    sums.add(stats[i].sum, 1);
    count += other ? 1 : stats[i].count;
  }
  for (auto& [name, group] : groups) {
    group.first.finish();
    row(name, group.first, group.second);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const KernelStats& a, const KernelStats& b) { return a.sum_us > b.sum_us; });
  return out;
}

LaunchStats launch_stats(const RankWindow& w) {
  const KinetoTrace& trace = *w.trace;
  // The correlations of the kept launch calls, then the kept host rows without a stream that
  // carry one of them (the CPU side), sorted by correlation to be paired with the device rows.
  std::vector<std::int64_t> launched;
  for (const Row& r : trace.rows) {
    if (w.keeps_host(r) && is_launch_name(trace.str(r.name))) launched.push_back(r.correlation);
  }
  for (const DeviceRow& r : w.device) {
    if (is_launch_name(trace.str(r.row->name))) launched.push_back(r.row->correlation);
  }
  std::sort(launched.begin(), launched.end());
  launched.erase(std::unique(launched.begin(), launched.end()), launched.end());
  auto is_launched = [&](std::int64_t c) {
    return std::binary_search(launched.begin(), launched.end(), c);
  };
  std::vector<const Row*> cpu;
  for (const Row& r : trace.rows) {
    if (w.keeps_host(r) && r.stream == -1 && is_launched(r.correlation)) cpu.push_back(&r);
  }
  auto by_correlation = [](const Row* a, const Row* b) { return a->correlation < b->correlation; };
  std::stable_sort(cpu.begin(), cpu.end(), by_correlation);
  LaunchStats s;
  for (const DeviceRow& g : w.device) {
    if (!is_launched(g.row->correlation)) continue;
    auto [lo, hi] = std::equal_range(cpu.begin(), cpu.end(), g.row, by_correlation);
    for (auto it = lo; it != hi; ++it) {
      const Row* c = *it;
      const double launch_delay = std::max(0.0, g.ts() - c->ts - c->dur);
      s.n_events += g.weight;
      if (c->dur > 50) s.n_long_runtime += g.weight;
      if (launch_delay > 100) s.n_long_launch_delay += g.weight;
      if (c->dur <= 50 && g.dur() < c->dur) s.n_short_gpu += g.weight;
    }
  }
  return s;
}

}  // namespace

bool is_launch_name(std::string_view n) {
  return n == "cudaLaunchKernel" || n == "cudaLaunchKernelExC" ||
         n == "runFunction - job_prep_and_submit_for_execution" || n == "cudaMemcpyAsync" ||
         n == "cudaMemsetAsync";
}

std::vector<KernelType> types_of(const KinetoTrace& trace) {
  std::vector<KernelType> types;
  types.reserve(trace.strings.size());
  for (const std::string& s : trace.strings) types.push_back(kernel_type_of(s));
  return types;
}

std::set<std::string> profiler_step_strings(const KinetoTrace& trace) {
  std::vector<char> seen_name(trace.strings.size(), 0), seen_cat(trace.categories.size(), 0);
  std::set<std::string> out;
  auto add = [&](std::vector<char>& seen, std::size_t id, std::string_view s) {
    if (seen[id]) return;
    seen[id] = 1;
    if (is_step_string(s)) out.emplace(s);
  };
  for (const Row& r : trace.rows) {
    add(seen_name, r.name, trace.str(r.name));
    add(seen_cat, r.cat, trace.category(r));
  }
  return out;
}

RankWindow apply_window(const KinetoTrace& trace, bool job_steps) {
  RankWindow w;
  w.trace = &trace;
  const std::vector<KernelType> types = types_of(trace);
  w.filtered = job_steps && trace.host_rows() > 0;
  if (w.filtered) {
    // A host row's name is among the job's step strings exactly when it is a step string: the
    // job's are every trace's, this one's included.
    std::vector<char> is_step(trace.strings.size(), 0);
    for (std::size_t i = 0; i < trace.strings.size(); ++i) {
      is_step[i] = is_step_string(trace.strings[i]) ? 1 : 0;
    }
    bool any_step = false;
    double last = -std::numeric_limits<double>::infinity();
    double first = std::numeric_limits<double>::infinity();
    for (const Row& r : trace.rows) {
      if (r.device) continue;
      first = std::min(first, r.ts);
      if (is_step[r.name]) {
        any_step = true;
        last = std::max(last, r.ts);
      }
    }
    if (trace.plain_host.count > 0) first = std::min(first, trace.plain_host.first_ts);
    w.last_start = any_step ? last : first;
  }
  // The join: a device row is kept once per kept host row of its correlation.
  std::size_t device_rows = 0;
  for (const Row& r : trace.rows) {
    device_rows += r.device || r.stream != -1 ? 1 : 0;
    if (!w.keeps_host(r)) continue;
    if (r.correlation == -1) {
      ++w.hosts_without_correlation;
    } else {
      w.host_correlations.push_back(r.correlation);
    }
  }
  std::sort(w.host_correlations.begin(), w.host_correlations.end());
  w.device.reserve(device_rows);
  w.plain_host_kept = w.filtered ? trace.plain_host.before(w.last_start) : trace.plain_host.count;
  w.hosts_without_correlation += w.plain_host_kept;
  for (const Row& r : trace.rows) {
    if (r.device) {
      const std::uint32_t weight = w.copies_of(r);
      if (weight > 0 && r.stream != -1) w.device.push_back({&r, weight, types[r.name]});
    } else if (r.stream != -1 && w.keeps_host(r)) {
      w.device.push_back({&r, 1, types[r.name]});  // a host row with a stream counts as one
    }
  }
  // In order of start (stable: rows starting together stay in file order), as every union and
  // every stream's gaps take them.
  std::stable_sort(w.device.begin(), w.device.end(),
                   [](const DeviceRow& a, const DeviceRow& b) { return a.ts() < b.ts(); });
  return w;
}

std::uint32_t RankWindow::copies_of(const Row& device_row) const {
  if (!filtered) return 1;
  if (device_row.correlation == -1) {
    return static_cast<std::uint32_t>(
        std::min<std::uint64_t>(hosts_without_correlation, UINT32_MAX));
  }
  auto [lo, hi] =
      std::equal_range(host_correlations.begin(), host_correlations.end(), device_row.correlation);
  return static_cast<std::uint32_t>(hi - lo);
}

std::set<std::int64_t> profiler_steps(const RankWindow& w) {
  std::set<std::int64_t> out;
  const KinetoTrace& trace = *w.trace;
  auto add = [&](std::uint32_t name) {
    const std::int64_t n = step_number(trace.str(name));
    if (n >= 0) out.insert(n);
  };
  for (const Row& r : trace.rows) {
    if (w.keeps_host(r)) add(r.name);
  }
  for (const DeviceRow& r : w.device) add(r.row->name);
  return out;
}

RankExplanation analyse_rank(const RankWindow& w, std::vector<std::string>& problems) {
  RankExplanation e;
  e.rank = w.trace->rank;
  e.file = w.trace->file;
  e.has_device_rows = !w.device.empty();
  e.temporal = temporal_breakdown(w.device, problems);
  e.idle_by_stream = idle_by_stream(w);
  const std::vector<Interval> comm = union_of_type(w.device, KernelType::kCommunication);
  const double comm_time = length(comm);
  if (comm_time > 0) {
    // Where both run: HTA's sweep with communication 1 and computation 2, at a sum of 3.
    double overlap = 0;
    sweep({comm, union_of_type(w.device, KernelType::kComputation)},
          [&](int running, double length) {
            if (running == 3) overlap += length;
          });
    e.comm_comp_overlap_pct = numpy_round(100 * (overlap / comm_time), 2);
  }
  e.kernel_types = kernel_type_segments(w.device);
  for (KernelType t : {KernelType::kComputation, KernelType::kCommunication, KernelType::kMemory}) {
    for (KernelStats& k : kernel_table(w, t)) e.kernels.push_back(std::move(k));
  }
  e.launches = launch_stats(w);
  return e;
}

}  // namespace vxperf::explain
