#include "sim/cluster/topology.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <boost/property_map/property_map.hpp>
#include <limits>

namespace kvsim {
namespace {

// Lexicographic weights packed into one integer: the primary term is scaled so that any
// realistic count of the secondary term (< 2^20 hops, < 2^40 ns of latency) cannot reach it.
constexpr int64_t kHopUnit = 1;
constexpr int64_t kLatencyScale = int64_t{1} << 20;  // latency-first: latency × 2^20 + hops
constexpr int64_t kHopScale = int64_t{1} << 40;       // hops-first: hops × 2^40 + latency

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS,
                                    boost::no_property,
                                    boost::property<boost::edge_weight_t, int64_t,
                                                    boost::property<boost::edge_index_t, int>>>;

}  // namespace

Result<int> Topology::AddNode(const std::string& name, TopoNodeKind kind) {
  if (name.empty()) return Status::Error("bad_value", "a topology node needs a name");
  if (by_name_.count(name)) {
    return Status::Error("duplicate_node", "topology node \"" + name + "\" is defined twice");
  }
  const int id = static_cast<int>(nodes_.size());
  nodes_.push_back({name, kind});
  by_name_[name] = id;
  cache_.clear();
  return id;
}

Status Topology::AddLink(const std::string& a, const std::string& b, double bytes_per_ns,
                         int64_t latency_ns) {
  const int ia = FindNode(a);
  const int ib = FindNode(b);
  if (ia < 0 || ib < 0) {
    return Status::Error("unknown_node", "link " + a + " - " + b + ": no node named \"" +
                                             (ia < 0 ? a : b) + "\"");
  }
  if (ia == ib) return Status::Error("bad_value", "link " + a + " - " + b + " is a self-loop");
  if (!(bytes_per_ns > 0)) {
    return Status::Error("bad_value", "link " + a + " - " + b + ": bandwidth must be > 0");
  }
  if (latency_ns < 0) {
    return Status::Error("bad_value", "link " + a + " - " + b + ": latency must be >= 0");
  }
  links_.push_back({ia, ib, bytes_per_ns, latency_ns});
  cache_.clear();
  return Status::Ok();
}

int Topology::FindNode(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

std::vector<double> Topology::ResourceCapacities() const {
  std::vector<double> out;
  out.reserve(links_.size() * 2);
  for (const auto& l : links_) {
    out.push_back(l.bytes_per_ns);
    out.push_back(l.bytes_per_ns);
  }
  return out;
}

std::string Topology::ResourceName(int resource) const {
  const TopoLink& l = links_[static_cast<size_t>(resource / 2)];
  const bool forward = resource % 2 == 0;
  return node(forward ? l.a : l.b).name + "->" + node(forward ? l.b : l.a).name;
}

Result<TopoPath> Topology::Path(int from, int to) const {
  KVSIM_CHECK(from >= 0 && from < num_nodes() && to >= 0 && to < num_nodes());
  if (auto it = cache_.find({from, to}); it != cache_.end()) return it->second;
  TopoPath path;
  path.nodes.push_back(from);
  path.bottleneck_bytes_per_ns = std::numeric_limits<double>::infinity();
  if (from != to) {
    Graph g(nodes_.size());
    for (size_t i = 0; i < links_.size(); ++i) {
      const TopoLink& l = links_[i];
      const int64_t w = metric_ == PathMetric::kLatency
                            ? l.latency_ns * kLatencyScale + kHopUnit
                            : kHopScale + l.latency_ns;
      boost::add_edge(static_cast<size_t>(l.a), static_cast<size_t>(l.b),
                      Graph::edge_property_type(w, static_cast<int>(i)), g);
    }
    std::vector<size_t> pred(nodes_.size());
    std::vector<int64_t> dist(nodes_.size());
    boost::dijkstra_shortest_paths(
        g, static_cast<size_t>(from),
        boost::predecessor_map(boost::make_iterator_property_map(
                                   pred.begin(), boost::get(boost::vertex_index, g)))
            .distance_map(boost::make_iterator_property_map(dist.begin(),
                                                            boost::get(boost::vertex_index, g)))
            .distance_inf(std::numeric_limits<int64_t>::max()));
    if (pred[static_cast<size_t>(to)] == static_cast<size_t>(to)) {
      return Status::Error("no_path", "no network path from " + node(from).name + " to " +
                                          node(to).name);
    }
    // Walk back, choosing for each hop the link Dijkstra relaxed (the lightest parallel one).
    std::vector<int> rev_nodes{to};
    std::vector<int> rev_res;
    auto index = boost::get(boost::edge_index, g);
    auto weight = boost::get(boost::edge_weight, g);
    for (size_t v = static_cast<size_t>(to); v != static_cast<size_t>(from); v = pred[v]) {
      const size_t u = pred[v];
      int best = -1;
      int64_t best_w = std::numeric_limits<int64_t>::max();
      auto [ei, ee] = boost::out_edges(u, g);
      for (; ei != ee; ++ei) {
        if (boost::target(*ei, g) != v) continue;
        if (weight[*ei] < best_w) {
          best_w = weight[*ei];
          best = index[*ei];
        }
      }
      KVSIM_CHECK(best >= 0);
      const TopoLink& l = links_[static_cast<size_t>(best)];
      rev_res.push_back(2 * best + (static_cast<size_t>(l.a) == u ? 0 : 1));
      rev_nodes.push_back(static_cast<int>(u));
    }
    path.nodes.assign(rev_nodes.rbegin(), rev_nodes.rend());
    path.resources.assign(rev_res.rbegin(), rev_res.rend());
    for (int r : path.resources) {
      const TopoLink& l = links_[static_cast<size_t>(r / 2)];
      path.latency_ns += l.latency_ns;
      path.bottleneck_bytes_per_ns = std::min(path.bottleneck_bytes_per_ns, l.bytes_per_ns);
    }
  }
  cache_[{from, to}] = path;
  return path;
}

}  // namespace kvsim
