// The building blocks of a critical path, apart from any one way of making the graph: a directed
// graph of time points kept the way networkx's DiGraph keeps one (the orders its algorithms walk
// in), and its longest path found as networkx 3.6.1's dag_longest_path finds it, ties included.
// HTA's critical path (hta_critical_path.h) is one graph made of them; a graph of vxperf's own
// can be another.
//
// Orders, as networkx has them:
// - nodes: in order of first appearance as an edge's end, the source before the target;
// - a node's successors and predecessors: in the order their edge was first added;
// - an edge added again (same source and target) takes the new type and weights and keeps its
//   place in both orders, as DiGraph.add_edge updates the edge's attributes in place.
// Since an edge keeps its number when it is added again, both orders are the edges' numbers.
//
// The longest path: nodes in topological order by generations (Kahn's algorithm: generation 0
// the nodes without predecessors in node order, each next one the successors whose last
// predecessor was just taken, in the order they are reached); each node's distance the largest
// predecessor's distance plus the edge's weight, the first such predecessor at a tie, restarting
// at the node (distance 0) when that is negative or there is none; the path ends at the first
// node of the order with the largest distance and goes back by the links.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace vxperf::explain {

class PathGraph {
 public:
  using Node = std::uint32_t;  // the caller's numbers (dense is best: a table is kept by them)
  using EdgeId = std::uint32_t;

  struct Edge {
    Node src = 0, dst = 0;
    std::uint8_t type = 0;   // the caller's
    double weight = 0;       // as added (the caller's own measure)
    double path_weight = 0;  // what the longest path adds: `weight` unless the caller changes it
  };

  // Adds src -> dst, or gives the edge there the new type and weight (both weights). Returns its
  // number (edges are numbered in order of first addition).
  EdgeId add_edge(Node src, Node dst, std::uint8_t type, double weight);
  std::optional<EdgeId> find(Node src, Node dst) const;

  std::size_t node_count() const { return nodes_.size(); }
  std::size_t edge_count() const { return edges_.size(); }
  const std::vector<Node>& nodes() const { return nodes_; }  // in insertion order
  const Edge& edge(EdgeId e) const { return edges_[e]; }
  Edge& edge(EdgeId e) { return edges_[e]; }
  const std::vector<Edge>& edges() const { return edges_; }

  // The nodes in networkx's topological order (by generations), or nothing when there is a cycle.
  std::optional<std::vector<Node>> topological_order() const;

  struct Path {
    std::vector<Node> nodes;
    std::vector<EdgeId> edges;  // between consecutive nodes
    double length = 0;          // the sum of their path weights, as the distances add them
  };
  // networkx's dag_longest_path over the path weights; nothing when there is a cycle. An empty
  // graph gives an empty path; one whose every edge weighs 0 a path of one node (as networkx).
  std::optional<Path> longest_path() const;

 private:
  std::uint32_t dense(Node n);  // its place in insertion order, given one on first sight
  // Per node (by place), its edges out or in, in edge order: offsets and edge numbers.
  void adjacency(bool out, std::vector<std::uint32_t>& offsets, std::vector<EdgeId>& list) const;

  std::vector<Node> nodes_;
  std::vector<std::int32_t> place_;  // by Node: its place in nodes_, or -1
  std::vector<Edge> edges_;
  std::unordered_map<std::uint64_t, EdgeId> by_ends_;
};

}  // namespace vxperf::explain
