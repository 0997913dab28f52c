#include "sim/scenario/sim_sections.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "sim/embedded_data.h"
#include "sim/scenario_config.h"

namespace kvsim {
namespace {

namespace fs = std::filesystem;

constexpr const char* kHardwareDir = "scenarios/hardware/";
constexpr const char* kBuiltIn = "<built-in>/";

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A relative path in `node`'s file is taken relative to that file's directory when it
// exists there, else relative to the working directory.
std::string ResolveRelative(const std::string& path, const SourcePos& pos) {
  if (path.empty() || fs::path(path).is_absolute()) return path;
  if (!pos.file.empty() && pos.file.rfind(kBuiltIn, 0) != 0 && pos.file.rfind("--", 0) != 0) {
    const fs::path candidate = fs::path(pos.file).parent_path() / path;
    std::error_code ec;
    if (fs::exists(candidate, ec)) return candidate.lexically_normal().string();
  }
  return path;
}

// `unit` names what the numbers count ("tokens", "turns") in `kvsim list`. Every value is
// bounded by kMaxSyntheticLength (a trace's bound), and the mean must lie in [min, max]: a
// mean outside it would clamp every draw to one end without a word.
LengthDist ParseLength(ConfigReader& parent, const std::string& key, const LengthDist& def,
                       const std::string& help, const std::string& unit = "tokens") {
  LengthDist d = def;
  ConfigReader r = parent.Map(key, help + ": {dist, mean, cv, min, max}");
  const double most = static_cast<double>(kMaxSyntheticLength);
  const size_t errors_before = r.errors()->list.size();
  d.dist = r.Choice("dist", def.dist, {"fixed", "uniform", "exponential", "lognormal", "normal"},
                    "distribution; uniform draws from [min, max]");
  d.mean = r.Double("mean", def.mean, "mean " + unit, 0, most);
  d.cv = r.Double("cv", def.cv, "coefficient of variation (lognormal, normal)", 0, 100);
  d.min = r.Int("min", def.min, "smallest value (draws below it are raised to it)", 1,
                kMaxSyntheticLength);
  d.max = r.Int("max", def.max, "largest value (draws above it are lowered to it)", 1,
                kMaxSyntheticLength);
  if (!r.describing() && r.errors()->list.size() == errors_before) {  // each value is valid
    if (d.min > d.max) {
      r.Error("min", "bad_value", "min is larger than max");
    } else if (d.dist != "uniform" && d.mean <= 0 && r.present()) {
      r.Error("mean", "bad_value", "a " + d.dist + " length needs mean > 0");
    } else if (d.dist != "uniform" && (d.mean < static_cast<double>(d.min) ||
                                       d.mean > static_cast<double>(d.max))) {
      const bool above = d.mean > static_cast<double>(d.max);
      r.Error("mean", "bad_value",
              fmt::format("{} {} is {} {} {}: every draw would be clamped to {}; give a mean "
                          "inside [min, max] = [{}, {}]",
                          r.Has("mean") ? "mean" : "the default mean", d.mean,
                          above ? "above" : "below", above ? "max" : "min",
                          above ? d.max : d.min, above ? d.max : d.min, d.min, d.max));
    }
  }
  r.Finish();
  return d;
}

void ParseHardwareKeys(ConfigReader& r, HardwareSpec& h) {
  h.name = r.String("name", h.name, "GPU name shown in reports");
  h.dense_tflops_bf16 =
      r.Double("dense_tflops_bf16", h.dense_tflops_bf16, "dense BF16 tensor TFLOP/s", 1e-3);
  h.dense_tflops_fp8 =
      r.Double("dense_tflops_fp8", h.dense_tflops_fp8, "dense FP8 tensor TFLOP/s", 1e-3);
  h.hbm_bandwidth_gbps =
      r.Double("hbm_bandwidth_gbps", h.hbm_bandwidth_gbps, "HBM bandwidth, GB/s (1e9 B)", 1e-3);
  h.hbm_capacity_bytes = r.Bytes("hbm_capacity_bytes", h.hbm_capacity_bytes,
                                 "GPU memory as the driver reports it (what "
                                 "cache.gpu_memory_utilization takes a share of)");
  h.non_torch_memory_bytes =
      r.Bytes("non_torch_memory_bytes", h.non_torch_memory_bytes,
              "memory outside torch that grows after vLLM starts (workspaces, NCCL buffers), "
              "less in the KV budget from cache.gpu_memory_utilization");
  h.interconnect_gbps = r.Double("interconnect_gbps", h.interconnect_gbps,
                                 "NVLink GB/s per direction (TP all-reduce)", 1e-3);
  h.num_sms = r.Int("num_sms", h.num_sms, "streaming multiprocessors (GEMM tile waves)", 1, 4096);
  h.mfu = r.Double("mfu", h.mfu, "fraction of peak FLOP/s in a full GEMM wave", 1e-4, 1);
  h.mbu = r.Double("mbu", h.mbu, "fraction of HBM bandwidth streaming dense weights", 1e-4, 1);
  h.moe_mbu = r.Double("moe_mbu", h.moe_mbu,
                       "fraction of HBM bandwidth in the grouped routed-expert GEMM", 1e-4, 1);
  h.attention_mfu = r.Double("attention_mfu", h.attention_mfu,
                             "achievable fraction of peak FLOP/s in attention", 1e-4, 1);
  h.attention_mbu = r.Double("attention_mbu", h.attention_mbu,
                             "achievable fraction of HBM bandwidth reading KV in attention",
                             1e-4, 1);
  h.attention_prefill_half_tokens =
      r.Double("attention_prefill_half_tokens", h.attention_prefill_half_tokens,
               "prefill chunk length at which attention runs at half attention_mfu", 0);
  h.attention_kv_head_penalty =
      r.Double("attention_kv_head_penalty", h.attention_kv_head_penalty,
               "decode attention: extra cost per KV head, shared by its query heads", 0);
  h.attention_call_us = r.Double("attention_call_us", h.attention_call_us,
                                 "fixed cost per attention layer per step, us", 0);
  h.step_overhead_us =
      r.Double("step_overhead_us", h.step_overhead_us, "CPU cost per engine step: scheduling, input prep, us", 0);
  h.step_token_ns =
      r.Double("step_token_ns", h.step_token_ns, "CPU cost per scheduled token per step, ns", 0);
  h.intake_us = r.Double("intake_us", h.intake_us,
                         "per request before the scheduler: HTTP handling, us", 0);
  h.intake_token_ns = r.Double("intake_token_ns", h.intake_token_ns,
                               "per prompt token before the scheduler: tokenization, ns", 0);
  h.output_token_us = r.Double("output_token_us", h.output_token_us,
                               "per token a step emits: detokenize and stream, us", 0);
  h.layer_overhead_us =
      r.Double("layer_overhead_us", h.layer_overhead_us, "fixed cost per layer per step, us", 0);
  h.seq_overhead_us = r.Double("seq_overhead_us", h.seq_overhead_us,
                               "CPU cost per scheduled sequence per step, us", 0);
  h.step_gpu_us = r.Double("step_gpu_us", h.step_gpu_us,
                           "GPU time per step outside the layers (input preparation, logits, "
                           "sampling kernels), us",
                           0, 100000);
  h.sampler_sort_us =
      r.Double("sampler_sort_us", h.sampler_sort_us,
               "GPU time per step when the model samples through top-k/top-p (sort and "
               "masking of the logits; model.compute.sampling_sorts), us",
               0, 100000);
  h.tp_link = r.Choice("tp_link", h.tp_link, {"nvlink", "pcie"},
                       "how TP ranks reach each other: nvlink (vLLM's custom all-reduce up to "
                       "custom_allreduce_max_bytes) or pcie (NCCL rings)");
  h.allreduce_latency_us = r.Double("allreduce_latency_us", h.allreduce_latency_us,
                                    "one pass of vLLM's custom all-reduce (and one EP "
                                    "all-to-all), us",
                                    0, 10000);
  h.nccl_latency_us =
      r.Double("nccl_latency_us", h.nccl_latency_us, "one small NCCL ring all-reduce, us", 0, 10000);
  h.custom_allreduce_max_bytes =
      r.Bytes("custom_allreduce_max_bytes", h.custom_allreduce_max_bytes,
              "largest all-reduce vLLM's custom kernel takes (larger ones go to NCCL)");
  h.mamba_flops_per_token_state_byte =
      r.Double("mamba_flops_per_token_state_byte", h.mamba_flops_per_token_state_byte,
               "recurrent-layer FLOPs per token per state byte", 0);
}

double ScalarDouble(const ConfigNode* n, double def) {
  if (!n || !n->is_scalar()) return def;
  char* end = nullptr;
  const double v = std::strtod(n->scalar.c_str(), &end);
  return (end && *end == '\0' && v > 0) ? v : def;
}

// A profile written by `kvsim gpu-validate --calibrate` (core/hardware_profile.h: SI units
// under a top-level `hardware:` map, kernel-class lines t = fixed + bytes / rate) mapped onto
// the step-time model's keys:
//   hbm_peak_bytes_per_s → hbm_bandwidth_gbps;  attn_bytes_per_s / peak → attention_mbu;
//   attn_fixed_s → attention_call_us.  copy_bytes_per_s is accepted and not used: a GEMM
//   streaming weights does not run at copy speed (mbu comes from operator profiles or
//   serving runs, `kvsim calibrate`). move_* (KV append/gather kernels) and `source` are
//   accepted; KV writes are already inside the attention bytes, so they are not used.
//   attn_item_bytes_per_s (the attention kernel's per-CTA tail term) is accepted and not
//   used: the step model does not know the kernel's partition size.
void TranslateCalibration(ConfigNode& f, double preset_gbps) {
  if (const ConfigNode* inner = f.Find("hardware"); inner && inner->is_map() && f.map.size() == 1) {
    ConfigNode copy = *inner;
    f = copy;
  }
  if (!f.Find("hbm_peak_bytes_per_s") && !f.Find("copy_bytes_per_s") &&
      !f.Find("attn_bytes_per_s") && !f.Find("attn_fixed_s")) {
    return;
  }
  auto set = [&](const std::string& key, double v, const SourcePos& pos) {
    f.Set(key, ConfigNode::Scalar(fmt::format("{:.9g}", v), pos), pos);
  };
  double peak = preset_gbps * 1e9;
  if (const ConfigNode* n = f.Find("hbm_peak_bytes_per_s")) {
    peak = ScalarDouble(n, peak);
    set("hbm_bandwidth_gbps", peak / 1e9, n->pos);
  }
  if (const ConfigNode* n = f.Find("attn_bytes_per_s")) {
    set("attention_mbu", std::min(1.0, ScalarDouble(n, 0.75 * peak) / peak), n->pos);
  }
  if (const ConfigNode* n = f.Find("attn_fixed_s")) {
    set("attention_call_us", ScalarDouble(n, 0) * 1e6, n->pos);
  }
  for (const char* k : {"hbm_peak_bytes_per_s", "copy_bytes_per_s", "attn_bytes_per_s",
                        "attn_fixed_s", "attn_item_bytes_per_s", "move_fixed_s",
                        "move_bytes_per_s", "source"}) {
    f.Erase(k);
  }
}

const std::string* FindHardwarePreset(const std::string& name, std::string* file) {
  const std::string want = Lower(name);
  for (const auto& f : EmbeddedDataFiles()) {
    const std::string p = f.path;
    if (p.rfind(kHardwareDir, 0) != 0 || p.size() < 5 || p.substr(p.size() - 5) != ".yaml") {
      continue;
    }
    const std::string stem = p.substr(std::string(kHardwareDir).size(),
                                      p.size() - std::string(kHardwareDir).size() - 5);
    auto parsed = ParseYaml(f.content, p);
    std::string preset_name = stem;
    if (parsed.ok()) {
      if (const ConfigNode* n = parsed.value().Find("name"); n && n->is_scalar()) {
        preset_name = n->scalar;
      }
    }
    if (Lower(stem) == want || Lower(preset_name) == want) {
      *file = p;
      return &f.content;
    }
  }
  return nullptr;
}

void ParseHardware(ConfigReader& root, Scenario& sc) {
  SimConfig& sim = sc.sim;
  const std::string help = "GPU: preset, file (e.g. a calibration) and inline coefficients";
  if (root.describing()) {
    ConfigReader doc = root.Map("hardware", help);
    doc.String("preset", "H100-SXM",
               "hardware preset: H100-SXM, H200, B200, A100-80G, L40S, RTX-4090, RTX-PRO-6000");
    doc.String("file", "", "hardware YAML merged over the preset (same keys as this section)");
    ParseHardwareKeys(doc, sim.hardware);
    return;
  }
  const ConfigNode* node = root.Raw("hardware", "map", help);
  if (node && !node->is_null() && !node->is_map()) {
    root.Error("hardware", "wrong_type", "expected a map (preset, file, coefficients)");
    return;
  }
  ConfigNode merged;
  merged.kind = ConfigNode::Kind::kMap;
  std::string preset = "H100-SXM";
  const ConfigNode* preset_node = node ? node->Find("preset") : nullptr;
  if (preset_node) {
    if (!preset_node->is_scalar()) {
      root.Error("hardware", "wrong_type", "preset: expected a preset name");
      return;
    }
    preset = preset_node->scalar;
  }
  std::string preset_file;
  const std::string* text = FindHardwarePreset(preset, &preset_file);
  if (!text) {
    const auto names = HardwarePresetNames();
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    const std::string near = ClosestMatch(preset, names);
    root.errors()->list.push_back(
        {"unknown_preset", (preset_node ? preset_node->pos.ToString() + ": " : std::string()) +
                               "hardware.preset: unknown hardware preset \"" + preset + "\"" +
                               (near.empty() ? "" : " (did you mean " + near + "?)") +
                               "; known: " + list});
    return;
  }
  auto base = ParseYaml(*text, std::string(kBuiltIn) + preset_file);
  if (!base.ok()) {
    root.errors()->list.push_back({base.status().code(), base.status().message()});
    return;
  }
  merged.MergeFrom(base.value());
  sim.hardware_source = "preset " + preset;
  if (node) {
    if (const ConfigNode* file = node->Find("file")) {
      if (!file->is_scalar()) {
        root.Error("hardware", "wrong_type", "file: expected a path");
        return;
      }
      const std::string path = ResolveRelative(file->scalar, file->pos);
      auto f = ParseYamlFile(path);
      if (!f.ok()) {
        root.errors()->list.push_back(
            {f.status().code(), file->pos.ToString() + ": hardware.file: " + f.status().message()});
        return;
      }
      if (!f.value().is_map()) {
        root.errors()->list.push_back(
            {"wrong_type", path + ": a hardware file must be a map of coefficients"});
        return;
      }
      double preset_gbps = 3350;
      if (const ConfigNode* bw = merged.Find("hbm_bandwidth_gbps")) {
        preset_gbps = ScalarDouble(bw, preset_gbps);
      }
      TranslateCalibration(f.value(), preset_gbps);
      merged.MergeFrom(f.value());
      sim.hardware_source += " + file " + path;
    }
    ConfigNode own = *node;
    own.Erase("preset");
    own.Erase("file");
    if (!own.map.empty()) sim.hardware_source += " + inline";
    merged.MergeFrom(own);
  }
  ConfigReader r(&merged, "hardware", root.errors());
  ParseHardwareKeys(r, sim.hardware);
  r.Finish();
}

// Keys of another workload kind (typically left behind by `--set workload.kind=trace` on
// a synthetic scenario): one error naming them all and the kind they belong to, instead of
// an "unknown key" each for keys that `kvsim list` lists.
void RefuseUnusedKeys(ConfigReader& r, const std::string& kind) {
  std::vector<std::string> unused;
  std::string owner;
  auto mark = [&](const char* key, const std::string& whose) {
    if (!r.Has(key)) return;
    (void)r.Raw(key, "", "");  // known: this error explains it
    unused.push_back(key);
    if (owner.empty()) owner = whose;
  };
  if (kind == "trace") {
    for (const char* k : {"arrival", "rate_per_s", "stages", "concurrency", "gamma_cv",
                          "prompt_tokens", "output_tokens"}) {
      mark(k, "the synthetic workloads (shared_prefix, multi_turn, agent_tree)");
    }
  }
  if (kind != "multi_turn") mark("multi_turn", "kind multi_turn");
  if (kind != "agent_tree") mark("agent_tree", "kind agent_tree");
  if (kind != "trace") mark("trace", "kind trace");
  if (unused.empty()) return;
  std::string list;
  for (const std::string& k : unused) list += (list.empty() ? "" : ", ") + r.path() + "." + k;
  r.Error(unused.front(), "unused_key",
          fmt::format("{} belong{} to {} and {} not used by kind {}: remove {} (or replace the "
                      "whole section: --set 'workload={{kind: {}, ...}}')",
                      list, unused.size() == 1 ? "s" : "", owner,
                      unused.size() == 1 ? "is" : "are", kind,
                      unused.size() == 1 ? "it" : "them", kind));
}

void ParseWorkload(ConfigReader& root, Scenario& sc) {
  WorkloadConfig& w = sc.sim.workload;
  const bool all = root.describing();
  ConfigReader r = root.Map("workload", "the requests the engine serves");
  w.kind = r.Choice("kind", w.kind, {"shared_prefix", "multi_turn", "agent_tree", "trace"},
                    "synthetic generator, or a trace file");
  w.num_requests = r.Int("num_requests", w.num_requests,
                         "cap on requests created, follow-ups included (0 = no cap)", 0);
  w.duration_s = r.Double("duration_s", w.duration_s, "cap on arrival times, s (0 = none)", 0);
  const bool trace = w.kind == "trace";
  if (!trace || all) {
    w.arrival = r.Choice("arrival", w.arrival,
                         {"poisson", "gamma", "constant", "burst", "inference_perf"},
                         "arrival process of new requests/sessions/trees (constant: evenly "
                         "spaced; burst: all at t=0; inference_perf: inference-perf's constant "
                         "load, floor(rate*duration) requests per stage with exponential gaps "
                         "rescaled to fill the stage)");
    w.rate_per_s = r.Double("rate_per_s", w.rate_per_s, "mean arrivals per second", 1e-9);
    w.stages.clear();
    for (ConfigReader& sr :
         r.MapList("stages", "load stages [{rate_per_s, duration_s}, ...]: the rate changes "
                             "stage by stage; arrivals end after the last")) {
      LoadStage stage;
      stage.rate_per_s = sr.Double("rate_per_s", 1, "arrivals per second in this stage", 1e-9);
      stage.duration_s = sr.Double("duration_s", 1, "length of this stage, s", 1e-9);
      sr.Finish();
      if (!sr.describing()) w.stages.push_back(stage);
    }
    w.concurrency = r.Int("concurrency", w.concurrency,
                          "closed loop (shared_prefix): clients each keeping one request in "
                          "flight (0 = open loop)",
                          0, 1 << 24);
    w.gamma_cv = r.Double("gamma_cv", w.gamma_cv, "gamma arrivals: CV of inter-arrival times",
                          1e-3, 100);
    w.prompt_tokens = ParseLength(r, "prompt_tokens", w.prompt_tokens,
                                  "unique prompt tokens per request (user message)");
    w.output_tokens = ParseLength(r, "output_tokens", w.output_tokens, "output tokens");
  }
  // Synthetic workloads, and Azure CSV traces (which carry lengths only), draw token ids
  // and may put shared system prompts in front of every prompt.
  w.vocab_size = r.Int("vocab_size", w.vocab_size, "token ids are drawn from [0, vocab)", 2);
  ConfigReader sp = r.Map("system_prompt",
                          "shared system prompts prepended to every prompt (synthetic "
                          "workloads and Azure CSV traces)");
  w.system_prompt.tokens =
      sp.Int("tokens", 0, "tokens per system prompt (0 = none)", 0, kMaxSyntheticLength);
  w.system_prompt.count = sp.Int("count", 1, "distinct system prompts", 1, 1 << 20);
  // The system prompts are made once and kept as token ids for the whole run.
  if (!all && static_cast<double>(w.system_prompt.count) *
                      static_cast<double>(w.system_prompt.tokens) >
                  static_cast<double>(kMaxPromptPoolTokens)) {
    sp.Error("tokens", "too_large",
             fmt::format("count {} * tokens {} is above {} tokens, the most the system prompts "
                         "may hold (they are kept as token ids)",
                         w.system_prompt.count, w.system_prompt.tokens, kMaxPromptPoolTokens));
  }
  w.system_prompt.zipf_s = sp.Double("zipf_s", 0, "Zipf skew of prompt popularity", 0, 10);
  w.system_prompt.users =
      sp.Int("users", 0,
             "shared_prefix: questions per system prompt in a fixed pool of count*users "
             "prompts re-sent in turn, request k of a stage sending pool[k mod size] "
             "(inference-perf's shared_prefix); 0 = a fresh question per request",
             0, 1 << 20);
  if (w.system_prompt.users > 0 && !all) {
    if (w.kind != "shared_prefix") {
      sp.Error("users", "bad_value", "a prompt pool is for workload.kind shared_prefix");
    } else if (static_cast<double>(w.system_prompt.count) * static_cast<double>(w.system_prompt.users) *
                   static_cast<double>(std::max<int64_t>(1, w.prompt_tokens.max)) >
               static_cast<double>(kMaxPromptPoolTokens)) {
      sp.Error("users", "too_large",
               "count * users * prompt_tokens.max is above " +
                   std::to_string(kMaxPromptPoolTokens) +
                   " tokens, the most a prompt pool may hold (it is kept as token ids)");
    }
  }
  sp.Finish();
  if (w.kind == "multi_turn" || all) {
    ConfigReader m = r.Map("multi_turn", "sessions: each turn extends the conversation so far");
    w.multi_turn.turns = ParseLength(m, "turns", w.multi_turn.turns, "turns per session", "turns");
    w.multi_turn.think_time_s =
        m.Double("think_time_s", w.multi_turn.think_time_s, "mean think time, s", 0);
    m.Finish();
  }
  if (w.kind == "agent_tree" || all) {
    ConfigReader a = r.Map("agent_tree", "branching agent trees: children extend the parent");
    w.agent_tree.depth = a.Int("depth", w.agent_tree.depth, "levels below the root", 0, 32);
    w.agent_tree.branching = a.Int("branching", w.agent_tree.branching, "children per node", 1, 64);
    w.agent_tree.tool_tokens =
        ParseLength(a, "tool_tokens", w.agent_tree.tool_tokens, "tool output per child");
    w.agent_tree.think_time_s =
        a.Double("think_time_s", w.agent_tree.think_time_s, "mean delay before children, s", 0);
    a.Finish();
  }
  if (trace || all) {
    ConfigReader t = r.Map("trace", "trace workload: Mooncake JSONL, token JSONL or Azure CSV");
    w.trace.path = t.String("path", "", "trace file (relative to the scenario or the cwd)");
    w.trace.format = t.Choice("format", "auto", {"auto", "mooncake", "tokens", "azure"},
                              "auto: by extension and first line");
    w.trace.time_scale =
        t.Double("time_scale", 1.0, "multiplies arrival times (0.5 = twice the rate)", 0);
    // A typo in a trace path must not quietly become synthetic data: required by default.
    w.trace.required = t.Bool("required", true,
                              "missing file is an error (false: fall back to the synthetic "
                              "generator and say so)");
    w.trace.sha256 = t.String("sha256", "",
                              "the file's SHA-256 as an output directory recorded it: a file "
                              "with another hash is refused (scenario.resolved.yaml writes it)");
    w.trace.bytes = t.Int("bytes", -1, "the file's size as recorded beside sha256", -1);
    (void)t.String("resolved_path", "",
                   "where the file was found when the output directory was written "
                   "(informative: the file is looked up by `path`)");
    if (trace && !all && w.trace.path.empty()) {
      t.Error("path", "missing_key", "a trace workload needs workload.trace.path");
    }
    t.Finish();
  }
  if (!all) RefuseUnusedKeys(r, w.kind);
  r.Finish();
  w.scenario_dir.clear();
  if (!sc.source.empty() && sc.source.rfind(kBuiltIn, 0) != 0) {
    w.scenario_dir = fs::path(sc.source).parent_path().string();
  }
}

}  // namespace

const std::string* HardwarePresetText(const std::string& name, std::string* file) {
  return FindHardwarePreset(name, file);
}

std::vector<std::string> HardwarePresetNames() {
  std::vector<std::string> out;
  for (const auto& f : EmbeddedDataFiles()) {
    const std::string p = f.path;
    if (p.rfind(kHardwareDir, 0) != 0 || p.size() < 5 || p.substr(p.size() - 5) != ".yaml") {
      continue;
    }
    auto parsed = ParseYaml(f.content, p);
    if (!parsed.ok()) continue;
    if (const ConfigNode* n = parsed.value().Find("name"); n && n->is_scalar()) {
      out.push_back(n->scalar);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

void ParseSchedulerExtras(ConfigReader& s, Scenario& sc) {
  SchedulerExtras& x = sc.sim.scheduler;
  x.long_prefill_token_threshold = s.Int("long_prefill_token_threshold", 0,
                                         "cap on one request's chunk per step (0 = off)", 0);
  x.enable_chunked_prefill = s.Bool("enable_chunked_prefill", true, "chunked prefill");
  x.policy = s.Choice("policy", "fcfs", {"fcfs", "priority"}, "scheduling policy");
  x.full_sequence_must_fit =
      s.Bool("full_sequence_must_fit", true,
             "admit a request only if its whole prompt fits (scheduler_reserve_full_isl)");
  x.watermark = s.Double("watermark", 0,
                         "[latest] admit a waiting request only if int(watermark x "
                         "num_gpu_blocks) blocks stay free beyond it while others run (vLLM's "
                         "SchedulerConfig.watermark; 0 = off)",
                         0, 0.99);
  x.async_scheduling =
      s.Bool("async_scheduling", false,
             "decide step k+1 while step k runs, before its outputs are applied (vLLM's "
             "default engine; its CPU part then overlaps the previous step's GPU part). Off "
             "by default: the fitted step-time model matches measured runs better sync. "
             "Runs with drafts and P/D instances use sync scheduling");
}

const std::vector<std::string>& ReferenceMetricNames() {
  static const std::vector<std::string> names = {
      "ttft_mean_ms", "ttft_p90_ms", "ttft_p99_ms", "tpot_mean_ms",
      "e2e_mean_ms",  "e2e_p90_ms",  "e2e_p99_ms",  "output_tok_per_s"};
  return names;
}

namespace {

std::vector<std::pair<std::string, double>> ParseReferenceMetrics(ConfigReader& r) {
  std::vector<std::pair<std::string, double>> out;
  for (const std::string& name : ReferenceMetricNames()) {
    if (!r.Has(name) && !r.describing()) continue;
    const double v = r.Double(name, 0, "measured " + name, 0);
    if (!r.describing()) out.emplace_back(name, v);
  }
  return out;
}

void ParseReference(ConfigReader& root, Scenario& sc) {
  ReferenceConfig& ref = sc.sim.reference;
  ConfigReader r = root.Map("reference",
                            "measured metrics of the real run this scenario reproduces; "
                            "`kvsim run` prints simulated beside measured");
  ref.source = r.String("source", "", "where the measurements come from");
  ConfigReader s = r.Map("summary", "whole-run metrics (ms; output_tok_per_s in tokens/s)");
  ref.summary = ParseReferenceMetrics(s);
  s.Finish();
  for (ConfigReader& st : r.MapList("stages", "per load stage, in workload.stages order")) {
    ref.stages.push_back(ParseReferenceMetrics(st));
    st.Finish();
  }
  r.Finish();
}

// Requests one arrival (a request, a session, a tree) creates at most, follow-ups included.
double RequestsPerArrival(const WorkloadConfig& wl) {
  if (wl.kind == "multi_turn") return static_cast<double>(wl.multi_turn.turns.max);
  if (wl.kind != "agent_tree") return 1;
  double nodes = 0;
  double level = 1;
  for (int64_t d = 0; d <= wl.agent_tree.depth; ++d) {
    nodes += level;
    level *= static_cast<double>(wl.agent_tree.branching);
  }
  return nodes;
}

// A synthetic workload creates at most the least of its caps: workload.num_requests, and for
// open-loop arrivals what the rate implies over the stages, workload.duration_s or
// run.max_sim_seconds. Above kMaxSyntheticRequests that is an error naming the cap that
// binds (a closed loop with no request cap is bounded by time only and not checked here).
// Burst arrivals all come at t = 0, so only num_requests bounds them.
void CheckRequestBound(ConfigReader& root, const Scenario& sc) {
  const WorkloadConfig& wl = sc.sim.workload;
  if (wl.kind == "trace") return;
  ConfigReader workload = root.Map("workload", "");
  if (wl.arrival == "burst" && wl.concurrency == 0 && wl.num_requests == 0) {
    workload.Error("num_requests", "unbounded",
                   "0 (no cap) with burst arrivals: every request arrives at t = 0, so no "
                   "duration or stage ends them; give a request count");
    return;
  }
  struct Cap {
    double requests;
    std::string section, key, how;
  };
  std::vector<Cap> caps;
  const double most = static_cast<double>(kMaxSyntheticRequests);
  if (wl.num_requests > 0) {
    caps.push_back({static_cast<double>(wl.num_requests), "workload", "num_requests",
                    fmt::format("{} requests", wl.num_requests)});
  }
  if (wl.concurrency == 0) {
    const double per = RequestsPerArrival(wl);
    const std::string each =
        per > 1 ? fmt::format(" × up to {:g} requests per {}", per,
                              wl.kind == "multi_turn" ? "session" : "tree")
                : "";
    const bool ip = wl.arrival == "inference_perf";
    double staged = 0;
    double peak = 0;
    for (const LoadStage& st : ip ? InferencePerfStages(wl) : wl.stages) {
      staged += st.rate_per_s * st.duration_s;
      peak = std::max(peak, st.rate_per_s);
    }
    if (!wl.stages.empty()) {
      caps.push_back({staged * per, "workload", "stages",
                      fmt::format("the stages' rate_per_s × duration_s sum to {:g} arrivals{}",
                                  staged, each)});
    } else if (ip || wl.duration_s > 0) {
      caps.push_back({wl.rate_per_s * wl.duration_s * per, "workload", "duration_s",
                      fmt::format("{:g} s at rate_per_s {:g} is about {:g} arrivals{}",
                                  wl.duration_s, wl.rate_per_s, wl.rate_per_s * wl.duration_s,
                                  each)});
    }
    if (!ip && !wl.stages.empty() && wl.duration_s > 0) {
      caps.push_back({peak * wl.duration_s * per, "workload", "duration_s",
                      fmt::format("{:g} s at up to {:g}/s is about {:g} arrivals{}",
                                  wl.duration_s, peak, peak * wl.duration_s, each)});
    }
    const double t = sc.sim.run.max_sim_seconds;
    const double rate = wl.stages.empty() ? wl.rate_per_s : peak;
    if (t > 0) {
      caps.push_back({rate * t * per, "run", "max_sim_seconds",
                      fmt::format("{:g} s at up to {:g}/s is about {:g} arrivals{}", t, rate,
                                  rate * t, each)});
    }
  }
  if (caps.empty()) return;
  const Cap* binding = &caps.front();
  for (const Cap& c : caps) {
    if (c.requests < binding->requests) binding = &c;
  }
  if (binding->requests <= most) return;
  ConfigReader section = binding->section == "workload" ? workload : root.Map("run", "");
  section.Error(binding->key, "too_large",
                fmt::format("{}, above {} (2^24), the most requests a synthetic workload may "
                            "create (a trace has the same bound); cap it with "
                            "workload.num_requests or a shorter time",
                            binding->how, kMaxSyntheticRequests));
}

}  // namespace

void ParseSimSections(ConfigReader& root, Scenario& sc) {
  ParseReference(root, sc);
  ParseHardware(root, sc);
  ParseWorkload(root, sc);
  ConfigReader sp = root.Map("spec", "speculative decoding (with cache.num_speculative_tokens)");
  sc.sim.spec.acceptance_rate = sp.Double(
      "acceptance_rate", 0.7, "probability each draft token is accepted (i.i.d.)", 0, 1);
  sc.sim.spec.method = sp.Choice("method", "mtp", {"mtp", "eagle", "draft", "dflash"},
                                 "drafter kind: eagle/mtp drop a hit block; dflash +1 lookahead");
  sp.Finish();
  ConfigReader run = root.Map("run", "run limits and output");
  sc.sim.run.max_sim_seconds =
      run.Double("max_sim_seconds", 0, "stop at this simulated time, s (0 = until done)", 0);
  sc.sim.run.trace_max_requests = run.Int(
      "trace_max_requests", 2000, "request lifecycles kept in the --trace file", 0);
  run.Finish();
  // A synthetic workload with no cap on requests, arrival times or simulated time never ends
  // (it grows without bound): refuse it. A trace ends with its file, open-loop load stages
  // with the last stage (closed-loop clients keep going after it).
  const WorkloadConfig& wl = sc.sim.workload;
  if (!root.describing() && wl.kind != "trace" && wl.num_requests == 0 && wl.duration_s <= 0 &&
      (wl.stages.empty() || wl.concurrency > 0) && sc.sim.run.max_sim_seconds <= 0) {
    ConfigReader again = root.Map("workload", "");
    again.Error("num_requests", "unbounded",
                "0 (no cap) with none of workload.duration_s, workload.stages or run.max_sim_seconds set: the "
                "run would never end; give a request count or one of those limits");
  }
  if (!root.describing() && wl.kind != "trace" && wl.arrival == "inference_perf") {
    // Its send times are drawn a stage at a time: each stage must be bounded, and the run
    // needs stages or one stage of rate_per_s for duration_s.
    ConfigReader again = root.Map("workload", "");
    if (wl.stages.empty() && wl.duration_s <= 0) {
      again.Error("arrival", "bad_value",
                  "inference_perf arrivals need workload.stages or workload.duration_s (one "
                  "stage of rate_per_s for that long)");
    }
    for (const LoadStage& st : InferencePerfStages(wl)) {
      if (st.rate_per_s * st.duration_s > static_cast<double>(kMaxStageRequests)) {
        again.Error(wl.stages.empty() ? "duration_s" : "stages", "too_large",
                    "rate_per_s * duration_s is above " + std::to_string(kMaxStageRequests) +
                        " requests in one stage, the most inference_perf arrivals draw at once");
        break;
      }
    }
  }
  if (!root.describing()) CheckRequestBound(root, sc);
  ConfigReader m = root.Map("metrics", "metrics collection");
  sc.sim.metrics.kv_sample_interval_ms = m.Double(
      "kv_sample_interval_ms", 50, "KV-usage time series resolution, ms of sim time", 1e-3);
  m.Finish();
  root.Raw("sweep", "map",
           "sweep points: key.path: [values] (cartesian product); zip: [{key: [..], ...}]");
}

void CheckPromptsFitContext(ConfigReader& root, const Scenario& sc) {
  const WorkloadConfig& wl = sc.sim.workload;
  if (root.describing() || wl.max_model_len <= 0) return;
  // A trace's prompts are checked against the context as the trace is read.
  if (wl.kind == "trace") return;
  const int64_t sys = wl.system_prompt.tokens;
  const int64_t shortest = sys + wl.prompt_tokens.min;
  if (shortest < wl.max_model_len || shortest <= 0) return;
  const std::string limit =
      fmt::format("max_model_len {} ({})", wl.max_model_len,
                  sc.cache.max_model_len > 0 ? "cache.max_model_len" : "model.max_model_len");
  ConfigReader workload = root.Map("workload", "");
  if (sys >= wl.max_model_len) {
    ConfigReader sp = workload.Map("system_prompt", "");
    sp.Error("tokens", "too_large",
             fmt::format("{} tokens reach the {}: every request would be rejected", sys, limit));
    return;
  }
  ConfigReader pt = workload.Map("prompt_tokens", "");
  pt.Error("min", "too_large",
           fmt::format("every prompt has at least {} tokens (system_prompt.tokens {} + "
                       "prompt_tokens.min {}), which reaches the {}: every request would be "
                       "rejected",
                       shortest, sys, wl.prompt_tokens.min, limit));
}

}  // namespace kvsim
