// The single-engine kind of Simulation: an Engine (sim/engine.h) and its outputs
// (sim/metrics_output.h), its metrics as the sweep CSV's single-engine columns
// (docs/columns.md) and its table row.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "sim/engine.h"
#include "sim/metrics_output.h"
#include "sim/run/kinds.h"
#include "sim/trace_export.h"

namespace kvsim {
namespace {

class EngineSimulation : public Simulation {
 public:
  explicit EngineSimulation(std::unique_ptr<Engine> e) : e_(std::move(e)) {}
  const SimulationKind& kind() const override {
    return e_->scenario().offload.enabled ? EngineOffloadKind() : EngineKind();
  }
  void SetTrace(TraceRecorder* trace) override { e_->SetTrace(trace); }
  void SetStepLog(const StepRecordSink* sink) override { e_->SetStepLog(sink); }
  void Run() override {
    e_->Run();
    summary_ = e_->Summary();
  }
  Tick now() const override { return e_->now(); }

  MetricSet Metrics() const override {
    const KvCachePlan& p = e_->plan();
    const RunSummary& s = summary_;
    MetricSet m;
    m.Add("attn_block_size", "tokens", p.attn_block_size);
    m.Add("num_blocks", "blocks", p.num_blocks);
    m.Add("padding_fraction", "fraction", p.padding_fraction());
    m.Add("finished", "requests", s.requests_finished);
    m.Add("rejected", "requests", s.requests_rejected);
    m.Add("prefix_hit_rate", "fraction", s.prefix_hit_rate);
    m.Add("ttft_mean_ms", "ms", s.ttft_ms.mean);
    m.Add("ttft_p50_ms", "ms", s.ttft_ms.p50);
    m.Add("ttft_p90_ms", "ms", s.ttft_ms.p90);
    m.Add("ttft_p99_ms", "ms", s.ttft_ms.p99);
    m.Add("tpot_mean_ms", "ms", s.tpot_ms.mean);
    m.Add("tpot_p90_ms", "ms", s.tpot_ms.p90);
    m.Add("itl_p50_ms", "ms", s.itl_ms.p50);
    m.Add("itl_p99_ms", "ms", s.itl_ms.p99);
    m.Add("e2e_mean_ms", "ms", s.e2e_ms.mean);
    m.Add("e2e_p99_ms", "ms", s.e2e_ms.p99);
    m.Add("output_tok_per_s", "tokens/s", s.output_throughput);
    m.Add("total_tok_s", "tokens/s", s.total_throughput);
    m.Add("requests_s", "requests/s", s.request_throughput);
    m.Add("preemptions", "count", s.preemptions);
    m.Add("kv_usage_mean", "fraction", s.kv_usage_mean);
    m.Add("kv_usage_max", "fraction", s.kv_usage_max);
    m.Add("padding_gib_in_use", "GiB", s.padding_bytes_in_use_mean / (1024.0 * 1024.0 * 1024.0));
    m.Add("makespan_s", "s", s.makespan_s);
    m.Add("steps", "count", s.steps);
    const QueueGrowth g = MeasureQueueGrowth(e_->metrics().records());
    m.Add("overloaded", "flag", g.overloaded ? 1 : 0);
    m.Add("queue_wait_q1_s", "s", g.first_quarter_wait_s);
    m.Add("queue_wait_q4_s", "s", g.last_quarter_wait_s);
    if (e_->scenario().offload.enabled) {
      constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
      m.Add("cpu_hit_rate", "fraction", s.cpu_hit_rate);
      m.Add("offload_gib_loaded", "GiB", static_cast<double>(s.offload_bytes_loaded) / kGiB);
      m.Add("offload_gib_stored", "GiB", static_cast<double>(s.offload_bytes_stored) / kGiB);
      m.Add("cpu_tier_usage_mean", "fraction", s.cpu_tier_usage_mean);
      m.Add("cpu_tier_usage_max", "fraction", s.cpu_tier_usage_max);
      m.Add("load_wait_mean_ms", "ms", s.load_wait_ms.mean);
      m.Add("loaded_requests", "requests", s.load_wait_ms.count);
    }
    return m;
  }

  Status WriteOutputs(const std::string& dir, const Labels& labels) const override {
    return WriteRunOutputs(*e_, labels, dir);
  }
  std::string RequestsCsv() const override { return kvsim::RequestsCsv(*e_); }

  std::string Report() const override {
    const Scenario& s = e_->scenario();
    std::string out = fmt::format("kvsim run: {} — {}\n", s.name, s.description);
    std::string parallel = fmt::format("TP {}", s.cache.tp);
    if (s.cache.dp > 1) parallel += fmt::format(", DP {}", s.cache.dp);
    if (s.cache.ep > 1) parallel += fmt::format(", EP {}", s.cache.ep);
    out += fmt::format("  model {} ({}), hardware {} [{}], seed {}\n", s.model.name, parallel,
                       s.sim.hardware.name, s.sim.hardware_source, s.seed);
    // Under 1 GiB in MiB: a 4 MiB budget printed as "0.0 GiB" read as none at all. With
    // cache.num_gpu_blocks the memory key is unset: the blocks and what they take instead.
    auto size = [](double bytes) {
      return bytes >= (1 << 30) || bytes == 0 ? fmt::format("{:.1f} GiB", bytes / (1 << 30))
                                              : fmt::format("{:.1f} MiB", bytes / (1 << 20));
    };
    std::string kv;
    if (s.cache.num_gpu_blocks > 0) {
      kv = fmt::format("KV cache {} blocks ({} per rank)", s.cache.num_gpu_blocks,
                       size(static_cast<double>(e_->plan().total_bytes())));
    } else if (const auto& b = s.memory_budget) {
      // Derived from gpu_memory_utilization as vLLM's worker does: say how, and what it holds.
      // The rotary cache is named only where a model has one (inline models often do not say
      // their positions).
      const std::string rope =
          b->rope_cache > 0 ? " − rotary cache " + size(static_cast<double>(b->rope_cache)) : "";
      kv = fmt::format("KV cache {} blocks ({} per rank = {:g} × {} − weights {}{} − activations "
                       "{} − non-torch {})",
                       e_->plan().num_blocks, size(static_cast<double>(b->kv)),
                       s.cache.gpu_memory_utilization,
                       size(static_cast<double>(s.sim.hardware.hbm_capacity_bytes)),
                       size(static_cast<double>(b->weights)), rope,
                       size(static_cast<double>(b->activations)),
                       size(static_cast<double>(b->non_torch)));
    } else {
      kv = "KV memory " + size(static_cast<double>(s.cache.kv_memory_bytes));
    }
    out += fmt::format("  budget {} tokens / {} seqs, {}\n", s.scheduler.max_num_batched_tokens,
                       s.scheduler.max_num_seqs, kv);
    out += "  workload " + Workload() + "\n";
    return out;
  }

  std::string Workload() const override {
    std::string w = e_->workload_description();
    if (!e_->workload_note().empty()) w += " [" + e_->workload_note() + "]";
    return w;
  }
  std::string Rejections() const override { return DescribeRejections(*e_); }
  std::string Overload() const override { return DescribeOverload(e_->metrics().records()); }
  std::string Breakdown() const override { return FormatRanks(summary_); }
  std::string SummaryJson() const override {
    return SummaryToJson(summary_).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  std::optional<ReferenceComparison> CompareWithReference() const override {
    const ReferenceConfig& ref = e_->scenario().sim.reference;
    if (ref.summary.empty()) return std::nullopt;
    ReferenceComparison out{ref.source, kvsim::CompareWithReference(summary_, ref.summary), {}};
    const std::vector<LoadStage>& stages = e_->scenario().sim.workload.stages;
    if (!ref.stages.empty() && ref.stages.size() == stages.size()) {
      const std::vector<MetricValues> simulated =
          StageMetrics(e_->metrics().records(), StageDurations(stages));
      for (size_t k = 0; k < stages.size(); ++k) {
        out.stages.emplace_back(fmt::format("stage {} ({:g}/s for {:g} s)", k + 1,
                                            stages[k].rate_per_s, stages[k].duration_s),
                                CompareMetrics(simulated[k], ref.stages[k]));
      }
    }
    return out;
  }

 private:
  std::unique_ptr<Engine> e_;
  RunSummary summary_;
};

}  // namespace

const SimulationKind& EngineKind() {
  static const SimulationKind kKind = [] {
    SimulationKind k;
    k.name = "engine";
    k.columns = {{"attn_block_size", "tokens"},
                 {"num_blocks", "blocks"},
                 {"padding_fraction", "fraction"},
                 {"finished", "requests"},
                 {"rejected", "requests"},
                 {"prefix_hit_rate", "fraction"},
                 {"ttft_mean_ms", "ms"},
                 {"ttft_p50_ms", "ms"},
                 {"ttft_p90_ms", "ms"},
                 {"ttft_p99_ms", "ms"},
                 {"tpot_mean_ms", "ms"},
                 {"tpot_p90_ms", "ms"},
                 {"itl_p50_ms", "ms"},
                 {"itl_p99_ms", "ms"},
                 {"e2e_mean_ms", "ms"},
                 {"e2e_p99_ms", "ms"},
                 {"output_tok_per_s", "tokens/s"},
                 {"total_tok_s", "tokens/s"},
                 {"requests_s", "requests/s"},
                 {"preemptions", "count"},
                 {"kv_usage_mean", "fraction"},
                 {"kv_usage_max", "fraction"},
                 {"padding_gib_in_use", "GiB"},
                 {"makespan_s", "s"},
                 {"steps", "count"},
                 {"overloaded", "flag"},
                 {"queue_wait_q1_s", "s"},
                 {"queue_wait_q4_s", "s"}};
    // `pad MiB` is padding_gib_in_use × 1024 (the padded share of the blocks in use).
    k.table.indent = 2;
    k.table.gap = 2;
    k.table.columns = {
        {"block", "attn_block_size", 6, 0, 1, "", true},
        {"hit rate", "prefix_hit_rate", 7, 1, 100, "%", false},
        {"TTFT ms", "ttft_mean_ms", 9, 1, 1, "", false},
        {"TTFT p90", "ttft_p90_ms", 9, 1, 1, "", false},
        {"TPOT ms", "tpot_mean_ms", 9, 2, 1, "", false},
        {"out tok/s", "output_tok_per_s", 10, 0, 1, "", false},
        {"preempt", "preemptions", 8, 0, 1, "", true},
        {"KV use", "kv_usage_mean", 6, 1, 100, "%", false},
        {"pad MiB", "padding_gib_in_use", 8, 1, 1024, "", false},
    };
    k.presentation = SimulationKind::Presentation::kHeaderThenTable;
    return k;
  }();
  return kKind;
}

const SimulationKind& EngineOffloadKind() {
  static const SimulationKind kKind = [] {
    SimulationKind k = EngineKind();
    k.name = "engine_offload";
    k.columns.insert(k.columns.end(), {{"cpu_hit_rate", "fraction"},
                                       {"offload_gib_loaded", "GiB"},
                                       {"offload_gib_stored", "GiB"},
                                       {"cpu_tier_usage_mean", "fraction"},
                                       {"cpu_tier_usage_max", "fraction"},
                                       {"load_wait_mean_ms", "ms"},
                                       {"loaded_requests", "requests"}});
    // The tier's columns go beside the GPU hit rate; padding makes room.
    std::vector<TableColumn> cols;
    for (const TableColumn& c : k.table.columns) {
      if (c.metric == "padding_gib_in_use") continue;
      cols.push_back(c);
      if (c.metric == "prefix_hit_rate") {
        cols.push_back({"CPU hit", "cpu_hit_rate", 7, 1, 100, "%", false});
        cols.push_back({"load ms", "load_wait_mean_ms", 8, 1, 1, "", false});
      }
    }
    cols.push_back({"CPU use", "cpu_tier_usage_mean", 7, 1, 100, "%", false});
    k.table.columns = std::move(cols);
    return k;
  }();
  return kKind;
}

Result<std::unique_ptr<Simulation>> MakeEngineSimulation(const Scenario& sc) {
  auto e = Engine::Create(sc);
  if (!e.ok()) return e.status();
  return std::unique_ptr<Simulation>(new EngineSimulation(std::move(e.value())));
}

}  // namespace kvsim
