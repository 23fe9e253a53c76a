// vxperf's own dependency graph of a trace, made to reproduce what ran (unlike HTA's, which keeps
// only op time): every host thread and every stream runs its items in order, with the gaps between
// them as edges; a launch leads to its device row; a synchronization waits for the device work
// launched before it; a CUDA event joins two streams; a worker thread (the autograd engine's) is
// fed by the thread of the ranges. Each edge weighs what was measured, and of the edges into a node
// the one whose cause came last carries the whole measured delay (the others only their least), so
// that replaying the graph (each node's time the latest of its predecessors' times plus the edges'
// weights) gives every row's times again. Editing the weights and replaying is a what-if
// (what_if.h). The rules and their assumptions are in docs/EXPLAIN.md, "The replay".
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "explain/kineto_trace.h"

namespace vxperf::explain {

// What an edge on the path is time of.
enum class Bound : std::uint8_t {
  kHost = 0,       // host ops and the host's own gaps between them
  kLaunch,         // launch calls, and a launch's delay to its device row
  kCompute,        // computation (and other) device rows
  kCommunication,  // communication device rows
  kCopies,         // copies and sets
  kSyncWait,       // a synchronization's return after the work it waited for ended
  kDeviceIdle,     // a stream's gap before a row whose cause was the device itself
  kDataLoading,    // host time inside a data loader's range
  kCount
};
const char* bound_name(Bound b);

// How an edge was made (what a what-if edits).
enum class EdgeKind : std::uint8_t {
  kThread = 0,  // consecutive points of a host thread
  kWorker,      // from the thread of the ranges to a worker thread's next op
  kSync,        // from the device work a synchronization waited for to its return
  kLaunch,      // from a launch call's start to its device row's start
  kStream,      // from the end of a stream's previous row to the next one's start
  kEvent,       // from a recorded row's end to the first row after a stream's wait on it
  kRun,         // a device row's own duration
};

class ReplayGraph;

// Each node's time in a replay. Where a replay gives a node its measured time again (every node,
// when it replays the run as measured) nothing is kept: a block of nodes' times is made only
// once one of them differs from its measured time, bit for bit, so that the measured replay costs
// no memory for its times and a what-if's costs what it changes (8 bytes a node at most).
class ReplayTimes {
 public:
  explicit ReplayTimes(const ReplayGraph& g) : g_(&g) {}
  double operator[](std::uint32_t node) const;
  std::size_t size() const;
  // `node` takes `t` (a node's time is set once per replay, in the replay's order).
  void set(std::uint32_t node, double t);
  // Back to the measured times, the blocks kept.
  void reset();
  // f(node, time) for each node whose time differs from its measured one (and maybe some that
  // do not), by node.
  template <class F>
  void for_each_kept(F&& f) const;

 private:
  static constexpr unsigned kBits = 12;  // 4096 nodes a block
  static constexpr std::uint32_t kMask = (1u << kBits) - 1;
  void fill(std::size_t block);
  const ReplayGraph* g_;
  std::vector<std::unique_ptr<double[]>> blocks_;
  std::vector<bool> live_;  // by block: its times are this replay's (else measured)
};

// Kept compact, for traces of millions of rows. Nodes are the rows' starts and ends by number (no
// table of them), and almost every node has exactly one edge in, so the edges are kept by the node
// they go into: each node's first edge in is its own slot (a byte of kind, bound, weight rule and a
// bit saying it is the node's only edge in, and its source in a byte where it is near: type_ and
// near_ below), and the rare second and later ones (a device row's launch beside its stream, a
// synchronize's wait, a worker's feeder, an event) sit in a table apart, by node. An edge's number is its node's for a first edge, and past the
// node slots for the others. No weight is stored: each is a measured difference, computed again
// from the measured times of its ends by its rule (the gap between them, the least of a cause that
// did not bind, a row's duration, a call's return after what it waited for), so that it is the same
// double the making would have stored. The order to replay in is walked again at each replay rather
// than kept (no table of it).
class ReplayGraph {
 public:
  using Node = std::uint32_t;
  using EdgeId = std::uint32_t;
  static constexpr EdgeId kNone = UINT32_MAX;

  // Each node's edge in that gave its time in a replay (the first of equal ones): a byte a node,
  // which of its edges in (0: none, 1: its first, 2 + k: its k-th of the table apart), with the
  // few past 252 looked up apart.
  struct Binding {
    std::vector<std::uint8_t> which;
    std::unordered_map<Node, EdgeId> far;
  };

  // The trace must have been read with every row (ReadOptions::every_row or plain_rows), and must
  // outlive the graph. `fed_by`: the threads (Row::tid) that feed the others (those of vxperf's
  // ranges); empty: every thread with a range (user_annotation) of its own.
  explicit ReplayGraph(const KinetoTrace& trace, const std::vector<std::int32_t>& fed_by = {});

  static Node start(std::uint32_t row) { return 2 * row; }
  static Node end(std::uint32_t row) { return 2 * row + 1; }
  static std::uint32_t row_of(Node n) { return n / 2; }

  std::size_t node_count() const { return nodes_; }  // nodes with an edge
  std::size_t edge_count() const { return edges_; }
  // Edge numbers run up to this (some, of nodes without an edge in, are none).
  std::size_t edge_slots() const { return type_.size() + extra_src_.size(); }
  Node src(EdgeId e) const {
    return e < type_.size() ? first_src(e) : extra_src_[e - type_.size()];
  }
  // The weight of `e`, whose end is `to` (for_each_edge gives both).
  double weight(EdgeId e, Node to) const;
  // A device row's run edge's weight (its duration).
  double run_weight(std::uint32_t row) const { return trace_.rows[row].dur; }
  // Every edge's weight, by edge number.
  void weights_into(std::vector<double>& w) const;
  EdgeKind kind(EdgeId e) const { return static_cast<EdgeKind>((type(e) >> 4) & 7); }
  Bound bound(EdgeId e) const { return static_cast<Bound>(type(e) & 7); }
  // Whether `e` is the last of its node's edges in (its first, then those apart in the order
  // added).
  bool last_in(EdgeId e) const { return (type(e) & kLastIn) != 0; }
  // f(edge, its end) for every edge, node by node (none when ok() is false).
  template <class F>
  void for_each_edge(F&& f) const {
    if (!ok_) return;
    for (Node v = 0; v < type_.size(); ++v) {
      if (type_[v] == kEmpty) continue;
      for (EdgeId e = v; e != kNone; e = next_in(e, v)) f(e, v);
    }
  }
  // A device row's run edge (start to end), or kNone: its end's only edge in.
  EdgeId run_edge(std::uint32_t row) const {
    const Node v = end(row);
    return ok_ && row < trace_.rows.size() && type_[v] != kEmpty && kind(v) == EdgeKind::kRun
               ? v
               : kNone;
  }
  // f(row, its run edge) for every device row with one, by row.
  template <class F>
  void for_each_run_edge(F&& f) const {
    for (std::uint32_t p = 0; p < trace_.rows.size(); ++p) {
      const EdgeId e = run_edge(p);
      if (e != kNone) f(p, e);
    }
  }
  // The measured time of a node (a host row's end is never before its start).
  double measured(Node n) const {
    const std::size_t row = row_of(n);
    if (row >= trace_.rows.size()) {  // a plain host row kept apart
      const std::size_t i = row - trace_.rows.size();
      const double ts = trace_.plain_rows.ts(i);
      return (n & 1) == 0 ? ts : std::max(ts, ts + trace_.plain_rows.dur(i));
    }
    const Row& r = trace_.rows[row];
    if ((n & 1) == 0) return r.ts;
    return r.device ? r.end() : std::max(r.ts, r.end());
  }
  std::size_t node_slots() const { return 2 * trace_.row_count(); }
  // False when the graph has a cycle (the replay then gives nothing): said in `problem`.
  bool ok() const { return ok_; }
  const std::string& problem() const { return problem_; }

  // Each node's time (by node number) into `times` with the given weight per edge (by edge
  // number; the graph's own when null). A node without edges into it keeps its measured time.
  // With `binding`, each node's edge that gave its time (the first of equal ones).
  void replay_into(ReplayTimes& times, const std::vector<double>* weights = nullptr,
                   Binding* binding = nullptr) const;

  // Keeps the order to replay in (4 bytes a node) for the replays that follow, rather than walk
  // it again at each: for several replays (what-ifs).
  void keep_order();

  // The critical path into `last` back to time `from`: the binding edges walked back, each
  // edge's weight added to its bound (the one that crosses `from` only for its part after it).
  // Sums to times[last] - from when the walk reaches `from`; a node without a binding edge before
  // then adds the rest as host time.
  void path_into(Node last, double from, const ReplayTimes& times, const Binding& binding,
                 double (&by_bound)[8]) const;

 private:
  // `least`: a cause that did not bind (a launch's or the device's least delay), or a worker's
  // idle gap (nothing); else the edge weighs its ends' measured difference (its kind says how).
  void add(Node src, Node dst, EdgeKind kind, Bound bound, bool least = false);
  static std::uint8_t type_byte(EdgeKind kind, Bound bound, bool least);
  // Puts the edges apart in order by node (an edge added again merged into its first) and finds
  // whether there is an order to replay in.
  void finish();
  // place(node) for every node with an edge in, each after the sources of all its edges in: a
  // depth-first walk back along the edges in from each node by number (rows come mostly in time
  // order, so a walk seldom goes deep, and no table of the edges out is needed). False when a
  // walk comes back to a node it is in (a cycle). Any such order gives the same replay (a node's
  // time is the latest over its edges in, ties to the first), and it is the same order each time.
  template <class F>
  bool in_order(F&& place) const;
  std::uint8_t type(EdgeId e) const {
    return e < type_.size() ? type_[e] : extra_type_[e - type_.size()];
  }
  // The first of `v`'s edges in kept apart (v has some).
  EdgeId first_apart(Node v) const {
    const auto at = std::lower_bound(extra_dst_.begin(), extra_dst_.end(), v);
    return static_cast<EdgeId>(type_.size() + static_cast<std::size_t>(at - extra_dst_.begin()));
  }
  // The edge into `v` after `e`, or kNone.
  EdgeId next_in(EdgeId e, Node v) const {
    if (last_in(e)) return kNone;
    return e == v ? first_apart(v) : e + 1;
  }
  EdgeId binding_of(const Binding& b, Node v) const;
  // The source of `v`'s first edge in (made: once finish() has put the far ones in place).
  Node first_src(Node v) const {
    const std::int8_t d = near_[v];
    if (d != kFar) return static_cast<Node>(static_cast<std::int64_t>(v) - d);
    const std::size_t w = v >> 6;
    const std::uint64_t before = far_bits_[w] & ((std::uint64_t{1} << (v & 63)) - 1);
    return far_src_[far_rank_[w] + static_cast<std::size_t>(__builtin_popcountll(before))];
  }
  void set_first_src(Node v, Node src);

  static constexpr std::uint8_t kLastIn = 128;  // in a type: the last edge into its node
  static constexpr std::uint8_t kLeast = 8;     // in a type: the `least` of add()
  // A node's type when it has no edge in (a kind no edge has).
  static constexpr std::uint8_t kEmpty = 0x7f;

  const KinetoTrace& trace_;
  // By node: its first edge in's type (kLastIn | kind << 4 | kLeast | bound), or kEmpty; and its
  // source, as its distance back from the node where that fits in a byte (5 in 6 on Kineto's
  // traces: a thread's previous point, a device row's start), else kFar and the source kept
  // apart by its rank among the far ones (a bit per node, and a count per 64 nodes).
  std::vector<std::uint8_t> type_;
  std::vector<std::int8_t> near_;
  static constexpr std::int8_t kFar = -128;
  std::vector<std::uint64_t> far_bits_;
  std::vector<std::uint32_t> far_rank_;  // per 64 nodes: how many before them are far
  std::vector<Node> far_src_;
  std::deque<std::pair<Node, Node>> far_made_;  // while the graph is made: (node, far source)
  // The other edges in, by node (in the order added): their ends, sources and types.
  std::vector<Node> extra_dst_, extra_src_;
  std::vector<std::uint8_t> extra_type_;
  struct Apart {
    Node dst, src;
    std::uint8_t type;
  };
  // While the graph is made: the other edges in the order added (a deque: grown a block at a
  // time, never copied whole at the making's peak).
  std::deque<Apart> apart_;
  std::size_t edges_ = 0;
  std::size_t nodes_ = 0;
  std::vector<Node> order_;  // with keep_order(): the order to replay in
  bool ok_ = false;
  std::string problem_;
};

inline double ReplayTimes::operator[](std::uint32_t node) const {
  const std::size_t b = node >> kBits;
  return b < live_.size() && live_[b] ? blocks_[b][node & kMask] : g_->measured(node);
}

inline std::size_t ReplayTimes::size() const { return g_->node_slots(); }

inline void ReplayTimes::set(std::uint32_t node, double t) {
  const std::size_t b = node >> kBits;
  if (b < live_.size() && live_[b]) {
    blocks_[b][node & kMask] = t;
    return;
  }
  const double m = g_->measured(node);
  if (std::memcmp(&m, &t, sizeof t) == 0) return;
  fill(b);
  blocks_[b][node & kMask] = t;
}

template <class F>
void ReplayTimes::for_each_kept(F&& f) const {
  const std::size_t slots = size();
  for (std::size_t b = 0; b < live_.size(); ++b) {
    if (!live_[b]) continue;
    const std::size_t first = b << kBits;
    for (std::size_t i = 0; i <= kMask && first + i < slots; ++i) {
      f(static_cast<std::uint32_t>(first + i), blocks_[b][i]);
    }
  }
}

}  // namespace vxperf::explain
