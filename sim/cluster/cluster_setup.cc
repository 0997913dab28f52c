#include "sim/cluster/cluster_setup.h"

#include <fmt/format.h>

#include "sim/report/plan_report.h"

namespace kvsim {
namespace {

std::string InstanceName(const std::string& role, int64_t i) { return role + std::to_string(i); }

std::string PoolLine(const PoolConfig& pool, const KvCachePlan& plan) {
  const Scenario& s = *pool.scenario;
  return fmt::format(
      "  {:<8} x{:<3} TP {}  block {} (kernel {})  layout {}  pack {}  prefix caching {}  "
      "{} blocks of {}\n",
      pool.role, pool.count, plan.config.tp, plan.attn_block_size, plan.kernel_block_size,
      KvOrderName(plan.config.layout), plan.config.attn_pack_size,
      plan.config.enable_prefix_caching ? "on" : "off", WithCommas(plan.num_blocks),
      HumanBytes(static_cast<double>(plan.block_bytes)), s.name);
}

}  // namespace

Result<Topology> BuildTopology(const ClusterConfig& cc) {
  Topology t;
  const TopologyConfig& tc = cc.topology;
  t.set_metric(tc.metric == "hops" ? PathMetric::kHops : PathMetric::kLatency);
  std::vector<std::string> instances;
  for (int64_t i = 0; i < cc.prefill.count; ++i) instances.push_back(InstanceName("prefill", i));
  for (int64_t i = 0; i < cc.decode.count; ++i) instances.push_back(InstanceName("decode", i));
  for (const auto& n : instances) {
    if (auto r = t.AddNode(n, TopoNodeKind::kInstance); !r.ok()) return r.status();
  }
  auto ns = [](double us) { return static_cast<int64_t>(us * 1000.0 + 0.5); };
  if (tc.kind == "star") {
    if (auto r = t.AddNode("switch", TopoNodeKind::kSwitch); !r.ok()) return r.status();
    for (const auto& n : instances) {
      const std::string nic = "nic_" + n;
      if (auto r = t.AddNode(nic, TopoNodeKind::kNic); !r.ok()) return r.status();
      if (Status s = t.AddLink(n, nic, tc.nic_gbytes_per_s, 0); !s.ok()) return s;
      if (Status s = t.AddLink(nic, "switch", tc.nic_gbytes_per_s, ns(tc.nic_latency_us));
          !s.ok()) {
        return s;
      }
    }
    return t;
  }
  for (const auto& n : tc.switches) {
    if (auto r = t.AddNode(n, TopoNodeKind::kSwitch); !r.ok()) return r.status();
  }
  for (const auto& n : tc.nics) {
    if (auto r = t.AddNode(n, TopoNodeKind::kNic); !r.ok()) return r.status();
  }
  for (const auto& l : tc.links) {
    if (Status s = t.AddLink(l.a, l.b, l.gbytes_per_s, ns(l.latency_us)); !s.ok()) return s;
  }
  return t;
}

Result<ClusterSetup> BuildClusterSetup(const Scenario& sc) {
  if (!sc.cluster.enabled || !sc.cluster.prefill.scenario || !sc.cluster.decode.scenario) {
    return Status::Error("internal", sc.source + ": not a P/D scenario (no cluster section)");
  }
  // What the scenario says is read first (the pools' plans, the model check, the topology
  // and its routes); the KV transfer plan is computed from them last.
  const ClusterConfig& cc = sc.cluster;
  ClusterSetup out;
  auto in_pool = [](const std::string& role, const Status& s) {
    return Status::Error(s.code(), "cluster." + role + ": " + s.message());
  };
  auto pp = cc.prefill.scenario->Plan();
  if (!pp.ok()) return in_pool("prefill", pp.status());
  auto dp = cc.decode.scenario->Plan();
  if (!dp.ok()) return in_pool("decode", dp.status());
  out.prefill_plan = std::move(pp.value());
  out.decode_plan = std::move(dp.value());
  const Scenario& ps = *cc.prefill.scenario;
  const Scenario& ds = *cc.decode.scenario;
  if (!(ps.model == ds.model) || ps.draft.has_value() != ds.draft.has_value()) {
    return Status::Error("pd_mismatch",
                         "cluster: the prefill and decode pools serve different models (" +
                             ps.model.name + " vs " + ds.model.name +
                             "); a pool may change parallel/cache/scheduler, not the model");
  }
  auto topo = BuildTopology(cc);
  if (!topo.ok()) {
    return Status::Error(topo.status().code(), "cluster.topology: " + topo.status().message());
  }
  out.topology = std::move(topo.value());
  for (int64_t i = 0; i < cc.prefill.count; ++i) {
    out.prefill_nodes.push_back(out.topology.FindNode(InstanceName("prefill", i)));
  }
  for (int64_t i = 0; i < cc.decode.count; ++i) {
    out.decode_nodes.push_back(out.topology.FindNode(InstanceName("decode", i)));
  }
  for (int p : out.prefill_nodes) {
    out.paths.emplace_back();
    for (int d : out.decode_nodes) {
      auto path = out.topology.Path(p, d);
      if (!path.ok()) {
        return Status::Error(path.status().code(),
                             "cluster.topology: " + path.status().message());
      }
      out.paths.back().push_back(path.value());
    }
  }
  auto tr = PlanKvTransfer(ps.model, ps.draft ? &*ps.draft : nullptr, out.prefill_plan,
                           out.decode_plan, cc.transfer.options);
  if (!tr.ok()) {
    return Status::Error(tr.status().code(), "cluster.transfer: " + tr.status().message());
  }
  out.transfer = std::move(tr.value());
  return out;
}

std::string FormatClusterSetup(const Scenario& sc, const ClusterSetup& s) {
  const ClusterConfig& cc = sc.cluster;
  std::string out = fmt::format("P/D cluster: {} ({})\n", sc.name, sc.model.name);
  out += PoolLine(cc.prefill, s.prefill_plan);
  out += PoolLine(cc.decode, s.decode_plan);
  out += fmt::format("router: prefill {}, decode {}\n", cc.router.prefill, cc.router.decode);
  out += "KV transfer: " + s.transfer.Describe();
  // Paths: each distinct route once.
  out += fmt::format("topology: {} nodes, {} links, metric {}\n", s.topology.num_nodes(),
                     s.topology.num_links(), cc.topology.metric);
  // The first and last pairs' routes (the rest repeat them in the shipped topologies).
  std::vector<std::pair<size_t, size_t>> shown = {{0, 0}};
  if (s.paths.size() > 1 || s.paths[0].size() > 1) {
    shown.push_back({s.paths.size() - 1, s.paths[0].size() - 1});
  }
  for (auto [p, d] : shown) {
    const TopoPath& path = s.paths[p][d];
    std::string route;
    for (int n : path.nodes) route += (route.empty() ? "" : " > ") + s.topology.node(n).name;
    out += fmt::format("  {}  latency {:.1f} us, bottleneck {:.1f} GB/s\n", route,
                       static_cast<double>(path.latency_ns) / 1000.0,
                       path.bottleneck_bytes_per_ns);
  }
  const TopoPath& path = s.path(0, 0);
  const KvTransferTimeModel& tm = cc.transfer.time;
  out += fmt::format(
      "isolated transfer prefill0 > decode0 (α {:.2f} us/descriptor, posting {}, re-layout "
      "{:.0f} GB/s + {:.1f} us/launch from {}):\n",
      tm.per_descriptor_ns / 1000.0, tm.overlap_posting ? "overlapped" : "then wire",
      tm.relayout_bytes_per_ns, tm.relayout_launch_ns / 1000.0, cc.transfer.relayout_source);
  out += fmt::format("  {:>8} {:>10} {:>10} {:>12} {:>12} {:>12} {:>10} {:>10} {:>10}\n",
                     "tokens", "desc", "desc/rank", "wire", "save r/l", "recv r/l", "save us",
                     "xfer us", "recv us");
  for (int64_t tokens : {1, 512, 4096, 32768}) {
    const KvTransferCost c = s.transfer.ForRequest(0, tokens);
    out += fmt::format(
        "  {:>8} {:>10} {:>10} {:>12} {:>12} {:>12} {:>10.1f} {:>10.1f} {:>10.1f}\n", tokens,
        WithCommas(c.descriptors), WithCommas(c.max_rank_descriptors),
        HumanBytes(static_cast<double>(c.bytes)),
        HumanBytes(static_cast<double>(c.save_relayout_bytes)),
        HumanBytes(static_cast<double>(c.receive_relayout_bytes)),
        static_cast<double>(tm.SaveRelayoutNs(c)) / 1000.0,
        static_cast<double>(tm.TransferNs(c, path.bottleneck_bytes_per_ns, path.latency_ns)) /
            1000.0,
        static_cast<double>(tm.ReceiveRelayoutNs(c)) / 1000.0);
  }
  return out;
}

}  // namespace kvsim
