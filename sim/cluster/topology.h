// Topology: the network a P/D cluster moves KV over, as a Boost.Graph undirected graph of
// nodes (engine instances, NICs, switches) and full-duplex links (bandwidth per direction,
// latency). The Topology owns the graph; callers refer to nodes by index or name and to a
// direction of a link by a "resource" index (2 × link + direction), which is what the flow
// network (flow_network.h) shares fairly among concurrent transfers.
//
// Paths are shortest paths (Dijkstra) under a documented metric:
//   kLatency (default): least total latency; ties → fewest hops; remaining ties → Boost's
//                       deterministic order (insertion order of nodes and links);
//   kHops:              fewest hops; ties → least latency.
// Links never change after Build, so paths are cached per (from, to).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace kvsim {

enum class TopoNodeKind : uint8_t { kInstance, kNic, kSwitch };
enum class PathMetric : uint8_t { kLatency, kHops };

struct TopoNode {
  std::string name;
  TopoNodeKind kind = TopoNodeKind::kSwitch;
};

struct TopoLink {
  int a = -1;
  int b = -1;
  double bytes_per_ns = 0;  // per direction; 1 byte/ns = 1 GB/s
  int64_t latency_ns = 0;
};

struct TopoPath {
  std::vector<int> nodes;      // from ... to
  std::vector<int> resources;  // directed links, in order
  int64_t latency_ns = 0;
  double bottleneck_bytes_per_ns = 0;  // the slowest link; +inf for an empty path
};

class Topology {
 public:
  // Adds a node; an existing name is an error (code "duplicate_node").
  Result<int> AddNode(const std::string& name, TopoNodeKind kind);
  // Adds a full-duplex link between existing nodes; bandwidth must be > 0, latency >= 0.
  Status AddLink(const std::string& a, const std::string& b, double bytes_per_ns,
                 int64_t latency_ns);

  int FindNode(const std::string& name) const;  // -1 when absent
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  int num_links() const { return static_cast<int>(links_.size()); }
  int num_resources() const { return 2 * num_links(); }
  const TopoNode& node(int i) const { return nodes_[static_cast<size_t>(i)]; }
  const TopoLink& link(int i) const { return links_[static_cast<size_t>(i)]; }
  // Capacity of every resource (2 per link), bytes per ns.
  std::vector<double> ResourceCapacities() const;
  // "a->b" for a resource.
  std::string ResourceName(int resource) const;

  void set_metric(PathMetric m) {
    metric_ = m;
    cache_.clear();
  }
  PathMetric metric() const { return metric_; }

  // Shortest path from `from` to `to`; an error when they are not connected.
  Result<TopoPath> Path(int from, int to) const;

 private:
  std::vector<TopoNode> nodes_;
  std::vector<TopoLink> links_;
  std::map<std::string, int> by_name_;
  PathMetric metric_ = PathMetric::kLatency;
  mutable std::map<std::pair<int, int>, TopoPath> cache_;
};

}  // namespace kvsim
