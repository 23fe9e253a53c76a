#include "explain/replay_graph.h"

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "base/enum_names.h"
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

// By Bound: the keys of a replayed row's critical_path_s.
constexpr std::array<const char*, 8> kBoundNames = {
    "host",   "launch_overhead", "gpu_compute", "gpu_communication",
    "copies", "sync_wait",       "device_idle", "data_loading"};
static_assert(kBoundNames.size() == static_cast<std::size_t>(Bound::kCount));

}  // namespace

const char* bound_name(Bound b) { return internal::enum_name(b, kBoundNames, "?"); }

std::uint8_t ReplayGraph::type_byte(EdgeKind kind, Bound bound, bool least) {
  return static_cast<std::uint8_t>((static_cast<unsigned>(kind) << 4) | (least ? kLeast : 0) |
                                   static_cast<unsigned>(bound));
}

void ReplayGraph::add(Node src, Node dst, EdgeKind kind, Bound bound, bool least) {
  const std::uint8_t type = type_byte(kind, bound, least);
  if (type_[dst] == kEmpty) {
    set_first_src(dst, src);
    type_[dst] = type;
  } else if (near_[dst] != kFar && first_src(dst) == src) {
    type_[dst] = type;  // an edge added again (the same ends) takes the new rule, keeps its place
  } else {
    apart_.push_back({dst, src, type});  // put in order by node, and merged, by finish()
  }
}

void ReplayGraph::set_first_src(Node v, Node src) {
  const std::int64_t d = static_cast<std::int64_t>(v) - static_cast<std::int64_t>(src);
  if (d > kFar && d <= 127) {
    near_[v] = static_cast<std::int8_t>(d);
  } else {
    near_[v] = kFar;
    far_made_.emplace_back(v, src);
  }
}

ReplayGraph::ReplayGraph(const KinetoTrace& t, const std::vector<std::int32_t>& fed_by)
    : trace_(t) {
  // Rows kept whole (every device row among them) are 0 to n; the plain host rows kept apart
  // follow them, up to `all`.
  const std::size_t n = t.rows.size();
  const std::size_t all = t.row_count();
  if (all >= (std::size_t{1} << 31)) throw std::length_error("more than 2^31 rows to replay");
  near_.assign(2 * all, 0);
  type_.assign(2 * all, kEmpty);
  const std::vector<KernelType> types = types_of(t);
  // What each name is, decided once per name rather than once per row.
  enum : std::uint8_t {
    kSync = 1,
    kCopyCall = 2,
    kBlockingCopy = 4,
    kLoader = 8,
    kLaunchCall = 16
  };
  std::vector<std::uint8_t> name_is(t.strings.size(), 0);
  for (std::size_t i = 0; i < name_is.size(); ++i) {
    const std::string_view s = t.strings[i];
    name_is[i] = static_cast<std::uint8_t>(
        (is_sync_name(s) ? kSync : 0) | (is_copy_call(s) ? kCopyCall : 0) |
        (is_blocking_copy(s) ? kBlockingCopy : 0) | (is_loader_name(s) ? kLoader : 0) |
        (is_launch_name(s) ? kLaunchCall : 0));
  }
  // A row's launch call: its launch link's partner when that is a host row.
  std::vector<std::int32_t> launch_of(n, -1);
  for (std::size_t p = 0; p < n; ++p) {
    const Row& r = t.rows[p];
    if (r.device) {
      const std::int64_t l = t.position_of(r.partner);
      if (l >= 0 && !t.rows[static_cast<std::size_t>(l)].device) {
        launch_of[p] = static_cast<std::int32_t>(l);
      }
    }
  }
  auto launch_ts = [&](std::uint32_t p) {
    return launch_of[p] >= 0 ? t.rows[static_cast<std::size_t>(launch_of[p])].ts : t.rows[p].ts;
  };
  // Device rows that mark rather than occupy a stream: the cuda_sync events and the GPU-side
  // copies of annotations. They follow their call (or stay where they were) and order nothing.
  std::vector<char> marker_cat(t.categories.size(), 0);
  for (std::size_t c = 0; c < t.categories.size(); ++c) {
    marker_cat[c] = t.categories[c] == "cuda_sync" || t.categories[c] == "gpu_user_annotation";
  }
  auto is_marker = [&](const Row& r) { return marker_cat[r.cat] != 0; };

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
  // waiting stream after the cudaStreamWaitEvent. The host rows by correlation are looked up only
  // for the records some wait names (the first host row of each correlation).
  std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> waits_on;
  std::vector<std::uint32_t> waits;
  for (const SyncArgs& x : t.sync_args) {
    const Row& r = t.rows[x.position];
    if (r.device && x.wait_on_event_record != -1 && t.str(r.name) == "Stream Wait Event") {
      waits.push_back(x.position);
    }
  }
  if (!waits.empty()) {
    std::unordered_map<std::int64_t, std::uint32_t> host_by_correlation;
    for (std::uint32_t p : waits) {
      host_by_correlation.emplace(t.sync_args_of(p)->wait_on_event_record, UINT32_MAX);
    }
    for (std::size_t p = 0; p < n; ++p) {
      const Row& r = t.rows[p];
      if (r.device || r.correlation == -1) continue;
      auto it = host_by_correlation.find(r.correlation);
      if (it != host_by_correlation.end() && it->second == UINT32_MAX) {
        it->second = static_cast<std::uint32_t>(p);
      }
    }
    for (std::uint32_t p : waits) {
      const Row& r = t.rows[p];
      const SyncArgs& x = *t.sync_args_of(p);
      auto record = host_by_correlation.find(x.wait_on_event_record);
      if (record->second == UINT32_MAX || launch_of[p] < 0) continue;
      const std::int64_t recorded = launched_before(x.wait_on_stream, t.rows[record->second].ts);
      auto waiting = by_launch.find(t.stream(r));
      if (recorded < 0 || waiting == by_launch.end()) continue;
      const double wait_ts = t.rows[static_cast<std::size_t>(launch_of[p])].ts;
      const std::vector<std::uint32_t>& l = waiting->second;
      auto at = std::upper_bound(l.begin(), l.end(), wait_ts,
                                 [&](double x0, std::uint32_t q) { return x0 < launch_ts(q); });
      if (at != l.end()) waits_on[*at].push_back(static_cast<std::uint32_t>(recorded));
    }
  }

  // Device rows. Of the causes of a row's start (its launch, its stream's previous row, an event
  // it waits on) the latest carries the whole measured delay; the others weigh only their least
  // (a launch its call's duration, the device nothing: weight()), so that a what-if moving a cause
  // moves the row only as far as it must.
  struct Cause {
    Node from;
    double at;
    EdgeKind kind;
  };
  std::vector<Cause> causes;
  for (auto& [stream, rows] : by_start) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const std::uint32_t p = rows[i];
      const Row& r = t.rows[p];
      causes.clear();
      if (i > 0) {
        const Row& prev = t.rows[rows[i - 1]];
        causes.push_back({end(rows[i - 1]), prev.end(), EdgeKind::kStream});
      }
      if (!waits_on.empty()) {
        auto w = waits_on.find(p);
        if (w != waits_on.end()) {
          for (std::uint32_t q : w->second) {
            causes.push_back({end(q), t.rows[q].end(), EdgeKind::kEvent});
          }
        }
      }
      if (launch_of[p] >= 0) {
        const Row& l = t.rows[static_cast<std::size_t>(launch_of[p])];
        causes.push_back({start(static_cast<std::uint32_t>(launch_of[p])), l.ts, EdgeKind::kLaunch});
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
            c.kind == EdgeKind::kLaunch ? Bound::kLaunch : Bound::kDeviceIdle);
      }
      for (std::size_t c = 0; c < causes.size(); ++c) {
        if (c == last) continue;
        add(causes[c].from, start(p), causes[c].kind,
            causes[c].kind == EdgeKind::kLaunch ? Bound::kLaunch : Bound::kDeviceIdle, true);
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
      add(start(p), end(p), EdgeKind::kRun, b);
    }
  }
  by_start = {};  // the threads look streams up by launch only
  // The cuda_sync markers follow their call.
  for (std::size_t p = 0; p < n; ++p) {
    const Row& r = t.rows[p];
    if (!r.device || !is_marker(r) || launch_of[p] < 0) continue;
    const auto l = static_cast<std::uint32_t>(launch_of[p]);
    add(start(l), start(static_cast<std::uint32_t>(p)), EdgeKind::kLaunch, Bound::kSyncWait);
    add(start(static_cast<std::uint32_t>(p)), end(static_cast<std::uint32_t>(p)), EdgeKind::kRun,
        Bound::kSyncWait);
  }

  // What each blocking call waited for (its end's sync edge), found while the streams' tables
  // are here: they go before the threads' points are made.
  std::vector<std::pair<std::uint32_t, Node>> waited_by;  // (call's row, what it waited for)
  for (std::size_t p = 0; p < all; ++p) {
    const std::uint8_t is = name_is[t.name_of(p)];
    if ((is & (kSync | kCopyCall)) == 0) continue;
    const Row r = t.row(p);
    if (r.device) continue;
    const double ts = measured(end(static_cast<std::uint32_t>(p)));
    // What the call waited for: its own copies, and for a synchronize (or a blocking copy)
    // the rows launched before it on its stream (from its cuda_sync marker) or on all.
    double waited = -std::numeric_limits<double>::infinity();
    Node waited_node = 0;
    auto take = [&](std::int64_t q) {
      for (std::size_t k = 0; q >= 0 && k < kWalkBack; ++k) {
        const Row& d = t.rows[static_cast<std::size_t>(q)];
        if (d.end() <= ts) {
          if (d.end() > waited) {
            waited = d.end();
            waited_node = end(static_cast<std::uint32_t>(q));
          }
          return;
        }
        // Not done when the call returned: look at the one launched before it.
        const std::uint32_t place = launch_place[static_cast<std::size_t>(q)];
        auto l = by_launch.find(t.stream(d));
        q = place == 0 || l == by_launch.end() ? -1
                                               : static_cast<std::int64_t>(l->second[place - 1]);
      }
    };
    const std::int64_t own = t.position_of(r.partner);
    if (own >= 0 && t.rows[static_cast<std::size_t>(own)].device &&
        !is_marker(t.rows[static_cast<std::size_t>(own)]) && (is & kCopyCall) != 0) {
      take(own);
    }
    if ((is & (kSync | kBlockingCopy)) != 0) {
      std::int64_t only = -1;
      if (own >= 0 && is_marker(t.rows[static_cast<std::size_t>(own)])) {
        const Row& m = t.rows[static_cast<std::size_t>(own)];
        const SyncArgs* x = t.sync_args_of(static_cast<std::uint32_t>(own));
        if (t.str(m.name) == "Stream Sync") only = t.stream(m);
        if (x != nullptr && x->wait_on_stream >= 0) only = x->wait_on_stream;
      }
      for (const auto& [stream, l] : by_launch) {
        if (only < 0 || stream == only) take(launched_before(stream, r.ts));
      }
    }
    if (waited > -std::numeric_limits<double>::infinity()) {
      waited_by.emplace_back(static_cast<std::uint32_t>(p), waited_node);
    }
  }
  std::vector<std::int32_t>().swap(launch_of);
  std::vector<std::uint32_t>().swap(launch_place);
  by_launch = {};
  waits_on = {};

  // Host threads: every start and end of a thread's rows in call-stack order (at one time, ends
  // before starts; the longer start first, the shorter end first), consecutive ones linked. A
  // point is its node (a row's start or end), its time the node's measured time. The threads'
  // points are made a batch of threads at a time (a pass over the rows each), so that they are
  // not all held at once.
  std::unordered_map<std::int32_t, std::vector<Node>> threads;
  std::unordered_map<std::int32_t, bool> has_ranges;
  const std::optional<std::uint32_t> annotation = [&]() -> std::optional<std::uint32_t> {
    for (std::size_t c = 0; c < t.categories.size(); ++c) {
      if (t.categories[c] == "user_annotation") return static_cast<std::uint32_t>(c);
    }
    return std::nullopt;
  }();
  std::unordered_map<std::int32_t, std::size_t> thread_rows;
  std::size_t host_rows = 0;
  for (std::size_t p = 0; p < all; ++p) {
    const Row r = t.row(p);
    if (r.device) continue;
    ++thread_rows[r.tid];
    ++host_rows;
    if (fed_by.empty() && annotation && r.cat == *annotation) has_ranges[r.tid] = true;
  }
  std::size_t largest = 0;
  for (const auto& [tid, rows] : thread_rows) {
    threads[tid];
    largest = std::max(largest, rows);
  }
  // A thread of vxperf's ranges feeds the others, even those with ranges of their own (the
  // autograd thread's record_function hooks).
  for (std::int32_t tid : fed_by) has_ranges[tid] = true;
  bool any_worker = false, any_feeding = false;
  for (const auto& [tid, points] : threads) (has_ranges[tid] ? any_feeding : any_worker) = true;
  // Each thread's points in call-stack order, by time first. What a point's order reads of its
  // (host) row, from where the row is kept: the rows kept whole or the plain ones apart.
  struct Key {
    double ts, dur;
    std::uint32_t index;
  };
  auto whole = [&](std::uint32_t x) {
    const Row& r = t.rows[x];
    return Key{r.ts, r.dur, r.index};
  };
  auto plain = [&](std::uint32_t x) {
    const std::size_t i = x - n;
    return Key{t.plain_rows.ts(i), t.plain_rows.dur(i), t.plain_rows.index(i)};
  };
  auto either = [&](std::uint32_t x) { return x < n ? whole(x) : plain(x); };
  // The order of two points (as measured() times them) with `key` reading their rows.
  auto order_by = [](auto key) {
    return [key](Node a, Node b) {
      const Key x = key(row_of(a)), y = key(row_of(b));
      const bool a_end = (a & 1) != 0, b_end = (b & 1) != 0;
      const double ta = a_end ? std::max(x.ts, x.ts + x.dur) : x.ts;
      const double tb = b_end ? std::max(y.ts, y.ts + y.dur) : y.ts;
      if (ta != tb) return ta < tb;
      // A row of no duration sits between the rows ending and those starting at its time, its
      // start just before its end (else it would open after it closed and stay open).
      const int ga = std::max(x.ts, x.ts + x.dur) == x.ts ? 1 : a_end ? 0 : 2;
      const int gb = std::max(y.ts, y.ts + y.dur) == y.ts ? 1 : b_end ? 0 : 2;
      if (ga != gb) return ga < gb;
      if (ga == 1) return row_of(a) != row_of(b) ? x.index < y.index : !a_end && b_end;
      if (a_end) return x.dur != y.dur ? x.dur < y.dur : x.index > y.index;
      return x.dur != y.dur ? x.dur > y.dur : x.index < y.index;
    };
  };
  // The points of the threads whose vectors are reserved (a batch), each thread's sorted.
  auto fill_batch = [&]() {
    for (std::size_t p = 0; p < all; ++p) {
      const Row r = t.row(p);
      if (r.device) continue;
      std::vector<Node>& points = threads[r.tid];
      if (points.capacity() == 0) continue;  // not in this batch
      const auto q = static_cast<std::uint32_t>(p);
      points.push_back(start(q));
      points.push_back(end(q));
    }
    for (auto& [tid, points] : threads) {
      if (points.empty()) continue;
      // The points of the rows kept whole come first (pushed by position) and those of the
      // plain rows after: each part sorted alone, then merged (one total order, so the same
      // result as one sort, without a branch on where each row is kept at every comparison).
      const auto apart =
          std::partition_point(points.begin(), points.end(), [&](Node p) { return row_of(p) < n; });
      std::sort(points.begin(), apart, order_by(whole));
      std::sort(apart, points.end(), order_by(plain));
      std::inplace_merge(points.begin(), apart, points.end(), order_by(either));
    }
  };
  // A point's place in the file: its row's position in traceEvents, its start before its end.
  auto file_order = [&](Node p) {
    return (static_cast<std::uint64_t>(t.index_of(row_of(p))) << 1) | (p & 1);
  };
  // A worker thread's op after an idle stretch is fed by the latest earlier point of the threads
  // with ranges (of equal times, the last in the file): the workers' such ops are noted while
  // their edges are made, found in each feeding thread's points in turn, and their edges added
  // once every feeding thread has been through (their thread edge's rule then set).
  struct Fed {
    Node node;
    Node best;         // the feeder so far, or kNoFeeder
    Bound alone;       // the thread edge's bound if nothing feeds it
    bool thread_edge;  // whether the op has a thread edge (it is not its thread's first point)
  };
  constexpr Node kNoFeeder = UINT32_MAX;
  std::vector<Fed> fed_ops;
  auto find_feeders = [&](const std::vector<Node>& points) {
    for (Fed& f : fed_ops) {
      const double ts = measured(f.node);
      auto at = std::lower_bound(points.begin(), points.end(), ts,
                                 [&](Node x, double v) { return measured(x) < v; });
      if (at == points.begin()) continue;
      const double when = measured(*(at - 1));
      Node top = *(at - 1);
      for (auto q = at - 1; measured(*q) == when; --q) {
        if (file_order(*q) > file_order(top)) top = *q;
        if (q == points.begin()) break;
      }
      if (f.best == kNoFeeder || when > measured(f.best) ||
          (when == measured(f.best) && file_order(top) > file_order(f.best))) {
        f.best = top;
      }
    }
  };
  auto make_thread = [&](const std::vector<Node>& points, bool worker) {
    std::vector<std::uint32_t> stack;
    int loaders = 0;
    for (std::size_t i = 0; i < points.size(); ++i) {
      const Node node = points[i];
      const bool is_end = (node & 1) != 0;
      const std::uint32_t row = row_of(node);
      const std::uint8_t is = name_is[t.name_of(row)];
      const bool fed = worker && any_feeding && !is_end && stack.empty();
      Bound b = Bound::kHost;
      if (loaders > 0) {
        b = Bound::kDataLoading;
      } else if (!stack.empty() && (name_is[t.name_of(stack.back())] & kLaunchCall) != 0) {
        b = Bound::kLaunch;
      }
      if (fed) fed_ops.push_back({node, kNoFeeder, b, i > 0});
      if (i > 0) {
        const Node from = points[i - 1];
        if (is_end && (is & (kSync | kCopyCall)) != 0) {
          const auto w = std::lower_bound(
              waited_by.begin(), waited_by.end(), row,
              [](const std::pair<std::uint32_t, Node>& x, std::uint32_t y) { return x.first < y; });
          if (w != waited_by.end() && w->first == row) {
            // Both weigh the return after the later of the two (weight()).
            add(w->second, node, EdgeKind::kSync, Bound::kSyncWait);
            add(from, node, EdgeKind::kThread, Bound::kSyncWait);
          } else {
            add(from, node, EdgeKind::kThread, b);
          }
        } else if (fed) {
          // A worker waits for work: its idle gap weighs nothing, the feeding thread's time does
          // (or, if nothing feeds it, its gap as any other: set once the feeders are known).
          add(from, node, EdgeKind::kThread, Bound::kHost, true);
        } else {
          add(from, node, EdgeKind::kThread, b);
        }
      }
      if (is_end) {
        auto it = std::find(stack.rbegin(), stack.rend(), row);
        if (it != stack.rend()) stack.erase(std::next(it).base());
        if ((is & kLoader) != 0) --loaders;
      } else {
        stack.push_back(row);
        if ((is & kLoader) != 0) ++loaders;
      }
    }
  };
  // Batches of threads, the workers' first, each of at most a quarter of the points or the
  // largest thread: a few passes over the rows, and the points of a batch alone held at a time.
  const std::size_t cap = std::max(largest, host_rows / 4);
  for (int pass = 0; pass < 2; ++pass) {
    const bool workers = pass == 0;
    auto it = threads.begin();
    while (it != threads.end()) {
      std::size_t rows = 0;
      for (; it != threads.end(); ++it) {
        if (has_ranges[it->first] == workers) continue;
        const std::size_t r = thread_rows[it->first];
        if (rows > 0 && rows + r > cap) break;
        rows += r;
        it->second.reserve(2 * r);
      }
      if (rows == 0) break;
      fill_batch();
      for (auto& [tid, points] : threads) {
        if (points.empty()) continue;
        if (!workers && any_worker) find_feeders(points);
        make_thread(points, workers);
        std::vector<Node>().swap(points);
      }
    }
  }
  for (const Fed& f : fed_ops) {
    if (f.best != kNoFeeder) {
      add(f.best, f.node, EdgeKind::kWorker, Bound::kHost);
    } else if (f.thread_edge) {
      type_[f.node] = type_byte(EdgeKind::kThread, f.alone, false);
    }
  }
  threads = {};
  finish();
}

void ReplayGraph::finish() {
  const std::size_t slots = type_.size();
  // The far sources in place, by node (each node's first edge is set once).
  std::sort(far_made_.begin(), far_made_.end());
  far_bits_.assign((slots + 63) / 64, 0);
  far_rank_.assign(far_bits_.size(), 0);
  far_src_.reserve(far_made_.size());
  for (const auto& [v, u] : far_made_) {
    far_bits_[v >> 6] |= std::uint64_t{1} << (v & 63);
    far_src_.push_back(u);
  }
  std::deque<std::pair<Node, Node>>().swap(far_made_);
  std::uint32_t far = 0;
  for (std::size_t w = 0; w < far_bits_.size(); ++w) {
    far_rank_[w] = far;
    far += static_cast<std::uint32_t>(__builtin_popcountll(far_bits_[w]));
  }
  // The edges apart in order by node, each node's in the order added (a stable sort); one added
  // again (the same ends as an earlier one of its node) gives that one its rule and goes.
  std::stable_sort(apart_.begin(), apart_.end(),
                   [](const Apart& a, const Apart& b) { return a.dst < b.dst; });
  std::size_t kept = 0;
  for (std::size_t i = 0; i < apart_.size(); ++i) {
    const Apart& x = apart_[i];
    if (first_src(x.dst) == x.src) {
      type_[x.dst] = x.type;
      continue;
    }
    bool again = false;
    for (std::size_t j = kept; j-- > 0 && apart_[j].dst == x.dst;) {
      if (apart_[j].src == x.src) {
        apart_[j].type = x.type;
        again = true;
        break;
      }
    }
    if (!again) apart_[kept++] = x;
  }
  apart_.resize(kept);
  extra_dst_.reserve(kept);
  extra_src_.reserve(kept);
  extra_type_.reserve(kept);
  for (std::size_t i = 0; i < kept; ++i) {
    const Apart& x = apart_[i];
    const bool last = i + 1 == kept || apart_[i + 1].dst != x.dst;
    extra_dst_.push_back(x.dst);
    extra_src_.push_back(x.src);
    extra_type_.push_back(static_cast<std::uint8_t>(x.type | (last ? kLastIn : 0)));
  }
  std::deque<Apart>().swap(apart_);
  // A node's first edge is its last in unless some are apart.
  for (Node v = 0; v < slots; ++v) {
    if (type_[v] != kEmpty) {
      type_[v] |= kLastIn;
      ++edges_;
    }
  }
  for (Node v : extra_dst_) type_[v] &= static_cast<std::uint8_t>(~kLastIn);
  edges_ += kept;
  // Every node with an edge, and whether the graph has an order to replay in.
  {
    std::vector<bool> touched(slots, false);
    for (Node v = 0; v < slots; ++v) {
      if (type_[v] != kEmpty) touched[first_src(v)] = true;
    }
    for (Node u : extra_src_) touched[u] = true;
    for (Node v = 0; v < slots; ++v) {
      if (touched[v] || type_[v] != kEmpty) ++nodes_;
    }
  }
  if (!in_order([](Node) {})) {
    problem_ = "the replay's graph has a cycle (rows out of order in time): no replay";
    return;
  }
  ok_ = true;
}

double ReplayGraph::weight(EdgeId e, Node to) const {
  const std::uint8_t t = type(e);
  const EdgeKind k = kind(e);
  if (k == EdgeKind::kRun) return trace_.rows[row_of(to)].dur;
  if (k == EdgeKind::kSync || (k == EdgeKind::kThread && bound(e) == Bound::kSyncWait)) {
    // A blocking call's return after the later of its thread's previous point and the device
    // work it waited for: its two edges in (the sync edge first, its thread's next) weigh the
    // same.
    const Node other = e == to ? extra_src_[first_apart(to) - type_.size()] : src(e);
    return measured(to) - std::max(measured(other), measured(first_src(to)));
  }
  const double gap = measured(to) - measured(src(e));
  if ((t & kLeast) == 0) return gap;
  switch (k) {
    case EdgeKind::kThread:  // a worker's idle gap
      return 0;
    case EdgeKind::kLaunch:  // a launch that did not bind: its call's duration at most
      return std::min(gap, std::max(0.0, trace_.rows[row_of(src(e))].dur));
    default:  // the device's cause that did not bind: an overlap, else nothing
      return std::min(0.0, gap);
  }
}

void ReplayGraph::weights_into(std::vector<double>& w) const {
  w.resize(edge_slots());
  for_each_edge([&](EdgeId e, Node to) { w[e] = weight(e, to); });
}

void ReplayTimes::fill(std::size_t block) {
  if (block >= blocks_.size()) {
    blocks_.resize(block + 1);
    live_.resize(block + 1, false);
  }
  if (!blocks_[block]) blocks_[block].reset(new double[std::size_t{1} << kBits]);
  const std::size_t first = block << kBits;
  const std::size_t slots = size();
  for (std::size_t i = 0; i <= kMask; ++i) {
    blocks_[block][i] =
        first + i < slots ? g_->measured(static_cast<ReplayGraph::Node>(first + i)) : 0;
  }
  live_[block] = true;
}

template <class F>
bool ReplayGraph::in_order(F&& place) const {
  const std::size_t slots = type_.size();
  enum : std::uint8_t { kSeen = 1, kPlaced = 2 };
  std::vector<std::uint8_t> state(slots, 0);
  std::vector<std::pair<Node, EdgeId>> walk;  // a node and its next edge in (kNone: no more)
  // The walks start from the rows in file order (the rows kept whole and the plain ones apart
  // merged by position in traceEvents), each row's start then its end: a walk then seldom goes
  // back further than the rows before it in the file.
  const std::size_t whole = trace_.rows.size();
  std::size_t next_whole = 0, next_plain = whole;
  std::uint32_t row = 0;
  for (std::size_t k = 0; k < slots; ++k) {
    if ((k & 1) == 0) {
      const bool take_whole =
          next_plain == slots / 2 ||
          (next_whole < whole && trace_.index_of(next_whole) < trace_.index_of(next_plain));
      std::size_t& next = take_whole ? next_whole : next_plain;
      row = static_cast<std::uint32_t>(next++);
    }
    const Node root = (k & 1) == 0 ? start(row) : end(row);
    if (type_[root] == kEmpty || (state[root] & kPlaced) != 0) continue;
    state[root] |= kSeen;
    walk.emplace_back(root, root);
    while (!walk.empty()) {
      auto& [v, next] = walk.back();
      if (next != kNone) {
        const Node from = src(next);
        next = next_in(next, v);
        if ((state[from] & kPlaced) != 0 || type_[from] == kEmpty) continue;
        if ((state[from] & kSeen) != 0) return false;
        state[from] |= kSeen;
        walk.emplace_back(from, from);
      } else {
        state[v] |= kPlaced;
        const Node placed = v;
        walk.pop_back();
        place(placed);
      }
    }
  }
  return true;
}

void ReplayTimes::reset() { std::fill(live_.begin(), live_.end(), false); }

void ReplayGraph::replay_into(ReplayTimes& times, const std::vector<double>* weights,
                              Binding* binding) const {
  const std::size_t slots = node_slots();
  if (binding != nullptr) {
    binding->which.assign(slots, 0);
    binding->far.clear();
  }
  if (!ok_) {
    times.reset();
    return;
  }
  // No reset between replays: every node with an edge in is set again before it is read (in
  // order), and the others keep their measured time wherever they are kept.
  const double* w = weights != nullptr ? weights->data() : nullptr;
  auto place = [&](Node v) {
    double best = -std::numeric_limits<double>::infinity();
    EdgeId which = kNone;
    std::size_t nth = 0, best_nth = 0;
    for (EdgeId e = v; e != kNone; e = next_in(e, v), ++nth) {
      const double at = times[src(e)] + (w != nullptr ? w[e] : weight(e, v));
      if (at > best) {
        best = at;
        which = e;
        best_nth = nth;
      }
    }
    times.set(v, best);
    if (binding != nullptr && which != kNone) {
      if (best_nth < 254) {
        binding->which[v] = static_cast<std::uint8_t>(best_nth + 1);
      } else {
        binding->which[v] = 255;
        binding->far.emplace(v, which);
      }
    }
  };
  if (order_.empty()) {
    in_order(place);
  } else {
    for (Node v : order_) place(v);
  }
}

ReplayGraph::EdgeId ReplayGraph::binding_of(const Binding& b, Node v) const {
  const std::uint8_t x = b.which[v];
  if (x == 0) return kNone;
  if (x == 1) return v;
  if (x == 255) return b.far.at(v);
  return first_apart(v) + (x - 2);
}

void ReplayGraph::keep_order() {
  if (!ok_ || !order_.empty()) return;
  in_order([&](Node v) { order_.push_back(v); });
}

void ReplayGraph::path_into(Node last, double from, const ReplayTimes& times,
                            const Binding& binding, double (&by_bound)[8]) const {
  Node v = last;
  while (times[v] > from) {
    const EdgeId e = binding_of(binding, v);
    if (e == kNone) {  // a thread's or stream's first row: what came before it is not in the trace
      by_bound[static_cast<int>(Bound::kHost)] += times[v] - from;
      return;
    }
    const int b = static_cast<int>(bound(e));
    const Node u = src(e);
    if (times[u] <= from) {
      by_bound[b] += times[v] - from;
      return;
    }
    by_bound[b] += times[v] - times[u];
    v = u;
  }
}

}  // namespace vxperf::explain
