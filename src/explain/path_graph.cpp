#include "explain/path_graph.h"

#include <algorithm>

namespace vxperf::explain {

std::uint32_t PathGraph::dense(Node n) {
  if (n >= place_.size()) place_.resize(static_cast<std::size_t>(n) + 1, -1);
  if (place_[n] < 0) {
    place_[n] = static_cast<std::int32_t>(nodes_.size());
    nodes_.push_back(n);
  }
  return static_cast<std::uint32_t>(place_[n]);
}

PathGraph::EdgeId PathGraph::add_edge(Node src, Node dst, std::uint8_t type, double weight) {
  dense(src);
  dense(dst);
  const std::uint64_t key = (std::uint64_t{src} << 32) | dst;
  auto [it, inserted] = by_ends_.emplace(key, static_cast<EdgeId>(edges_.size()));
  if (inserted) edges_.push_back({src, dst, type, weight, weight});
  Edge& e = edges_[it->second];
  e.type = type;
  e.weight = weight;
  e.path_weight = weight;
  return it->second;
}

std::optional<PathGraph::EdgeId> PathGraph::find(Node src, Node dst) const {
  auto it = by_ends_.find((std::uint64_t{src} << 32) | dst);
  if (it == by_ends_.end()) return std::nullopt;
  return it->second;
}

void PathGraph::adjacency(bool out, std::vector<std::uint32_t>& offsets,
                          std::vector<EdgeId>& list) const {
  offsets.assign(nodes_.size() + 1, 0);
  for (const Edge& e : edges_) ++offsets[static_cast<std::size_t>(place_[out ? e.src : e.dst]) + 1];
  for (std::size_t i = 1; i < offsets.size(); ++i) offsets[i] += offsets[i - 1];
  list.resize(edges_.size());
  std::vector<std::uint32_t> at(offsets.begin(), offsets.end() - 1);
  for (EdgeId id = 0; id < edges_.size(); ++id) {  // in edge order: the insertion order
    const Edge& e = edges_[id];
    list[at[static_cast<std::size_t>(place_[out ? e.src : e.dst])]++] = id;
  }
}

std::optional<std::vector<PathGraph::Node>> PathGraph::topological_order() const {
  std::vector<std::uint32_t> out_at, in_at;
  std::vector<EdgeId> out, in;
  adjacency(true, out_at, out);
  adjacency(false, in_at, in);
  std::vector<std::uint32_t> waiting(nodes_.size());
  std::vector<std::uint32_t> order;  // places
  order.reserve(nodes_.size());
  for (std::uint32_t p = 0; p < nodes_.size(); ++p) {
    waiting[p] = in_at[p + 1] - in_at[p];
    if (waiting[p] == 0) order.push_back(p);
  }
  // Each generation is appended whole before the next is walked: walking `order` from the front
  // visits the generations in turn, each in the order its nodes were reached.
  for (std::size_t i = 0; i < order.size(); ++i) {
    const std::uint32_t p = order[i];
    for (std::uint32_t k = out_at[p]; k < out_at[p + 1]; ++k) {
      const std::uint32_t child = static_cast<std::uint32_t>(place_[edges_[out[k]].dst]);
      if (--waiting[child] == 0) order.push_back(child);
    }
  }
  if (order.size() != nodes_.size()) return std::nullopt;
  std::vector<Node> result;
  result.reserve(order.size());
  for (std::uint32_t p : order) result.push_back(nodes_[p]);
  return result;
}

std::optional<PathGraph::Path> PathGraph::longest_path() const {
  const std::optional<std::vector<Node>> order = topological_order();
  if (!order) return std::nullopt;
  Path path;
  if (order->empty()) return path;
  std::vector<std::uint32_t> in_at;
  std::vector<EdgeId> in;
  adjacency(false, in_at, in);
  constexpr std::uint32_t kRestart = UINT32_MAX;
  std::vector<double> dist(nodes_.size(), 0);
  std::vector<std::uint32_t> via(nodes_.size(), kRestart);  // the edge in, or a restart
  double best = 0;
  std::uint32_t end = static_cast<std::uint32_t>(place_[order->front()]);
  bool first = true;
  for (Node n : *order) {
    const auto p = static_cast<std::uint32_t>(place_[n]);
    bool any = false;
    double top = 0;
    std::uint32_t top_edge = kRestart;
    for (std::uint32_t k = in_at[p]; k < in_at[p + 1]; ++k) {
      const Edge& e = edges_[in[k]];
      const double d = dist[static_cast<std::size_t>(place_[e.src])] + e.path_weight;
      if (!any || d > top) {  // the first of equal ones stays
        top = d;
        top_edge = in[k];
        any = true;
      }
    }
    if (any && top >= 0) {
      dist[p] = top;
      via[p] = top_edge;
    }
    if (first || dist[p] > best) {  // the first node with the largest distance ends the path
      best = dist[p];
      end = p;
      first = false;
    }
  }
  for (std::uint32_t p = end;;) {
    path.nodes.push_back(nodes_[p]);
    if (via[p] == kRestart) break;
    path.edges.push_back(via[p]);
    p = static_cast<std::uint32_t>(place_[edges_[via[p]].src]);
  }
  std::reverse(path.nodes.begin(), path.nodes.end());
  std::reverse(path.edges.begin(), path.edges.end());
  for (EdgeId e : path.edges) path.length += edges_[e].path_weight;
  return path;
}

}  // namespace vxperf::explain
