// HTA's critical path, step by step as HTA takes them: the frame of the rank and what is computed
// over all of it once (queue lengths, launches, event records and stream waits), then for each
// instance its window, the clipped events, their nodes, the edges (runtime lock, call stacks,
// GPU ops), the checks, networkx's longest path, the breakdown and the summary.
#include "explain/hta_critical_path.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "explain/hta_rules.h"
#include "explain/path_graph.h"

namespace vxperf::explain {
namespace {

enum EdgeType : std::uint8_t {
  kOperator = 0,
  kDependency = 1,
  kLaunchDelay = 2,
  kKernelKernel = 3,
  kSync = 4,
};
constexpr const char* kEdgeTypeNames[] = {
    "critical_path_operator", "critical_path_dependency", "critical_path_kernel_launch_delay",
    "critical_path_kernel_kernel_delay", "critical_path_sync_dependency"};

// HTA's threshold between a kernel-kernel delay and no edge (us).
constexpr double kKernelKernelThreshold = 1500;

// Where HTA stops: what it does ("raises", "False", "unmodelled") and why, in one line.
struct Stop {
  std::string hta;
  std::string why;
};

// What the rules test of a name (by the trace's name ids) and of a category.
enum NameFlag : std::uint16_t {
  kLaunchName = 1 << 0,     // a launch call the queue lengths count
  kLock = 1 << 1,           // takes the runtime lock
  kBlocking = 1 << 2,       // a blocking call: its time weighs 0
  kEventRecord = 1 << 3,    // cudaEventRecord
  kWaitEventCall = 1 << 4,  // cudaStreamWaitEvent
  kStreamWaitEvent = 1 << 5,
  kEventSync = 1 << 6,
  kContextSync = 1 << 7,
  kStreamSync = 1 << 8,
  kForward = 1 << 9,  // contains "forward"
  kAutograd = 1 << 10,
  kAnnotation = 1 << 11,  // contains the annotation
};
enum CategoryFlag : std::uint8_t {
  kCpuOp = 1 << 0,
  kRuntime = 1 << 1,  // cuda_runtime or cuda_driver
  kCudaSync = 1 << 2,
  kUserAnnotation = 1 << 3,
};

std::uint16_t name_flags(std::string_view n, const std::string& annotation) {
  std::uint16_t f = 0;
  static constexpr std::string_view kLaunches[] = {
      "cudaLaunchKernel",
      "cudaLaunchKernelExC",
      "cuLaunchKernel",
      "cuLaunchKernelEx",
      "cudaMemcpyAsync",
      "cudaMemsetAsync",
      "runFunction - job_prep_and_submit_for_execution",
      "hipLaunchKernel",
      "hipExtModuleLaunchKernel",
      "hipMemsetAsync",
      "hipMemcpyAsync",
      "hipMemcpyWithStream"};
  for (std::string_view l : kLaunches) f |= n == l ? kLaunchName : 0;
  if (n == "cudaHostAlloc" || n == "cudaLaunchKernel" || n == "cudaMemcpyAsync") f |= kLock;
  if (n == "cudaDeviceSynchronize" || n == "cudaStreamSynchronize" || n == "cudaEventQuery" ||
      n == "cudaEventSynchronize" || n == "cudaMemcpy" || n == "cudaMemcpyAsync") {
    f |= kBlocking;
  }
  if (n == "cudaEventRecord") f |= kEventRecord;
  if (n == "cudaStreamWaitEvent") f |= kWaitEventCall;
  if (n == "Stream Wait Event") f |= kStreamWaitEvent;
  if (n == "Event Sync") f |= kEventSync;
  if (n == "Context Sync") f |= kContextSync;
  if (n == "Stream Sync") f |= kStreamSync;
  if (n.find("forward") != std::string_view::npos) f |= kForward;
  if (n.find("autograd") != std::string_view::npos) f |= kAutograd;
  if (!annotation.empty() && n.find(annotation) != std::string_view::npos) f |= kAnnotation;
  return f;
}

// A name in a message: at most 60 bytes of it, quoted.
std::string quoted(std::string_view name) {
  std::string out(name.substr(0, 60));
  for (char& ch : out) ch = ch == '\n' || ch == '\r' || ch == '\t' ? ' ' : ch;
  return "\"" + out + (name.size() > 60 ? "...\"" : "\"");
}

std::uint8_t category_flags(std::string_view c) {
  if (c == "cpu_op") return kCpuOp;
  if (c == "cuda_runtime" || c == "cuda_driver") return kRuntime;
  if (c == "cuda_sync") return kCudaSync;
  if (c == "user_annotation") return kUserAnnotation;
  return 0;
}

// The rank's frame (HTA's trace after loading and the profiler-step window) and what HTA
// computes over all of it, whatever the instance: queue lengths (from TraceCounters), the
// launches, the event records' previous launches and the stream waits' next launches.
class Frame {
 public:
  Frame(const RankWindow& w, const CriticalPathContext& context, const std::string& annotation)
      : t(*w.trace), shift(context.min_ts) {
    names.reserve(t.strings.size());
    for (const std::string& s : t.strings) names.push_back(name_flags(s, annotation));
    for (const std::string& c : t.categories) categories.push_back(category_flags(c));
    // The frame's order: when the window filters, the device rows it keeps and then its host
    // rows, each in file order; else the file's order.
    std::uint32_t last_index = 0;
    for (const Row& r : t.rows) last_index = std::max(last_index, r.index);
    position_.assign(t.rows.empty() ? 0 : static_cast<std::size_t>(last_index) + 1, -1);
    auto add = [&](std::uint32_t p) {
      order.push_back(p);
      position_[t.rows[p].index] = static_cast<std::int32_t>(p);
    };
    communication_.assign(t.strings.size(), -1);
    for (std::uint32_t p = 0; p < t.rows.size(); ++p) {
      const Row& r = t.rows[p];
      if (!w.filtered) {
        add(p);
      } else if (r.device) {
        const std::uint32_t copies = w.copies_of(r);
        if (copies > 0) add(p);
        duplicated = duplicated || copies > 1;
      }
    }
    if (w.filtered) {
      for (std::uint32_t p = 0; p < t.rows.size(); ++p) {
        if (w.keeps_host(t.rows[p])) add(p);
      }
    }
    queue_lengths();
    launch_list();
    if (context.event_record) record_table();
    if (context.stream_wait) wait_table();
  }

  const KinetoTrace& t;
  const double shift;                    // HTA's times are shifted by every rank's first start
  std::vector<std::uint32_t> order;      // the frame's rows (positions in t.rows) in its order
  std::vector<std::uint16_t> names;      // by name id
  std::vector<std::uint8_t> categories;  // by category id
  bool duplicated = false;  // the window keeps a device row more than once (HTA's join)

  const Row& row(std::uint32_t p) const { return t.rows[p]; }
  const RowExtra& extra(std::uint32_t p) const { return t.extras[p]; }
  double ts(std::uint32_t p) const { return t.rows[p].ts - shift; }
  double dur(std::uint32_t p) const { return t.rows[p].dur; }
  double end(std::uint32_t p) const { return ts(p) + t.rows[p].dur; }
  std::int64_t stream(std::uint32_t p) const { return t.stream(t.rows[p]); }
  std::int64_t icorr(std::uint32_t p) const { return t.rows[p].partner; }
  std::int64_t index(std::uint32_t p) const { return t.rows[p].index; }
  std::uint16_t flags(std::uint32_t p) const { return names[t.rows[p].name]; }
  std::uint8_t category(std::uint32_t p) const { return categories[t.rows[p].cat]; }
  // The frame's row at traceEvents index `index` (pandas' .loc), or -1.
  std::int64_t at(std::int64_t index) const {
    if (index < 0 || static_cast<std::uint64_t>(index) >= position_.size()) return -1;
    return position_[static_cast<std::size_t>(index)];
  }
  // Whether HTA takes an op of this name for communication (by its shortened name).
  bool communication(std::uint32_t name) const {
    std::int8_t& known = communication_[name];
    if (known < 0) {
      known = kernel_type_of(shorten_name(t.str(name))) == KernelType::kCommunication ? 1 : 0;
    }
    return known == 1;
  }

  // 5.1: HTA's stops (the counts assertion; no series at all), the queue length after each
  // launch's and GPU row's entry (by position), and the launches with more than one entry.
  std::optional<Stop> queue_stop;
  bool no_queue = false;
  std::unordered_map<std::uint32_t, std::int64_t> queue;
  std::unordered_set<std::uint32_t> queue_repeated;
  std::optional<std::int64_t> queue_of(std::int64_t index) const {
    const std::int64_t p = at(index);
    if (p < 0) return std::nullopt;
    auto it = queue.find(static_cast<std::uint32_t>(p));
    if (it == queue.end()) return std::nullopt;
    return it->second;
  }

  // 5.2: the launches, numbered in order of start.
  struct Launch {
    std::uint32_t pos = 0;
    std::int64_t pid = 0, tid = 0;
    double ts = 0;
    std::int64_t stream = 0, gpu = 0;
  };
  std::vector<Launch> launches;

  // 5.3: each cudaEventRecord's previous launch on its stream (correlation -> launch index, -1).
  std::optional<Stop> record_stop;
  bool has_records = false;
  std::unordered_map<std::int64_t, std::int64_t> previous_launch;

  // 5.4: each cudaStreamWaitEvent's next launch onto its stream (index -> launch index, -1).
  std::optional<Stop> wait_stop;
  bool has_waits = false;
  std::unordered_map<std::int64_t, std::int64_t> next_launch;

  // The frame's CPU rows (stream -1) by start, for the windows.
  std::vector<std::uint32_t> cpu_by_start;
  std::vector<std::uint32_t> stream_wait_events;  // every GPU row named Stream Wait Event
  std::unordered_map<std::uint32_t, std::uint32_t> pointed_at;  // such a row: CPU rows at it

 private:
  std::vector<std::int32_t> position_;  // by traceEvents index: the frame's row there, or -1
  mutable std::vector<std::int8_t> communication_;  // by name id: 1, 0, or -1 (not yet known)

  bool launch_row(std::uint32_t p) const { return (flags(p) & kLaunchName) && icorr(p) > 0; }

  void queue_lengths() {
    struct Entry {
      double ts;
      std::uint32_t pos;
      std::int64_t stream;
      int delta;
    };
    std::unordered_map<std::int64_t, std::vector<std::uint32_t>> gpu_by_correlation;
    for (std::uint32_t p : order) {
      if (stream(p) != -1) gpu_by_correlation[row(p).correlation].push_back(p);
      if (stream(p) == -1) cpu_by_start.push_back(p);
      if (stream(p) != -1 && (flags(p) & kStreamWaitEvent)) stream_wait_events.push_back(p);
    }
    for (std::uint32_t p : cpu_by_start) {
      const std::int64_t g = icorr(p) >= 0 ? at(icorr(p)) : -1;
      if (g >= 0 && (flags(static_cast<std::uint32_t>(g)) & kStreamWaitEvent) &&
          stream(static_cast<std::uint32_t>(g)) != -1) {
        ++pointed_at[static_cast<std::uint32_t>(g)];
      }
    }
    std::stable_sort(cpu_by_start.begin(), cpu_by_start.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return ts(a) < ts(b); });
    std::sort(stream_wait_events.begin(), stream_wait_events.end());
    std::vector<Entry> entries;
    std::unordered_set<std::int64_t> launched;
    std::uint64_t launch_entries = 0, gpu_entries = 0;
    for (std::uint32_t p : order) {
      if (!launch_row(p)) continue;
      launched.insert(row(p).correlation);
      auto it = gpu_by_correlation.find(row(p).correlation);
      if (it == gpu_by_correlation.end()) {
        ++launch_entries;  // an entry without a stream, which no stream counts
        continue;
      }
      for (std::uint32_t g : it->second) entries.push_back({ts(p), p, stream(g), +1});
      launch_entries += it->second.size();
      if (it->second.size() > 1) queue_repeated.insert(p);
    }
    for (std::uint32_t p : order) {
      if (stream(p) == -1 || !launched.count(row(p).correlation)) continue;
      entries.push_back({ts(p), p, stream(p), -1});
      ++gpu_entries;
    }
    if (launch_entries != gpu_entries) {
      queue_stop =
          Stop{"raises", "AssertionError (trace_counters.py): the queue-length series has " +
                             std::to_string(launch_entries) + " launch entries but " +
                             std::to_string(gpu_entries) +
                             " GPU rows of their correlations (a launch without its GPU row, or "
                             "a correlation shared)"};
      return;
    }
    if (entries.empty()) {
      no_queue = true;
      queue_stop = Stop{"raises",
                        "AssertionError: Queue length time series is required for kernel graph "
                        "construction (no launch call with a GPU row in the rank: a CPU-only "
                        "profile)"};
      return;
    }
    std::stable_sort(entries.begin(), entries.end(),
                     [](const Entry& a, const Entry& b) { return a.ts < b.ts; });
    std::unordered_map<std::int64_t, std::int64_t> running;
    for (const Entry& e : entries) queue[e.pos] = running[e.stream] += e.delta;
  }

  void launch_list() {
    std::vector<std::uint32_t> calls;
    for (std::uint32_t p : order) {
      if (launch_row(p)) calls.push_back(p);
    }
    std::stable_sort(calls.begin(), calls.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return ts(a) < ts(b); });
    for (std::uint32_t p : calls) {
      const std::int64_t g = at(icorr(p));
      if (g < 0) continue;
      const auto gp = static_cast<std::uint32_t>(g);
      if (stream(gp) == -1 || icorr(gp) <= 0) continue;
      launches.push_back({p, extra(p).pid, extra(p).tid, ts(p), stream(gp), extra(gp).pid});
    }
  }

  void record_table() {
    // The stream (and GPU) each recorded event is on, from the sync events that wait on it.
    std::map<std::int64_t, std::set<std::pair<std::int64_t, std::int64_t>>> stream_of;
    for (std::uint32_t p : order) {
      const RowExtra& x = extra(p);
      if (x.wait_on_stream > -1)
        stream_of[x.wait_on_event_record].insert({x.wait_on_stream, x.pid});
    }
    std::vector<std::uint32_t> records;
    std::unordered_set<std::int64_t> seen;
    bool twice = false;
    for (std::uint32_t p : order) {
      if (!(flags(p) & kEventRecord)) continue;
      records.push_back(p);
      twice = !seen.insert(row(p).correlation).second || twice;
    }
    for (const auto& [correlation, streams] : stream_of) {
      if (streams.size() > 1) {
        record_stop = Stop{"raises",
                           "pandas MergeError (one_to_one): the event recorded by "
                           "correlation " +
                               std::to_string(correlation) + " is waited on on " +
                               std::to_string(streams.size()) + " streams"};
        return;
      }
    }
    if (twice) {
      record_stop = Stop{"raises",
                         "pandas MergeError (one_to_one): two cudaEventRecord calls share a "
                         "correlation"};
      return;
    }
    std::stable_sort(records.begin(), records.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return ts(a) < ts(b); });
    // Per (gpu, stream): its launches and records by start, launches first at a tie.
    std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::uint32_t>> by_stream;
    for (std::uint32_t p : records) {
      auto it = stream_of.find(row(p).correlation);
      if (it == stream_of.end()) continue;
      const auto [s, gpu] = *it->second.begin();
      by_stream[{gpu, s}].push_back(p);
    }
    if (by_stream.empty()) return;
    has_records = true;
    std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::size_t>> launches_of;
    for (std::size_t id = 0; id < launches.size(); ++id) {
      auto key = std::make_pair(launches[id].gpu, launches[id].stream);
      if (by_stream.count(key)) launches_of[key].push_back(id);
    }
    for (const auto& [key, recs] : by_stream) {
      const std::vector<std::size_t>& ls = launches_of[key];
      std::size_t i = 0;
      std::int64_t previous = -1;
      for (std::uint32_t r : recs) {
        while (i < ls.size() && launches[ls[i]].ts <= ts(r))
          previous = static_cast<std::int64_t>(ls[i++]);
        previous_launch[row(r).correlation] =
            previous >= 0 ? index(launches[static_cast<std::size_t>(previous)].pos) : -1;
      }
    }
  }

  void wait_table() {
    struct Wait {
      std::uint32_t pos;
      std::int64_t pid, tid, stream;
    };
    std::vector<std::uint32_t> calls;
    for (std::uint32_t p : order) {
      if ((flags(p) & kWaitEventCall) && icorr(p) > 0) calls.push_back(p);
    }
    std::stable_sort(calls.begin(), calls.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return ts(a) < ts(b); });
    std::vector<Wait> waits;
    for (std::uint32_t p : calls) {
      const std::int64_t g = at(icorr(p));
      if (g < 0) continue;
      const auto gp = static_cast<std::uint32_t>(g);
      if (stream(gp) == -1 || icorr(gp) <= 0) continue;
      waits.push_back({p, extra(p).pid, extra(p).tid, stream(gp)});
    }
    if (waits.empty()) {
      wait_stop = Stop{"raises",
                       "ValueError: No objects to concatenate (cudaStreamWaitEvent and Stream "
                       "Wait Event are named but no wait call of the rank has its GPU row)"};
      return;
    }
    has_waits = true;
    using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t>;
    std::map<Key, std::vector<std::size_t>> launches_of;
    for (std::size_t id = 0; id < launches.size(); ++id) {
      const Launch& l = launches[id];
      launches_of[{l.pid, l.tid, l.stream}].push_back(id);
    }
    std::map<Key, std::vector<const Wait*>> groups;
    for (const Wait& w : waits) groups[{w.pid, w.tid, w.stream}].push_back(&w);
    for (const auto& [key, ws] : groups) {
      static const std::vector<std::size_t> kNone;
      auto it = launches_of.find(key);
      const std::vector<std::size_t>& ls = it == launches_of.end() ? kNone : it->second;
      std::size_t i = 0;
      for (const Wait* w : ws) {
        // The first launch after the wait (one starting with it sorts before it: not after).
        while (i < ls.size() && launches[ls[i]].ts <= ts(w->pos)) ++i;
        next_launch[index(w->pos)] = i < ls.size() ? index(launches[ls[i]].pos) : -1;
      }
    }
  }
};

// One instance's graph and path.
class Instance {
 public:
  Instance(const Frame& f) : f_(f) {}

  // The window [begin, end] (no end: the whole trace), or none (an empty selection).
  void select(std::optional<std::pair<double, double>> window, bool whole) {
    std::vector<std::uint32_t> c = f_.stream_wait_events;
    // HTA joins each GPU row with every CPU row pointing at it: a GPU row that two of them
    // point at (in the window; a Stream Wait Event: anywhere) is taken twice.
    for (std::uint32_t p : f_.stream_wait_events) {
      auto it = f_.pointed_at.find(p);
      if (it != f_.pointed_at.end() && it->second > 1) repeated_ = p;
    }
    std::vector<std::uint32_t> launched;
    if (window) {
      const auto [begin, end] = *window;
      auto lo = std::lower_bound(f_.cpu_by_start.begin(), f_.cpu_by_start.end(), begin,
                                 [&](std::uint32_t p, double t) { return f_.ts(p) < t; });
      for (auto it = lo; it != f_.cpu_by_start.end(); ++it) {
        const std::uint32_t h = *it;
        if (!whole && f_.ts(h) > end) break;
        if (!(f_.dur(h) > 0)) continue;
        c.push_back(h);  // (a) a CPU row starting in the window
        const std::int64_t g = f_.icorr(h) >= 0 ? f_.at(f_.icorr(h)) : -1;
        if (g >= 0 && f_.stream(static_cast<std::uint32_t>(g)) != -1 &&
            !(f_.flags(static_cast<std::uint32_t>(g)) & kStreamWaitEvent)) {
          launched.push_back(static_cast<std::uint32_t>(g));  // (b) a GPU row launched in it
        }
      }
    }
    std::sort(launched.begin(), launched.end());
    for (std::size_t k = 1; k < launched.size(); ++k) {
      if (launched[k] == launched[k - 1]) repeated_ = launched[k];
    }
    c.insert(c.end(), launched.begin(), launched.end());
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
    c_ = std::move(c);
  }

  std::size_t clipped() const { return c_.size(); }

  // Builds the graph and finds the path; a Stop where HTA stops.
  void run(CriticalPathInstance& out) {
    if (repeated_ && f_.icorr(*repeated_) >= 0) {
      throw Stop{"raises",
                 "TypeError: list indices must be integers or slices, not Series (the clipped "
                 "trace holds " +
                     quoted(f_.t.str(f_.row(*repeated_).name)) +
                     " more than once: several CPU calls point at it, e.g. calls whose "
                     "correlation has no GPU row point at event #0)"};
    }
    make_nodes();
    runtime_lock_edges();
    call_stack_edges();
    if (f_.queue_stop) {
      // With no queue at all (a CPU-only profile) HTA stops; the host path its rules give is
      // still given when the window has no GPU op (nothing of the GPU pass is missed).
      if (!f_.no_queue || !gpu_rows().empty()) throw *f_.queue_stop;
      out.hta = f_.queue_stop->hta;
      out.why = f_.queue_stop->why + "; given: its rules' path of the host alone";
    }
    if (!f_.queue_stop) {
      if (f_.record_stop) throw *f_.record_stop;
      if (f_.wait_stop) throw *f_.wait_stop;
      gpu_edges();
    }
    validate();
    path(out);
  }

 private:
  struct NodeInfo {
    double time;
    std::uint32_t event;  // into c_
    bool start;
  };

  const Frame& f_;
  std::vector<std::uint32_t> c_;           // the clipped rows (positions), ascending
  std::optional<std::uint32_t> repeated_;  // a GPU row HTA's clipped trace holds twice
  std::vector<std::int32_t> start_, end_;  // by event: its nodes, or -1 (not a CP event)
  std::vector<NodeInfo> nodes_;
  PathGraph graph_;
  // By edge: the event it is attributed to (into c_), kRoot (a call stack's root: no event) or
  // kUnattributed.
  std::vector<std::int64_t> attributed_;
  static constexpr std::int64_t kRoot = -1, kUnattributed = -2;

  std::uint32_t pos(std::uint32_t event) const { return c_[event]; }
  // The clipped event at traceEvents index `index`, or -1.
  std::int64_t event_at(std::int64_t index) const {
    const std::int64_t p = f_.at(index);
    if (p < 0) return -1;
    auto it = std::lower_bound(c_.begin(), c_.end(), static_cast<std::uint32_t>(p));
    return it != c_.end() && *it == p ? it - c_.begin() : -1;
  }
  bool has_nodes(std::int64_t event) const {
    return event >= 0 && start_[static_cast<std::size_t>(event)] >= 0;
  }
  bool lock(std::uint32_t node) const { return f_.flags(pos(nodes_[node].event)) & kLock; }

  // 3: a start and an end node for each CP event, numbered by (time, index), start first.
  void make_nodes() {
    start_.assign(c_.size(), -1);
    end_.assign(c_.size(), -1);
    std::vector<NodeInfo> all;
    for (std::uint32_t e = 0; e < c_.size(); ++e) {
      const std::uint32_t p = c_[e];
      const bool cp =
          (f_.category(p) & (kCpuOp | kRuntime)) || (f_.stream(p) != -1 && f_.icorr(p) >= 0);
      if (!cp) continue;
      all.push_back({f_.ts(p), e, true});
      all.push_back({f_.end(p), e, false});
    }
    std::stable_sort(all.begin(), all.end(), [&](const NodeInfo& a, const NodeInfo& b) {
      if (a.time != b.time) return a.time < b.time;
      return a.event < b.event;  // events are in index order; stable: the start first
    });
    nodes_ = std::move(all);
    for (std::uint32_t n = 0; n < nodes_.size(); ++n) {
      (nodes_[n].start ? start_ : end_)[nodes_[n].event] = static_cast<std::int32_t>(n);
    }
  }

  PathGraph::EdgeId add_edge(std::uint32_t u, std::uint32_t v, EdgeType type, bool zero = false) {
    if (u == v) throw Stop{"raises", "AssertionError: an edge from a node to itself"};
    const double weight =
        type == kDependency || type == kSync || zero ? 0 : nodes_[v].time - nodes_[u].time;
    const PathGraph::EdgeId e = graph_.add_edge(u, v, type, weight);
    if (e >= attributed_.size()) attributed_.resize(e + 1, kUnattributed);
    return e;
  }

  // HTA's attribution of an operator or kernel-kernel edge to an event (entries stay when the
  // edge is later given another type).
  void attribute(PathGraph::EdgeId e, EdgeType type, std::uint32_t u, std::uint32_t v,
                 std::int64_t parent) {
    if (type != kOperator && type != kKernelKernel) return;
    std::int64_t event = parent;
    if (type == kKernelKernel || nodes_[u].start) {
      event = nodes_[u].event;
    } else if (!nodes_[v].start) {
      event = nodes_[v].event;
    }
    attributed_[e] = event;
  }

  // 4.1: calls taking the runtime lock, across threads, chained by the order they end.
  void runtime_lock_edges() {
    std::vector<std::uint32_t> open;
    std::optional<std::uint32_t> last;
    for (std::uint32_t n = 0; n < nodes_.size(); ++n) {
      if (!lock(n)) continue;
      if (nodes_[n].start) {
        open.push_back(n);
      } else {
        while (!open.empty()) {
          const std::uint32_t p = open.back();
          open.pop_back();
          if (nodes_[p].event == nodes_[n].event) {
            attribute(add_edge(p, n, kOperator), kOperator, p, n, nodes_[n].event);
          } else {
            add_edge(p, n, kDependency);
          }
        }
        if (last && !nodes_[*last].start) add_edge(*last, n, kDependency);
      }
      last = n;
    }
  }

  bool shares_lock(std::uint32_t a, std::uint32_t b) const {
    return lock(a) && lock(b) && (nodes_[a].start || !nodes_[b].start);
  }

  // The thread HTA finds for "forward" or "autograd" rows (cpu_op or user_annotation): the one
  // tid that has them, if exactly one does.
  std::optional<std::int64_t> thread_with(std::uint16_t flag) const {
    std::optional<std::int64_t> tid;
    for (std::uint32_t p : c_) {
      if (!(f_.flags(p) & flag) || !(f_.category(p) & (kCpuOp | kUserAnnotation))) continue;
      if (tid && *tid != f_.extra(p).tid) return std::nullopt;
      tid = f_.extra(p).tid;
    }
    return tid;
  }

  // 4.2: each CPU thread's call stack walked depth first.
  void call_stack_edges() {
    const std::optional<std::int64_t> fwd = thread_with(kForward), bwd = thread_with(kAutograd);
    const bool merge = fwd && bwd && *fwd != 0 && *bwd != 0 && *fwd != *bwd;
    auto tid = [&](std::uint32_t e) {
      const std::int64_t t = f_.extra(pos(e)).tid;
      return merge && t == *bwd ? *fwd : t;
    };
    std::vector<std::uint32_t> events(c_.size());
    for (std::uint32_t e = 0; e < c_.size(); ++e) events[e] = e;
    std::stable_sort(events.begin(), events.end(), [&](std::uint32_t a, std::uint32_t b) {
      const std::int64_t pa = f_.extra(pos(a)).pid, pb = f_.extra(pos(b)).pid;
      if (pa != pb) return pa < pb;
      return tid(a) < tid(b);
    });
    for (std::size_t lo = 0; lo < events.size();) {
      std::size_t hi = lo;
      const std::int64_t pid = f_.extra(pos(events[lo])).pid, t = tid(events[lo]);
      bool gpu = false, cpu = true;
      for (; hi < events.size() && f_.extra(pos(events[hi])).pid == pid && tid(events[hi]) == t;
           ++hi) {
        const std::int64_t s = f_.stream(pos(events[hi]));
        gpu = gpu || s > 0;
        cpu = cpu && s < 0;
      }
      if (!gpu && cpu) thread_edges(events.data() + lo, hi - lo);
      lo = hi;
    }
  }

  void thread_edges(const std::uint32_t* events, std::size_t n) {
    struct Mark {
      double time, dur;
      std::uint32_t k;  // into events
      bool start;
    };
    std::vector<Mark> marks;
    marks.reserve(2 * n);
    for (std::uint32_t k = 0; k < n; ++k) {
      const std::uint32_t p = pos(events[k]);
      const double dur = std::max(f_.dur(p), 0.0);
      if (!(dur > 0)) {
        throw Stop{"unmodelled",
                   "a thread's call stack holds a row of no duration with a stream below -1 "
                   "(HTA's order of its start and end is not a total order)"};
      }
      marks.push_back({f_.ts(p), dur, k, true});
      marks.push_back({f_.ts(p) + dur, dur, k, false});
    }
    // HTA's compare_events, a strict total order when every row lasts: by time, ends before
    // starts, the longer start first then the smaller index, the shorter end first then the
    // larger index.
    std::sort(marks.begin(), marks.end(), [&](const Mark& a, const Mark& b) {
      if (a.time != b.time) return a.time < b.time;
      if (a.start != b.start) return !a.start;
      const std::uint32_t ia = events[a.k], ib = events[b.k];  // index order
      if (a.start) return a.dur != b.dur ? a.dur > b.dur : ia < ib;
      return a.dur != b.dur ? a.dur < b.dur : ia > ib;
    });
    constexpr std::int32_t kRoot = -1;
    std::vector<std::int32_t> parent(n, kRoot), first_child(n, -1), next(n, -1), last_child(n, -1);
    std::int32_t root_first = -1, root_last = -1;
    std::vector<std::int32_t> stack;
    for (const Mark& m : marks) {
      if (!m.start) {
        if (!stack.empty()) stack.pop_back();  // whatever row is on top
        continue;
      }
      const std::int32_t k = static_cast<std::int32_t>(m.k);
      const std::int32_t up = stack.empty() ? kRoot : stack.back();
      parent[m.k] = up;
      std::int32_t& head = up == kRoot ? root_first : first_child[static_cast<std::size_t>(up)];
      std::int32_t& tail = up == kRoot ? root_last : last_child[static_cast<std::size_t>(up)];
      if (head < 0) {
        head = k;
      } else {
        next[static_cast<std::size_t>(tail)] = k;
      }
      tail = k;
      stack.push_back(k);
    }
    // The walk: enter before the children, exit after them. Rows that are no CP event are
    // passed through; they are still parents for attribution.
    std::optional<std::uint32_t> last;
    int depth = 0;
    std::int64_t last_parent = -1;
    auto parent_event = [&](std::int32_t k) -> std::int64_t {
      const std::int32_t up = parent[static_cast<std::size_t>(k)];
      return up == kRoot ? -1 : events[up];
    };
    auto enter = [&](std::int32_t k) {
      const std::uint32_t e = events[k];
      if (start_[e] < 0) return;
      const auto s = static_cast<std::uint32_t>(start_[e]);
      if (last && !shares_lock(*last, s)) {
        const EdgeType type = depth == 0 ? kDependency : kOperator;
        attribute(add_edge(*last, s, type), type, *last, s, last_parent);
      }
      last = s;
      last_parent = parent_event(k);
      ++depth;
    };
    auto exit = [&](std::int32_t k) {
      const std::uint32_t e = events[k];
      if (start_[e] < 0) return;
      const auto x = static_cast<std::uint32_t>(end_[e]);
      if (last && !shares_lock(*last, x)) {
        const bool blocking = f_.flags(pos(e)) & kBlocking;
        attribute(add_edge(*last, x, kOperator, blocking), kOperator, *last, x, last_parent);
      }
      last = x;
      last_parent = parent_event(k);
      --depth;
    };
    std::vector<std::int32_t> cursor(first_child);
    std::vector<std::int32_t> walk;
    for (std::int32_t top = root_first; top >= 0; top = next[static_cast<std::size_t>(top)]) {
      enter(top);
      walk.push_back(top);
      while (!walk.empty()) {
        const std::int32_t k = walk.back();
        const std::int32_t child = cursor[static_cast<std::size_t>(k)];
        if (child >= 0) {
          cursor[static_cast<std::size_t>(k)] = next[static_cast<std::size_t>(child)];
          enter(child);
          walk.push_back(child);
        } else {
          exit(k);
          walk.pop_back();
        }
      }
    }
  }

  // The rows the GPU pass walks: GPU rows (and Event Sync, Context Sync) with a launch link.
  std::vector<std::uint32_t> gpu_rows() const {
    std::vector<std::uint32_t> k;
    for (std::uint32_t e = 0; e < c_.size(); ++e) {
      const std::uint32_t p = c_[e];
      if ((f_.stream(p) != -1 || (f_.flags(p) & (kEventSync | kContextSync))) && f_.icorr(p) >= 0) {
        k.push_back(e);
      }
    }
    return k;
  }

  // 5.5: the GPU ops in order of start (syncs at their end), each stream's chain, launches and
  // syncs.
  void gpu_edges() {
    std::vector<std::uint32_t> k = gpu_rows();
    auto key = [&](std::uint32_t e) {
      const std::uint32_t p = pos(e);
      return (f_.category(p) & kCudaSync) ? f_.end(p) : f_.ts(p);
    };
    std::stable_sort(k.begin(), k.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return key(a) < key(b); });
    std::vector<std::pair<std::int64_t, std::uint32_t>>
        last;  // stream -> end node, first-set order
    std::unordered_map<std::int64_t, std::size_t> slot;
    auto last_of = [&](std::int64_t s) -> std::optional<std::uint32_t> {
      auto it = slot.find(s);
      if (it == slot.end()) return std::nullopt;
      return last[it->second].second;
    };
    std::unordered_map<std::uint32_t, std::int64_t>
        sync;  // op (position) -> op to wait for (index)
    auto end_node = [&](std::int64_t index) -> std::optional<std::uint32_t> {
      const std::int64_t e = event_at(index);
      if (!has_nodes(e)) return std::nullopt;
      return static_cast<std::uint32_t>(end_[static_cast<std::size_t>(e)]);
    };
    auto launch_of = [&](std::int64_t launch_index) {
      return f_.icorr(static_cast<std::uint32_t>(f_.at(launch_index)));
    };
    for (std::uint32_t e : k) {
      const std::uint32_t p = pos(e);
      const std::uint16_t name = f_.flags(p);
      const std::int64_t launch = f_.at(f_.icorr(p));
      if (launch >= 0 && f_.queue_repeated.count(static_cast<std::uint32_t>(launch))) {
        throw Stop{"unmodelled",
                   "the launch of " + quoted(f_.t.str(f_.row(p).name)) +
                       " has more than one GPU row of its correlation (HTA takes the row once "
                       "per queue entry)"};
      }
      if (f_.category(p) & kCudaSync) {
        if (name & (kStreamWaitEvent | kEventSync)) {
          if (!f_.has_records) continue;
          auto it = f_.previous_launch.find(f_.extra(p).wait_on_event_record);
          if (it == f_.previous_launch.end() || it->second == -1) continue;
          const std::int64_t src = launch_of(it->second);
          if (name & kStreamWaitEvent) {
            if (!f_.has_waits) {
              throw Stop{"raises",
                         "AttributeError: 'NoneType' object has no attribute 'loc' (a Stream "
                         "Wait Event, but no cudaStreamWaitEvent in the traces)"};
            }
            auto w = f_.next_launch.find(f_.icorr(p));
            if (w == f_.next_launch.end()) {
              throw Stop{"raises", "KeyError: " + std::to_string(f_.icorr(p)) +
                                       " (a Stream Wait Event whose cudaStreamWaitEvent HTA "
                                       "did not pair with a GPU row)"};
            }
            if (w->second < 0) continue;
            const std::int64_t dest = f_.at(launch_of(w->second));
            if (dest >= 0) sync[static_cast<std::uint32_t>(dest)] = src;
          } else if (const auto x = end_node(src)) {
            if (const auto runtime = end_node(f_.icorr(p))) add_edge(*x, *runtime, kSync);
          }
          continue;
        }
        if (name & kStreamSync) {
          const auto runtime = end_node(f_.icorr(p));
          const auto g = last_of(f_.stream(p));
          if (runtime && g) add_edge(*g, *runtime, kSync);
        } else if (name & kContextSync) {
          const auto runtime = end_node(f_.icorr(p));
          for (const auto& [s, g] : last) {
            if (runtime) add_edge(g, *runtime, kSync);
          }
        } else {
          throw Stop{"raises",
                     "AssertionError: a cuda_sync event named " + quoted(f_.t.str(f_.row(p).name))};
        }
        continue;
      }
      if (!has_nodes(e)) continue;
      const auto s = static_cast<std::uint32_t>(start_[e]);
      const auto x = static_cast<std::uint32_t>(end_[e]);
      attribute(add_edge(s, x, kOperator), kOperator, s, x, -1);
      std::optional<std::uint32_t> waited;
      if (auto it = sync.find(p); it != sync.end()) {
        waited = end_node(it->second);
        if (waited) add_edge(*waited, s, kSync);
        sync.erase(it);
      }
      const std::int64_t runtime = f_.icorr(p);
      const std::optional<std::int64_t> queued_at_launch = f_.queue_of(runtime);
      auto q = f_.queue.find(p);
      const bool idle_stream = q != f_.queue.end() && q->second == 0;
      const std::optional<std::uint32_t> previous = last_of(f_.stream(p));
      auto runtime_ts = [&] { return f_.ts(static_cast<std::uint32_t>(f_.at(runtime))); };
      if (queued_at_launch == 1 && idle_stream &&
          (!previous || nodes_[*previous].time < runtime_ts()) &&
          (!waited || nodes_[*waited].time < runtime_ts())) {
        const std::int64_t r = event_at(runtime);
        if (!has_nodes(r)) {
          throw Stop{"raises",
                     "AssertionError: Could not find runtime index = " + std::to_string(runtime) +
                         " (the launch of " + quoted(f_.t.str(f_.row(p).name)) +
                         " is no cpu_op, cuda_runtime or cuda_driver event: an old "
                         "Kineto category, or a call of no duration)"};
        }
        add_edge(static_cast<std::uint32_t>(start_[static_cast<std::size_t>(r)]), s, kLaunchDelay);
      } else if (previous && nodes_[s].time - nodes_[*previous].time < kKernelKernelThreshold &&
                 (!waited || nodes_[*waited].time < nodes_[*previous].time)) {
        attribute(add_edge(*previous, s, kKernelKernel), kKernelKernel, *previous, s, -1);
      }
      const std::int64_t stream = f_.stream(p);
      auto [it, inserted] = slot.emplace(stream, last.size());
      if (inserted) {
        last.push_back({stream, x});
      } else {
        last[it->second].second = x;
      }
    }
  }

  // 6: an edge of weight <= -1 counts 0 in the path; a sync edge inside one stream fails.
  void validate() {
    for (PathGraph::EdgeId id = 0; id < graph_.edge_count(); ++id) {
      PathGraph::Edge& e = graph_.edge(id);
      if (e.weight <= -1) e.path_weight = 0;
      if (e.type != kSync) continue;
      const std::int64_t a = f_.stream(pos(nodes_[e.src].event));
      const std::int64_t b = f_.stream(pos(nodes_[e.dst].event));
      if (a != -1 && a == b) {
        throw Stop{"False", "critical_path() fails: a sync edge between two ops of stream " +
                                std::to_string(a)};
      }
    }
  }

  std::string bound_by(EdgeType type, std::int64_t event) const {
    if (type == kKernelKernel) return "gpu_kernel_kernel_overhead";
    if (type == kLaunchDelay) return "gpu_kernel_launch_overhead";
    if (type == kDependency || type == kSync) return "";
    if (event < 0) {
      throw Stop{"raises",
                 "AssertionError: name of edge is na (an operator edge on the path is "
                 "attributed to no event of the window)"};
    }
    const std::uint32_t p = pos(static_cast<std::uint32_t>(event));
    if (f_.stream(p) < 0) return "cpu_bound";
    return f_.communication(f_.row(p).name) ? "gpu_communication_bound" : "gpu_compute_bound";
  }

  // 7, 8: the path, its breakdown and summary, its costliest events.
  void path(CriticalPathInstance& out) {
    const std::optional<PathGraph::Path> p = graph_.longest_path();
    if (!p) throw Stop{"False", "critical_path() fails: the graph has a cycle"};
    if (p->nodes.size() < 2) {
      throw Stop{"raises",
                 "AssertionError: the path has fewer than 2 nodes (len(critical_path_nodes) >= "
                 "2): " +
                     std::string(graph_.edge_count() == 0 ? "the window holds no edge"
                                                          : "every path weighs 0")};
    }
    // HTA's breakdown merges the path's attributed events (a column of None when there is none)
    // with the trace's indices: pandas refuses an object column against an integer one.
    bool attributed = false;
    for (PathGraph::EdgeId id : p->edges)
      attributed = attributed || attributed_[id] != kUnattributed;
    if (!attributed) {
      throw Stop{"raises",
                 "ValueError: You are trying to merge on object and int columns for key "
                 "'event_idx' (summary(): no edge of the path is attributed to an event, e.g. "
                 "a path of one launch delay into a kernel of no duration)"};
    }
    std::map<std::string, double> by_bound;
    std::map<std::pair<std::int64_t, std::string>, std::pair<double, std::int64_t>> by_event;
    double total = 0;
    for (PathGraph::EdgeId id : p->edges) {
      const PathGraph::Edge& e = graph_.edge(id);
      const auto type = static_cast<EdgeType>(e.type);
      const std::int64_t event = attributed_[id];
      const std::string bound = bound_by(type, event);
      by_bound[bound] += e.weight;
      total += e.weight;
      ++out.edges[kEdgeTypeNames[type]];
      if (event >= 0) {
        auto& [us, n] = by_event[{f_.index(pos(static_cast<std::uint32_t>(event))), bound}];
        us += e.weight;
        ++n;
      }
    }
    out.has_path = true;
    out.length_us = p->length;
    out.summary_total_us = total;
    out.path_nodes = static_cast<std::int64_t>(p->nodes.size());
    for (const auto& [bound, us] : by_bound) {
      const double pct = us / total * 100;
      out.breakdown.push_back(
          {bound, us, std::isfinite(pct) ? std::optional<double>(pct) : std::nullopt});
    }
    std::vector<CriticalPathEvent> events;
    for (const auto& [key, v] : by_event) {
      const std::int64_t p_at = f_.at(key.first);
      events.push_back({key.first,
                        std::string(f_.t.str(f_.row(static_cast<std::uint32_t>(p_at)).name)),
                        key.second, v.first, v.second});
    }
    std::stable_sort(events.begin(), events.end(),
                     [](const CriticalPathEvent& a, const CriticalPathEvent& b) {
                       if (a.us != b.us) return a.us > b.us;
                       return a.index < b.index;
                     });
    if (events.size() > 10) events.resize(10);
    out.top_events = std::move(events);
  }
};

}  // namespace

CriticalPathContext critical_path_context(const std::vector<const KinetoTrace*>& traces,
                                          const std::string& annotation) {
  CriticalPathContext c;
  bool any = false;
  for (const KinetoTrace* t : traces) {
    for (const Row& r : t->rows) {
      c.min_ts = any ? std::min(c.min_ts, r.ts) : r.ts;
      any = true;
    }
  }
  bool wait_call = false, wait_event = false;
  for (const KinetoTrace* t : traces) {
    // The symbols: the names and categories of the trace's rows (each table's "" at id 0 only
    // when some row has it).
    std::vector<char> used_name(t->strings.size(), 0), used_cat(t->categories.size(), 0);
    for (const Row& r : t->rows) {
      used_name[r.name] = 1;
      used_cat[r.cat] = 1;
    }
    auto symbol = [&](std::string_view s) {
      c.annotation_found = c.annotation_found || s.find(annotation) != std::string_view::npos;
      c.sync_events = c.sync_events || s == "cuda_sync";
      c.event_record = c.event_record || s == "cudaEventRecord";
      wait_call = wait_call || s == "cudaStreamWaitEvent";
      wait_event = wait_event || s == "Stream Wait Event";
    };
    for (std::size_t i = 0; i < t->strings.size(); ++i) {
      if (used_name[i]) symbol(t->strings[i]);
    }
    for (std::size_t i = 0; i < t->categories.size(); ++i) {
      if (used_cat[i]) symbol(t->categories[i]);
    }
  }
  c.stream_wait = wait_call && wait_event;
  return c;
}

RankCriticalPath hta_critical_path(const RankWindow& w, const CriticalPathRequest& request,
                                   const CriticalPathContext& context) {
  RankCriticalPath out;
  out.annotation = request.annotation;
  out.sync_events = context.sync_events;
  const bool whole = request.annotation.empty();
  auto refused = [&](std::int64_t first, std::int64_t last, std::string hta, std::string why) {
    CriticalPathInstance i;
    i.first = first;
    i.last = last;
    i.hta = std::move(hta);
    i.why = std::move(why);
    out.instances.push_back(std::move(i));
  };
  if (!context.annotation_found) {
    refused(request.each ? 0 : request.first, request.each ? 0 : request.last, "None",
            "Could not find annotation " + request.annotation +
                " in the trace (no name or category of the traces contains it)");
    return out;
  }
  const Frame frame(w, context, request.annotation);
  // The annotation's rows, in the frame's order: HTA numbers the instances so.
  std::vector<std::uint32_t> rows;
  if (!whole) {
    for (std::uint32_t p : frame.order) {
      if (frame.flags(p) & kAnnotation) rows.push_back(p);
    }
  }
  std::vector<std::pair<std::int64_t, std::int64_t>> asked;
  if (whole) {
    asked.push_back({0, 0});
  } else if (request.each) {
    const std::size_t n = std::max<std::size_t>(1, std::min(rows.size(), request.max_instances));
    for (std::size_t i = 0; i < n; ++i) asked.push_back({i, i});
  } else {
    asked.push_back({request.first, request.last});
  }
  for (const auto& [first, last] : asked) {
    CriticalPathInstance i;
    i.first = first;
    i.last = last;
    std::optional<std::pair<double, double>> window;
    if (whole) {
      double begin = std::numeric_limits<double>::infinity();
      for (std::uint32_t p : frame.order) begin = std::min(begin, frame.ts(p));
      if (!frame.order.empty()) window = std::make_pair(begin, begin);
    } else {
      // rows[first : last + 1], as Python slices it.
      const auto n = static_cast<std::int64_t>(rows.size());
      auto clamp = [&](std::int64_t x) {
        return std::max<std::int64_t>(0, std::min(n, x < 0 ? x + n : x));
      };
      const std::int64_t a = clamp(first), b = clamp(last + 1);
      for (std::int64_t k = a; k < b; ++k) {
        const std::uint32_t p = rows[static_cast<std::size_t>(k)];
        if (k == a) {
          i.row = std::string(frame.t.str(frame.row(p).name));
          i.row_category = std::string(frame.t.category(frame.row(p)));
          window = std::make_pair(frame.ts(p), frame.end(p));
        }
        window->first = std::min(window->first, frame.ts(p));
        window->second = std::max(window->second, frame.end(p));
      }
    }
    if (window && !whole) {
      i.window_begin_us = window->first + frame.shift;
      i.window_end_us = window->second + frame.shift;
    }
    try {
      if (frame.duplicated) {
        throw Stop{"unmodelled",
                   "the profiler-step window keeps a GPU row more than once (a correlation "
                   "shared by several kept launches): HTA's frame then holds it twice"};
      }
      Instance instance(frame);
      instance.select(window, whole);
      instance.run(i);
      if (!i.has_path) throw Stop{"raises", "no path"};
    } catch (const Stop& stop) {
      i.hta = stop.hta;
      i.why = stop.why;
      i.has_path = false;
      i.breakdown.clear();
      i.edges.clear();
      i.top_events.clear();
    }
    const bool no_path = i.why.rfind("AssertionError: the path has fewer", 0) == 0;
    if (!whole && rows.empty() && no_path) {
      i.why +=
          " (no row of the rank's window has a name containing \"" + request.annotation + "\")";
    } else if (!whole && !window && no_path) {
      i.why += " (instances " + std::to_string(first) + "-" + std::to_string(last) +
               " select no row: the rank has " + std::to_string(rows.size()) + ")";
    }
    out.instances.push_back(std::move(i));
  }
  if (request.each && rows.size() > request.max_instances) {
    out.instances_not_analysed = static_cast<std::int64_t>(rows.size() - request.max_instances);
  }
  return out;
}

}  // namespace vxperf::explain
