#include "sim/scenario/cluster_sections.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "sim/cluster/cluster_config.h"
#include "sim/scenario/scenario_loader.h"
#include "sim/scenario_config.h"

namespace kvsim {
namespace {

// Sections a pool may override; each is merged over the top-level one.
const std::vector<std::string> kPoolSections = {"model", "parallel", "cache", "scheduler",
                                                "hardware"};

void ParsePool(ConfigReader& cluster, const std::string& role, const ConfigNode* tree,
               const ConfigNode* cluster_node, const std::string& source, PoolConfig& pool) {
  ConfigReader p = cluster.Map(role, role == "prefill"
                                         ? "the prefill pool: instances that run prompts"
                                         : "the decode pool: instances that generate tokens");
  pool.role = role;
  pool.count = p.Int("count", 1, "instances in the pool", 1, 4096);
  for (const auto& key : kPoolSections) {
    p.Raw(key, "map",
          "this pool's " + key + " keys, merged over the top-level `" + key + "` section");
  }
  p.Finish();
  if (p.describing() || !tree || !cluster_node) return;
  if (!p.errors()->empty()) return;

  // The pool's scenario: the base tree without `cluster`, with the pool's sections over it.
  ConfigNode t = *tree;
  t.Erase("cluster");
  t.Erase("sweep");
  // Unknown top-level keys are the root's to report; keep them out of the pool's parse so
  // that each mistake is reported once.
  static const std::set<std::string> kTopLevel = [] {
    std::set<std::string> names;
    for (const KeyDoc& d : DescribeScenarioKeys()) {
      names.insert(d.path.substr(0, d.path.find_first_of(".[")));
    }
    return names;
  }();
  for (size_t i = t.map.size(); i-- > 0;) {
    if (!kTopLevel.count(t.map[i].first)) t.Erase(t.map[i].first);
  }
  const ConfigNode* pn = cluster_node->Find(role);
  if (pn && pn->is_map()) {
    for (size_t i = 0; i < pn->map.size(); ++i) {
      const auto& [key, node] = pn->map[i];
      if (key == "count") continue;
      ConfigNode* base = t.Find(key);
      const bool replace_model =
          key == "model" && node.is_map() && (node.Find("preset") || node.Find("layers"));
      if (base && base->is_map() && node.is_map() && !replace_model) {
        base->MergeFrom(node);
      } else {
        t.Set(key, node, pn->key_pos[i]);
      }
    }
  }
  auto sc = ParseScenario(t, source);
  if (!sc.ok()) {
    p.errors()->list.push_back(
        {sc.status().code(), sc.status().message() + "\n  (while building pool cluster." + role +
                                 " from the top-level sections and its overrides)"});
    return;
  }
  sc.value().name += "/" + role;
  pool.scenario = std::make_shared<const Scenario>(std::move(sc.value()));
}

void ParseTopology(ConfigReader& cluster, ClusterConfig& cc) {
  ConfigReader t = cluster.Map("topology", "the network between instances (Boost.Graph)");
  TopologyConfig& tc = cc.topology;
  tc.kind = t.Choice("kind", "star", {"star", "explicit"},
                     "star: one NIC link per instance to one switch; explicit: the links below");
  tc.metric = t.Choice("metric", "latency", {"latency", "hops"},
                       "shortest-path metric for a transfer's route (ties: fewer hops / less "
                       "latency, then declaration order)");
  tc.nic_gbytes_per_s = t.Double("nic_gbytes_per_s", 50,
                                 "star: NIC bandwidth per direction, GB/s (400 Gb/s = 50)", 1e-6);
  tc.nic_latency_us = t.Double("nic_latency_us", 2, "star: NIC-to-switch latency, µs", 0);
  tc.switches = t.StringList("switches", "explicit: switch node names");
  tc.nics = t.StringList("nics", "explicit: NIC node names");
  std::vector<ConfigReader> links = t.MapList(
      "links", "explicit: full-duplex links {a, b, gbytes_per_s, latency_us}; a and b name "
               "instances (prefill0.., decode0..), switches or nics");
  auto parse_link = [](ConfigReader& l) {
    LinkConfig lc;
    lc.a = l.String("a", "", "one end (instance, switch or NIC name)");
    lc.b = l.String("b", "", "the other end");
    lc.gbytes_per_s = l.Double("gbytes_per_s", 0, "bandwidth per direction, GB/s", 0);
    lc.latency_us = l.Double("latency_us", 0, "one-way latency, µs", 0);
    l.Finish();
    return lc;
  };
  if (t.describing()) {
    ConfigReader doc(nullptr, t.path() + ".links[]", t.errors(), t.docs());
    parse_link(doc);
  }
  std::vector<std::string> names = tc.switches;
  names.insert(names.end(), tc.nics.begin(), tc.nics.end());
  for (int64_t i = 0; i < cc.prefill.count; ++i) names.push_back("prefill" + std::to_string(i));
  for (int64_t i = 0; i < cc.decode.count; ++i) names.push_back("decode" + std::to_string(i));
  {
    std::vector<std::string> sorted = names;
    std::sort(sorted.begin(), sorted.end());
    auto dup = std::adjacent_find(sorted.begin(), sorted.end());
    if (dup != sorted.end()) t.Error("", "bad_value", "node name \"" + *dup + "\" is used twice");
  }
  for (auto& l : links) {
    LinkConfig lc = parse_link(l);
    for (const auto& [key, name] : {std::pair{"a", lc.a}, std::pair{"b", lc.b}}) {
      if (std::find(names.begin(), names.end(), name) != names.end()) continue;
      const std::string near = ClosestMatch(name, names);
      l.Error(key, "unknown_node",
              "no node named \"" + name + "\"" +
                  (near.empty() ? "" : " (did you mean " + near + "?)") +
                  "; instances are prefill0.., decode0.., other nodes come from switches/nics");
    }
    if (lc.gbytes_per_s <= 0) l.Error("gbytes_per_s", "bad_value", "a link needs bandwidth > 0");
    tc.links.push_back(lc);
  }
  if (!t.describing() && tc.kind == "explicit" && tc.links.empty()) {
    t.Error("links", "missing_key", "an explicit topology needs links");
  }
  if (!t.describing() && tc.kind == "star" && !tc.links.empty()) {
    t.Error("links", "bad_value", "links are for kind: explicit (star builds its own)");
  }
  t.Finish();
}

void ParseRouter(ConfigReader& cluster, ClusterConfig& cc) {
  ConfigReader r = cluster.Map("router", "which instance of each pool serves a request");
  RouterConfig& rc = cc.router;
  rc.prefill = r.Choice("prefill", "prefix_aware", RouterPolicyNames(),
                        "prefill pool policy; prefix_aware = block-hash affinity");
  rc.decode = r.Choice("decode", "least_loaded", RouterPolicyNames(), "decode pool policy");
  rc.prefix_capacity_blocks = r.Int("prefix_capacity_blocks", 1 << 20,
                                    "prefix_aware: block hashes remembered per instance", 1);
  rc.max_imbalance_tokens =
      r.Int("max_imbalance_tokens", 32768,
            "prefix_aware: load slack (queued tokens) before affinity yields to balance", 0);
  rc.hash_block_tokens = r.Int("hash_block_tokens", 0,
                               "tokens per routing hash block; 0 = the prefill pool's block size",
                               0, 1 << 24);
  r.Finish();
}

// Reads the data-movement line (t = move_fixed_s + bytes / move_bytes_per_s, bytes read and
// written) of a `kvsim gpu-validate --calibrate` YAML into the re-layout time model.
void ReadRelayoutCalibration(ConfigReader& x, const std::string& path, const std::string& source,
                             TransferConfig& tc) {
  namespace fs = std::filesystem;
  std::string file = path;
  if (!fs::exists(file) && fs::path(path).is_relative()) {
    file = (fs::path(source).parent_path() / path).lexically_normal().string();
  }
  auto tree = ParseYamlFile(file);
  if (!tree.ok()) {
    x.Error("relayout_calibration", "missing_file",
            "cannot read \"" + path + "\": " + tree.status().message());
    return;
  }
  const ConfigNode* hw = tree->Find("hardware");
  const ConfigNode* fixed = hw ? hw->Find("move_fixed_s") : nullptr;
  const ConfigNode* rate = hw ? hw->Find("move_bytes_per_s") : nullptr;
  char* e1 = nullptr;
  char* e2 = nullptr;
  const double f = fixed && fixed->is_scalar() ? std::strtod(fixed->scalar.c_str(), &e1) : -1;
  const double r = rate && rate->is_scalar() ? std::strtod(rate->scalar.c_str(), &e2) : -1;
  if (!(f >= 0) || !(r > 0) || !e1 || *e1 || !e2 || *e2) {
    x.Error("relayout_calibration", "bad_value",
            file + ": needs hardware.move_fixed_s >= 0 and hardware.move_bytes_per_s > 0 "
                   "(the output of kvsim gpu-validate --calibrate)");
    return;
  }
  tc.time.relayout_launch_ns = f * 1e9;
  tc.time.relayout_bytes_per_ns = r / 1e9;
  tc.relayout_source = file;
}

void ParseTransfer(ConfigReader& cluster, const std::string& source, ClusterConfig& cc) {
  ConfigReader x = cluster.Map("transfer", "KV transfer model (core/kv_transfer.h, docs/pd.md)");
  TransferConfig& tc = cc.transfer;
  tc.options.enable_permute_local_kv = x.Bool(
      "enable_permute_local_kv", true, "vLLM's flag: allow NHD<->HND permutes of received KV");
  tc.options.save_side_postprocess =
      x.Bool("save_side_postprocess", false,
             "model PR #30448 (unmerged): split prefill blocks / permute to HND on save");
  tc.options.model_unsupported =
      x.Bool("model_unsupported", false,
             "cost combinations vLLM refuses (e.g. save-side post-process with prefix caching) "
             "instead of failing");
  tc.time.per_descriptor_ns =
      1000.0 * x.Double("per_descriptor_us", 2.0,
                        "posting cost per descriptor, µs (gpu-notes §4: 1-2 µs for RDMA)", 0);
  tc.time.overlap_posting =
      x.Choice("posting", "sum", {"sum", "overlap"},
               "sum: posting then wire (vLLM #55434); overlap: max(posting, wire)") == "overlap";
  const std::string calib = x.String(
      "relayout_calibration", "",
      "a `kvsim gpu-validate --calibrate` YAML: its data-movement line (move_fixed_s, "
      "move_bytes_per_s) sets the re-layout cost; the two keys below override it");
  if (!calib.empty() && !x.describing()) ReadRelayoutCalibration(x, calib, source, tc);
  const bool has_rate = x.Has("relayout_gbytes_per_s");
  const bool has_launch = x.Has("relayout_launch_us");
  const double rate = x.Double("relayout_gbytes_per_s", 2560,
                               "HBM traffic (read + write) rate of the re-layout kernels, GB/s "
                               "(H100, measured: docs/pd.md)",
                               1e-6);
  const double launch = x.Double("relayout_launch_us", 4.0,
                                 "per re-layout kernel launch (one per layer), µs (H100, measured)",
                                 0);
  if (calib.empty() || has_rate) tc.time.relayout_bytes_per_ns = rate;
  if (calib.empty() || has_launch) tc.time.relayout_launch_ns = 1000.0 * launch;
  tc.flow_rate_cap_gbytes_per_s = x.Double(
      "flow_rate_cap_gbytes_per_s", 0, "cap on one transfer's rate, GB/s (0 = none)", 0);
  x.Finish();
}

}  // namespace

bool IsClusterTree(const ConfigNode& tree) {
  const ConfigNode* c = tree.Find("cluster");
  return c != nullptr && c->is_map();
}

void ParseClusterSection(ConfigReader& root, const ConfigNode* tree, Scenario& sc) {
  ConfigReader c = root.Map("cluster",
                            "prefill/decode disaggregation: pools, topology, router, transfer");
  ClusterConfig& cc = sc.cluster;
  cc.enabled = c.present();
  if (!cc.enabled && !c.describing()) return;
  const ConfigNode* cluster_node = tree ? tree->Find("cluster") : nullptr;
  ParsePool(c, "prefill", tree, cluster_node, sc.source, cc.prefill);
  ParsePool(c, "decode", tree, cluster_node, sc.source, cc.decode);
  ParseTopology(c, cc);
  ParseRouter(c, cc);
  ParseTransfer(c, sc.source, cc);
  c.Finish();
}

}  // namespace kvsim
