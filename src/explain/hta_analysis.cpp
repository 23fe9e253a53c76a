#include "explain/hta_analysis.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

namespace vxperf::explain {
namespace {

bool starts_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.compare(0, p.size(), p) == 0;
}

// ^ProfilerStep#\d+ under re.match: the prefix and at least one digit.
bool is_step_string(std::string_view s) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  return starts_with(s, kPrefix) && s.size() > kPrefix.size() && s[kPrefix.size()] >= '0' &&
         s[kPrefix.size()] <= '9';
}

// ProfilerStep\s*#\s*(\d+) at the start of the name: its number, or -1.
std::int64_t step_number(std::string_view s) {
  constexpr std::string_view kPrefix = "ProfilerStep";
  if (!starts_with(s, kPrefix)) return -1;
  std::size_t i = kPrefix.size();
  auto space = [&](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
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

std::vector<Interval> union_of_type(const std::vector<DeviceRow>& rows, KernelType type) {
  std::vector<Interval> v;
  for (const DeviceRow& r : rows) {
    if (r.type == type) v.push_back({r.ts, r.end()});
  }
  return union_of(std::move(v));
}

Temporal temporal_breakdown(const std::vector<DeviceRow>& rows) {
  Temporal t;
  if (rows.empty()) return t;
  double first = std::numeric_limits<double>::infinity();
  double last = -first;
  std::vector<Interval> all;
  all.reserve(rows.size());
  for (const DeviceRow& r : rows) {
    first = std::min(first, r.ts);
    last = std::max(last, r.end());
    all.push_back({r.ts, r.end()});
  }
  t.kernel_time_us = last - first;
  t.idle_time_us = t.kernel_time_us - length(union_of(std::move(all)));
  t.compute_time_us = length(union_of_type(rows, KernelType::kComputation));
  t.non_compute_time_us = t.kernel_time_us - t.compute_time_us - t.idle_time_us;
  t.idle_pct = percent_of(t.idle_time_us, t.kernel_time_us, 2);
  t.compute_pct = percent_of(t.compute_time_us, t.kernel_time_us, 2);
  t.non_compute_pct = percent_of(t.non_compute_time_us, t.kernel_time_us, 2);
  return t;
}

bool is_idle_category(std::string_view cat) {
  return cat == "kernel" || cat == "Kernel" || cat == "gpu_memset" || cat == "Memset" ||
         cat == "gpu_memcpy" || cat == "Memcpy" || cat == "mtia_ccp_events";
}

std::vector<StreamIdle> idle_by_stream(const RankWindow& w) {
  const KinetoTrace& trace = *w.trace;
  // The launch's start, looked up by the row index the launch link gives.
  std::unordered_map<std::int64_t, double> kept_ts;
  for (const Row* r : w.host) kept_ts.emplace(r->index, r->ts);
  for (const Row& r : trace.rows) {  // kept device rows may be looked up too (index 0)
    if (r.device && r.index == 0 && !w.device.empty()) kept_ts.emplace(r.index, r.ts);
  }
  std::map<std::int64_t, std::vector<const DeviceRow*>> streams;
  std::vector<char> counted(trace.strings.size(), 0);
  for (std::size_t i = 0; i < trace.strings.size(); ++i) {
    counted[i] = is_idle_category(trace.strings[i]) ? 1 : 0;
  }
  for (const DeviceRow& r : w.device) {
    if (counted[r.cat]) streams[r.stream].push_back(&r);
  }
  std::vector<StreamIdle> out;
  for (auto& [stream, rows] : streams) {
    std::stable_sort(rows.begin(), rows.end(),
                     [](const DeviceRow* a, const DeviceRow* b) { return a->ts < b->ts; });
    double host = 0, kernel = 0, other = 0;
    bool first = true;
    double prev_end = 0;
    for (const DeviceRow* r : rows) {
      auto launch = kept_ts.find(r->partner);
      for (std::uint32_t copy = 0; copy < r->weight; ++copy) {
        if (!first) {
          const double gap = r->ts - prev_end;
          if (launch != kept_ts.end() && launch->second > prev_end) {
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
    s.stream = stream;
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

struct NameStats {
  std::uint32_t name;
  std::int64_t count = 0;
  double sum = 0, max = -std::numeric_limits<double>::infinity(),
         min = std::numeric_limits<double>::infinity(), mean = 0, std = 0;
};

double sample_std(const std::vector<std::pair<double, std::uint32_t>>& values, double mean,
                  std::int64_t n) {
  if (n < 2) return 0;
  double ss = 0;
  for (const auto& [v, w] : values) ss += w * (v - mean) * (v - mean);
  return std::sqrt(ss / static_cast<double>(n - 1));
}

// HTA's per-kernel table of one type: stats of `dur` per name, the names past the 10th or the 0.8
// quantile of the cumulative sum folded into "others".
std::vector<KernelStats> kernel_table(const RankWindow& w, KernelType type) {
  std::unordered_map<std::uint32_t, std::vector<std::pair<double, std::uint32_t>>> by_name;
  for (const DeviceRow& r : w.device) {
    if (r.type == type) by_name[r.name].push_back({r.dur, r.weight});
  }
  std::vector<NameStats> stats;
  for (auto& [name, values] : by_name) {
    NameStats s;
    s.name = name;
    for (const auto& [v, weight] : values) {
      s.count += weight;
      s.sum += v * weight;
      s.max = std::max(s.max, v);
      s.min = std::min(s.min, v);
    }
    s.mean = s.sum / static_cast<double>(s.count);
    s.std = sample_std(values, s.mean, s.count);
    stats.push_back(s);
  }
  const KinetoTrace& trace = *w.trace;
  std::sort(stats.begin(), stats.end(), [&](const NameStats& a, const NameStats& b) {
    if (a.sum != b.sum) return a.sum > b.sum;
    return trace.str(a.name) < trace.str(b.name);
  });
  std::vector<KernelStats> out;
  const char* type_name = kernel_type_name(type);
  constexpr std::size_t kNamed = 10;
  if (stats.size() <= kNamed) {
    for (const NameStats& s : stats) {
      out.push_back({std::string(trace.str(s.name)), type_name, s.count, s.sum, s.max, s.min,
                     s.mean, s.std});
    }
    return out;
  }
  std::vector<double> cumsum;
  double running = 0;
  for (const NameStats& s : stats) cumsum.push_back(running += s.sum);
  const double cut = numpy_quantile(cumsum, 0.8);
  // Regrouped as HTA does: over the per-name sums, so a named row's max, min and mean are its sum.
  std::map<std::string, std::vector<std::pair<double, std::uint32_t>>> groups;
  std::map<std::string, std::int64_t> counts;
  for (std::size_t i = 0; i < stats.size(); ++i) {
    const bool other = cumsum[i] > cut || i >= kNamed;
    std::string name = other ? "others" : std::string(trace.str(stats[i].name));
    groups[name].push_back({stats[i].sum, 1});
    counts[name] += other ? 1 : stats[i].count;
  }
  for (auto& [name, sums] : groups) {
    KernelStats k{name, type_name, counts[name], 0, -std::numeric_limits<double>::infinity(),
                  std::numeric_limits<double>::infinity(), 0, 0};
    for (const auto& [v, weight] : sums) {
      k.sum_us += v;
      k.max_us = std::max(k.max_us, v);
      k.min_us = std::min(k.min_us, v);
    }
    k.mean_us = k.sum_us / static_cast<double>(sums.size());
    k.std_us = sample_std(sums, k.mean_us, static_cast<std::int64_t>(sums.size()));
    out.push_back(std::move(k));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const KernelStats& a, const KernelStats& b) { return a.sum_us > b.sum_us; });
  return out;
}

bool is_launch_name(std::string_view n) {
  return n == "cudaLaunchKernel" || n == "cudaLaunchKernelExC" ||
         n == "runFunction - job_prep_and_submit_for_execution" || n == "cudaMemcpyAsync" ||
         n == "cudaMemsetAsync";
}

LaunchStats launch_stats(const RankWindow& w) {
  const KinetoTrace& trace = *w.trace;
  std::unordered_map<std::int64_t, std::vector<const Row*>> launches;
  for (const Row* r : w.host) {
    if (is_launch_name(trace.str(r->name))) launches[r->correlation];
  }
  for (const DeviceRow& r : w.device) {
    if (is_launch_name(trace.str(r.name))) launches[r.correlation];
  }
  for (const Row* r : w.host) {
    if (r->stream != -1) continue;
    auto it = launches.find(r->correlation);
    if (it != launches.end()) it->second.push_back(r);
  }
  LaunchStats s;
  for (const DeviceRow& g : w.device) {
    auto it = launches.find(g.correlation);
    if (it == launches.end()) continue;
    for (const Row* cpu : it->second) {
      const double launch_delay = std::max(0.0, g.ts - cpu->ts - cpu->dur);
      s.n_events += g.weight;
      if (cpu->dur > 50) s.n_long_runtime += g.weight;
      if (launch_delay > 100) s.n_long_launch_delay += g.weight;
      if (cpu->dur <= 50 && g.dur < cpu->dur) s.n_short_gpu += g.weight;
    }
  }
  return s;
}

}  // namespace

std::vector<KernelType> types_of(const KinetoTrace& trace) {
  std::vector<KernelType> types;
  types.reserve(trace.strings.size());
  for (const std::string& s : trace.strings) types.push_back(kernel_type_of(s));
  return types;
}

std::set<std::string> profiler_step_strings(const KinetoTrace& trace) {
  std::vector<char> seen(trace.strings.size(), 0);
  std::set<std::string> out;
  for (const Row& r : trace.rows) {
    for (std::uint32_t id : {r.name, r.cat}) {
      if (seen[id]) continue;
      seen[id] = 1;
      if (is_step_string(trace.str(id))) out.emplace(trace.str(id));
    }
  }
  return out;
}

RankWindow apply_window(const KinetoTrace& trace, const std::set<std::string>& steps) {
  RankWindow w;
  w.trace = &trace;
  const std::vector<KernelType> types = types_of(trace);
  const bool filter = steps.size() >= 2 && trace.host_rows() > 0;
  std::unordered_map<std::int64_t, std::uint32_t> host_by_correlation;
  if (filter) {
    std::vector<char> is_step(trace.strings.size(), 0);
    for (std::size_t i = 0; i < trace.strings.size(); ++i) {
      is_step[i] = steps.count(trace.strings[i]) ? 1 : 0;
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
    for (double ts : trace.plain_host_ts) first = std::min(first, ts);
    w.last_start = any_step ? last : first;
    w.filtered = true;
  }
  for (const Row& r : trace.rows) {
    if (r.device || (filter && r.ts >= w.last_start)) continue;
    w.host.push_back(&r);
    ++host_by_correlation[r.correlation];
  }
  for (double ts : trace.plain_host_ts) {
    if (!filter || ts < w.last_start) ++w.plain_host_kept;
  }
  host_by_correlation[-1] += static_cast<std::uint32_t>(w.plain_host_kept);
  auto device_row = [&](const Row& r, std::uint32_t weight) {
    DeviceRow d;
    d.ts = r.ts;
    d.dur = r.dur;
    d.stream = r.stream;
    d.correlation = r.correlation;
    d.partner = r.partner;
    d.name = r.name;
    d.cat = r.cat;
    d.weight = weight;
    d.type = types[r.name];
    return d;
  };
  for (const Row& r : trace.rows) {
    if (r.device) {
      // The join keeps a device row once per kept host row of its correlation.
      std::uint32_t weight = 1;
      if (filter) {
        auto it = host_by_correlation.find(r.correlation);
        weight = it == host_by_correlation.end() ? 0 : it->second;
      }
      if (weight > 0 && r.stream != -1) w.device.push_back(device_row(r, weight));
    } else if (r.stream != -1 && (!filter || r.ts < w.last_start)) {
      w.device.push_back(device_row(r, 1));  // a host row with a stream counts as a device row
    }
  }
  return w;
}

std::set<std::int64_t> profiler_steps(const RankWindow& w) {
  std::set<std::int64_t> out;
  const KinetoTrace& trace = *w.trace;
  auto add = [&](std::uint32_t name) {
    const std::int64_t n = step_number(trace.str(name));
    if (n >= 0) out.insert(n);
  };
  for (const Row* r : w.host) add(r->name);
  for (const DeviceRow& r : w.device) add(r.name);
  return out;
}

RankExplanation analyse_rank(const RankWindow& w) {
  RankExplanation e;
  e.rank = w.trace->rank;
  e.file = w.trace->file;
  e.has_device_rows = !w.device.empty();
  e.temporal = temporal_breakdown(w.device);
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
  for (KernelType t :
       {KernelType::kComputation, KernelType::kCommunication, KernelType::kMemory}) {
    for (KernelStats& k : kernel_table(w, t)) e.kernels.push_back(std::move(k));
  }
  e.launches = launch_stats(w);
  return e;
}

}  // namespace vxperf::explain
