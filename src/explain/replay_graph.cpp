#include "explain/replay_graph.h"

#include <algorithm>
#include <limits>
#include <string_view>
#include <unordered_map>

#include "explain/hta_analysis.h"
#include "explain/hta_rules.h"

namespace vxperf::explain {
namespace {

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// A call that returns only once device work has ended: a synchronize waits for what was launched
// before it; a blocking copy (and a pageable cudaMemcpyAsync) for its own copy too.
bool is_sync_name(std::string_view n) { return contains(n, "Synchronize"); }
bool is_copy_call(std::string_view n) { return contains(n, "Memcpy") || contains(n, "Memset"); }
bool is_blocking_copy(std::string_view n) {
  return n == "cudaMemcpy" || n == "hipMemcpy" || n == "cudaMemset" || n == "hipMemset";
}

// A range of torch's DataLoader iterator ("enumerate(DataLoader)#_SingleProcessDataLoaderIter.
// __next__"): its host time is data loading.
bool is_loader_name(std::string_view n) { return contains(n, "DataLoader"); }

constexpr std::size_t kWalkBack = 64;  // rows of a stream looked back for what a sync waited on

}  // namespace

const char* bound_name(Bound b) {
  switch (b) {
    case Bound::kHost:
      return "host";
    case Bound::kLaunch:
      return "launch_overhead";
    case Bound::kCompute:
      return "gpu_compute";
    case Bound::kCommunication:
      return "gpu_communication";
    case Bound::kCopies:
      return "copies";
    case Bound::kSyncWait:
      return "sync_wait";
    case Bound::kDeviceIdle:
      return "device_idle";
    case Bound::kDataLoading:
      return "data_loading";
    case Bound::kCount:
      break;
  }
  return "?";
}

void ReplayGraph::add(Node src, Node dst, EdgeKind kind, Bound bound, double weight) {
  graph_.add_edge(
      src, dst,
      static_cast<std::uint8_t>((static_cast<unsigned>(kind) << 4) | static_cast<unsigned>(bound)),
      weight);
}

ReplayGraph::ReplayGraph(const KinetoTrace& t, const std::vector<std::int32_t>& fed_by) {
  const std::size_t n = t.rows.size();
  measured_.resize(2 * n);
  const std::vector<KernelType> types = types_of(t);
  // A row's launch call: its launch link's partner when that is a host row.
  std::vector<std::int64_t> launch_of(n, -1);
  std::unordered_map<std::int64_t, std::uint32_t> host_by_correlation;
  for (std::size_t p = 0; p < n; ++p) {
    const Row& r = t.rows[p];
    measured_[2 * p] = r.ts;
    measured_[2 * p + 1] = r.device ? r.end() : std::max(r.ts, r.end());
    if (r.device) {
      const std::int64_t l = t.position_of(r.partner);
      if (l >= 0 && !t.rows[static_cast<std::size_t>(l)].device) launch_of[p] = l;
    } else if (r.correlation != -1) {
      host_by_correlation.emplace(r.correlation, static_cast<std::uint32_t>(p));
    }
  }
  auto launch_ts = [&](std::uint32_t p) {
    return launch_of[p] >= 0 ? t.rows[static_cast<std::size_t>(launch_of[p])].ts : t.rows[p].ts;
  };
  // Device rows that mark rather than occupy a stream: the cuda_sync events and the GPU-side
  // copies of annotations. They follow their call (or stay where they were) and order nothing.
  auto is_marker = [&](const Row& r) {
    const std::string_view c = t.category(r);
    return c == "cuda_sync" || c == "gpu_user_annotation";
  };

  // Each stream's rows (kernels, copies, sets: not the cuda_sync markers), by start and by launch.
  std::unordered_map<std::int64_t, std::vector<std::uint32_t>> by_start, by_launch;
  std::vector<std::uint32_t> launch_place(n, 0);  // a row's place in its stream's by_launch
  for (std::size_t p = 0; p < n; ++p) {
    const Row& r = t.rows[p];
    if (!r.device || is_marker(r)) continue;
    by_start[t.stream(r)].push_back(static_cast<std::uint32_t>(p));
  }
  for (auto& [stream, rows] : by_start) {
    std::stable_sort(rows.begin(), rows.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return t.rows[a].ts < t.rows[b].ts; });
    std::vector<std::uint32_t>& l = by_launch[stream];
    l = rows;
    std::stable_sort(l.begin(), l.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return launch_ts(a) < launch_ts(b); });
    for (std::size_t i = 0; i < l.size(); ++i) launch_place[l[i]] = static_cast<std::uint32_t>(i);
  }
  // The last row of a stream launched strictly before `ts`, or -1.
  auto launched_before = [&](std::int64_t stream, double ts) -> std::int64_t {
    auto it = by_launch.find(stream);
    if (it == by_launch.end()) return -1;
    const std::vector<std::uint32_t>& l = it->second;
    auto at = std::lower_bound(l.begin(), l.end(), ts,
                               [&](std::uint32_t p, double x) { return launch_ts(p) < x; });
    return at == l.begin() ? -1 : static_cast<std::int64_t>(*(at - 1));
  };

  // CUDA events (cuda_sync "Stream Wait Event", with the record it waits on): the row recorded
  // before the cudaEventRecord on the recording stream, and the first row launched onto the
  // waiting stream after the cudaStreamWaitEvent.
  std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> waits_on;
  for (std::size_t p = 0; p < n && !t.extras.empty(); ++p) {
    const Row& r = t.rows[p];
    if (!r.device || t.str(r.name) != "Stream Wait Event") continue;
    const RowExtra& x = t.extras[p];
    auto record = host_by_correlation.find(x.wait_on_event_record);
    if (record == host_by_correlation.end() || launch_of[p] < 0) continue;
    const std::int64_t recorded = launched_before(x.wait_on_stream, t.rows[record->second].ts);
    auto waiting = by_launch.find(t.stream(r));
    if (recorded < 0 || waiting == by_launch.end()) continue;
    const double wait_ts = t.rows[static_cast<std::size_t>(launch_of[p])].ts;
    const std::vector<std::uint32_t>& l = waiting->second;
    auto at = std::upper_bound(l.begin(), l.end(), wait_ts,
                               [&](double x0, std::uint32_t q) { return x0 < launch_ts(q); });
    if (at != l.end()) waits_on[*at].push_back(static_cast<std::uint32_t>(recorded));
  }

  // Device rows. Of the causes of a row's start (its launch, its stream's previous row, an event
  // it waits on) the latest carries the whole measured delay; the others weigh only their least
  // (a launch its call's duration, the device nothing), so that a what-if moving a cause moves the
  // row only as far as it must.
  struct Cause {
    Node from;
    double at;
    EdgeKind kind;
    double least;
  };
  for (auto& [stream, rows] : by_start) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const std::uint32_t p = rows[i];
      const Row& r = t.rows[p];
      std::vector<Cause> causes;
      if (i > 0) {
        const Row& prev = t.rows[rows[i - 1]];
        causes.push_back(
            {end(rows[i - 1]), prev.end(), EdgeKind::kStream, std::min(0.0, r.ts - prev.end())});
      }
      auto w = waits_on.find(p);
      if (w != waits_on.end()) {
        for (std::uint32_t q : w->second) {
          causes.push_back(
              {end(q), t.rows[q].end(), EdgeKind::kEvent, std::min(0.0, r.ts - t.rows[q].end())});
        }
      }
      if (launch_of[p] >= 0) {
        const Row& l = t.rows[static_cast<std::size_t>(launch_of[p])];
        causes.push_back({start(static_cast<std::uint32_t>(launch_of[p])), l.ts, EdgeKind::kLaunch,
                          std::min(r.ts - l.ts, std::max(0.0, l.dur))});
      }
      // One edge per pair of nodes: an event recorded just before on the same stream is the
      // stream's own order.
      for (std::size_t c = 1; c < causes.size(); ++c) {
        for (std::size_t d = 0; d < c; ++d) {
          if (causes[d].from == causes[c].from) {
            causes.erase(causes.begin() + static_cast<std::ptrdiff_t>(c--));
            break;
          }
        }
      }
      std::size_t last = 0;
      for (std::size_t c = 1; c < causes.size(); ++c) {
        if (causes[c].at > causes[last].at) last = c;
      }
      if (!causes.empty()) {  // the binding edge first: the path takes it at a tie
        const Cause& c = causes[last];
        add(c.from, start(p), c.kind,
            c.kind == EdgeKind::kLaunch ? Bound::kLaunch : Bound::kDeviceIdle, r.ts - c.at);
      }
      for (std::size_t c = 0; c < causes.size(); ++c) {
        if (c == last) continue;
        add(causes[c].from, start(p), causes[c].kind,
            causes[c].kind == EdgeKind::kLaunch ? Bound::kLaunch : Bound::kDeviceIdle,
            causes[c].least);
      }
      Bound b = Bound::kCompute;
      switch (types[r.name]) {
        case KernelType::kCommunication:
          b = Bound::kCommunication;
          break;
        case KernelType::kMemory:
          b = Bound::kCopies;
          break;
        default:
          break;
      }
      add(start(p), end(p), EdgeKind::kRun, b, r.dur);
    }
  }
  // The cuda_sync markers follow their call.
  for (std::size_t p = 0; p < n; ++p) {
    const Row& r = t.rows[p];
    if (!r.device || !is_marker(r) || launch_of[p] < 0) continue;
    const auto l = static_cast<std::uint32_t>(launch_of[p]);
    add(start(l), start(static_cast<std::uint32_t>(p)), EdgeKind::kLaunch, Bound::kSyncWait,
        r.ts - t.rows[l].ts);
    add(start(static_cast<std::uint32_t>(p)), end(static_cast<std::uint32_t>(p)), EdgeKind::kRun,
        Bound::kSyncWait, r.dur);
  }

  // Host threads: every start and end of a thread's rows in call-stack order (at one time, ends
  // before starts; the longer start first, the shorter end first), consecutive ones linked.
  struct Point {
    double ts;
    bool is_end;
    std::uint32_t row;
  };
  std::unordered_map<std::int32_t, std::vector<Point>> threads;
  std::unordered_map<std::int32_t, bool> has_ranges;
  for (std::size_t p = 0; p < n; ++p) {
    const Row& r = t.rows[p];
    if (r.device) continue;
    const auto q = static_cast<std::uint32_t>(p);
    threads[r.tid].push_back({measured_[start(q)], false, q});
    threads[r.tid].push_back({measured_[end(q)], true, q});
    if (fed_by.empty() && t.category(r) == "user_annotation") has_ranges[r.tid] = true;
  }
  // A thread of vxperf's ranges feeds the others, even those with ranges of their own (the
  // autograd thread's record_function hooks).
  for (std::int32_t tid : fed_by) has_ranges[tid] = true;
  // The points of the threads with ranges, by time: what feeds a worker thread.
  std::vector<std::pair<double, Node>> feeders;
  for (auto& [tid, points] : threads) {
    // A row of no duration sits between the rows ending and those starting at its time, its
    // start just before its end (else it would open after it closed and stay open).
    auto group = [&](const Point& p) {
      if (measured_[end(p.row)] == measured_[start(p.row)]) return 1;
      return p.is_end ? 0 : 2;
    };
    std::sort(points.begin(), points.end(), [&](const Point& a, const Point& b) {
      if (a.ts != b.ts) return a.ts < b.ts;
      const int ga = group(a), gb = group(b);
      if (ga != gb) return ga < gb;
      const Row& x = t.rows[a.row];
      const Row& y = t.rows[b.row];
      if (ga == 1) return a.row != b.row ? x.index < y.index : !a.is_end && b.is_end;
      if (a.is_end) return x.dur != y.dur ? x.dur < y.dur : x.index > y.index;
      return x.dur != y.dur ? x.dur > y.dur : x.index < y.index;
    });
    if (has_ranges[tid]) {
      for (const Point& pt : points) {
        feeders.emplace_back(pt.ts, pt.is_end ? end(pt.row) : start(pt.row));
      }
    }
  }
  std::sort(feeders.begin(), feeders.end());
  for (auto& [tid, points] : threads) {
    const bool worker = !has_ranges[tid];
    std::vector<std::uint32_t> stack;
    int loaders = 0;
    for (std::size_t i = 0; i < points.size(); ++i) {
      const Point& pt = points[i];
      const Node node = pt.is_end ? end(pt.row) : start(pt.row);
      const Row& r = t.rows[pt.row];
      const std::string_view name = t.str(r.name);
      // A worker thread's op after an idle stretch is fed by the latest earlier point of the
      // threads with ranges (the autograd engine's backward by the thread that called it).
      const std::pair<double, Node>* feeder = nullptr;
      if (worker && !pt.is_end && stack.empty()) {
        auto at = std::lower_bound(
            feeders.begin(), feeders.end(), pt.ts,
            [](const std::pair<double, Node>& f, double x) { return f.first < x; });
        if (at != feeders.begin()) feeder = &*(at - 1);
      }
      const bool fed = feeder != nullptr;
      if (i > 0) {
        const Point& before = points[i - 1];
        const Node from = before.is_end ? end(before.row) : start(before.row);
        const double gap = pt.ts - before.ts;
        Bound b = Bound::kHost;
        if (loaders > 0) {
          b = Bound::kDataLoading;
        } else if (!stack.empty() && is_launch_name(t.str(t.rows[stack.back()].name))) {
          b = Bound::kLaunch;
        }
        if (pt.is_end && (is_sync_name(name) || is_copy_call(name))) {
          // What the call waited for: its own copies, and for a synchronize (or a blocking copy)
          // the rows launched before it on its stream (from its cuda_sync marker) or on all.
          double waited = -std::numeric_limits<double>::infinity();
          Node waited_node = 0;
          auto take = [&](std::int64_t q) {
            for (std::size_t k = 0; q >= 0 && k < kWalkBack; ++k) {
              const Row& d = t.rows[static_cast<std::size_t>(q)];
              if (d.end() <= pt.ts) {
                if (d.end() > waited) {
                  waited = d.end();
                  waited_node = end(static_cast<std::uint32_t>(q));
                }
                return;
              }
              // Not done when the call returned: look at the one launched before it.
              const std::uint32_t place = launch_place[static_cast<std::size_t>(q)];
              auto l = by_launch.find(t.stream(d));
              q = place == 0 || l == by_launch.end()
                      ? -1
                      : static_cast<std::int64_t>(l->second[place - 1]);
            }
          };
          const std::int64_t own = t.position_of(r.partner);
          if (own >= 0 && t.rows[static_cast<std::size_t>(own)].device &&
              !is_marker(t.rows[static_cast<std::size_t>(own)]) && is_copy_call(name)) {
            take(own);
          }
          if (is_sync_name(name) || is_blocking_copy(name)) {
            std::int64_t only = -1;
            if (own >= 0 && is_marker(t.rows[static_cast<std::size_t>(own)])) {
              const Row& m = t.rows[static_cast<std::size_t>(own)];
              const RowExtra* x =
                  t.extras.empty() ? nullptr : &t.extras[static_cast<std::size_t>(own)];
              if (t.str(m.name) == "Stream Sync") only = t.stream(m);
              if (x != nullptr && x->wait_on_stream >= 0) only = x->wait_on_stream;
            }
            for (const auto& [stream, l] : by_launch) {
              if (only < 0 || stream == only) take(launched_before(stream, r.ts));
            }
          }
          if (waited > -std::numeric_limits<double>::infinity()) {
            const double latency = pt.ts - std::max(before.ts, waited);
            add(waited_node, node, EdgeKind::kSync, Bound::kSyncWait, latency);
            add(from, node, EdgeKind::kThread, Bound::kSyncWait, latency);
          } else {
            add(from, node, EdgeKind::kThread, b, gap);
          }
        } else if (fed) {
          // A worker waits for work: its idle gap weighs nothing, the feeding thread's time does.
          add(from, node, EdgeKind::kThread, Bound::kHost, 0);
        } else {
          add(from, node, EdgeKind::kThread, b, gap);
        }
      }
      if (fed) add(feeder->second, node, EdgeKind::kWorker, Bound::kHost, pt.ts - feeder->first);
      if (pt.is_end) {
        auto it = std::find(stack.rbegin(), stack.rend(), pt.row);
        if (it != stack.rend()) stack.erase(std::next(it).base());
        if (is_loader_name(name)) --loaders;
      } else {
        stack.push_back(pt.row);
        if (is_loader_name(name)) ++loaders;
      }
    }
  }

  order_ = graph_.topological_order();
  if (!order_) {
    problem_ = "the replay's graph has a cycle (rows out of order in time): no replay";
    return;
  }
  in_offsets_.assign(measured_.size() + 1, 0);
  for (const PathGraph::Edge& e : graph_.edges()) ++in_offsets_[e.dst + 1];
  for (std::size_t i = 1; i < in_offsets_.size(); ++i) in_offsets_[i] += in_offsets_[i - 1];
  in_list_.resize(graph_.edge_count());
  std::vector<std::uint32_t> at(in_offsets_.begin(), in_offsets_.end() - 1);
  for (EdgeId e = 0; e < graph_.edge_count(); ++e) in_list_[at[graph_.edge(e).dst]++] = e;
}

std::vector<double> ReplayGraph::replay(const std::vector<double>* weights,
                                        std::vector<std::int64_t>* binding) const {
  std::vector<double> times = measured_;
  if (binding != nullptr) binding->assign(measured_.size(), -1);
  if (!order_) return times;
  for (Node v : *order_) {
    const std::uint32_t lo = in_offsets_[v], hi = in_offsets_[v + 1];
    if (lo == hi) continue;
    double best = -std::numeric_limits<double>::infinity();
    std::int64_t which = -1;
    for (std::uint32_t k = lo; k < hi; ++k) {
      const EdgeId e = in_list_[k];
      const PathGraph::Edge& edge = graph_.edge(e);
      const double at = times[edge.src] + (weights != nullptr ? (*weights)[e] : edge.weight);
      if (at > best) {
        best = at;
        which = e;
      }
    }
    times[v] = best;
    if (binding != nullptr) (*binding)[v] = which;
  }
  return times;
}

void ReplayGraph::path_into(Node last, double from, const std::vector<double>& times,
                            const std::vector<std::int64_t>& binding, double (&by_bound)[8]) const {
  Node v = last;
  while (times[v] > from) {
    const std::int64_t e = binding[v];
    if (e < 0) {  // a thread's or stream's first row: what came before it is not in the trace
      by_bound[static_cast<int>(Bound::kHost)] += times[v] - from;
      return;
    }
    const PathGraph::Edge& edge = graph_.edge(static_cast<EdgeId>(e));
    const int b = static_cast<int>(bound(edge));
    if (times[edge.src] <= from) {
      by_bound[b] += times[v] - from;
      return;
    }
    by_bound[b] += times[v] - times[edge.src];
    v = edge.src;
  }
}

}  // namespace vxperf::explain
