// The P/D cluster kind of Simulation: a ClusterSim (sim/cluster/cluster_sim.h), its outputs
// (metrics.json with the cluster summary, the per-request CSV), its metrics as the sweep
// CSV's cluster columns (docs/columns.md) and its table row.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "sim/cluster/cluster_sim.h"
#include "sim/labels.h"
#include "sim/metrics_output.h"
#include "sim/output_file.h"
#include "sim/run/kinds.h"

namespace kvsim {
namespace {

namespace fs = std::filesystem;

// A pool's KV usage: the mean over its instances of each one's time-weighted mean, and the
// highest any instance reached.
double PoolUsageMean(const PoolSummary& p) {
  double sum = 0;
  for (double u : p.kv_usage_mean) sum += u;
  return p.kv_usage_mean.empty() ? 0.0 : sum / static_cast<double>(p.kv_usage_mean.size());
}

double PoolUsageMax(const PoolSummary& p) {
  double m = 0;
  for (double u : p.kv_usage_max) m = std::max(m, u);
  return m;
}

Status WriteText(const fs::path& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  return WriteFileAtomically(path.string(), text);  // whole or not at all
}

class ClusterSimulation : public Simulation {
 public:
  ClusterSimulation(const Scenario& sc, std::unique_ptr<ClusterSim> sim)
      : sc_(sc), sim_(std::move(sim)) {}
  const SimulationKind& kind() const override { return ClusterKind(); }
  void SetTrace(TraceRecorder* trace) override { sim_->SetTrace(trace); }
  void SetStepLog(const StepRecordSink* sink) override { sim_->SetStepLog(sink); }
  void Run() override {
    sim_->Run();
    summary_ = sim_->Summary();
  }
  Tick now() const override { return sim_->now(); }

  MetricSet Metrics() const override {
    const ClusterSummary& s = summary_;
    const double n = s.transferred_requests > 0 ? static_cast<double>(s.transferred_requests) : 1;
    MetricSet m;
    m.Add("finished", "requests", s.finished);
    m.Add("rejected", "requests", s.rejected);
    m.Add("unfinished", "requests", s.unfinished);
    m.Add("makespan_s", "s", s.makespan_s);
    m.Add("ttft_mean_ms", "ms", s.ttft.mean);
    m.Add("ttft_p90_ms", "ms", s.ttft.p90);
    m.Add("ttft_p99_ms", "ms", s.ttft.p99);
    m.Add("queue_mean_ms", "ms", s.queue.mean);
    m.Add("prefill_mean_ms", "ms", s.prefill.mean);
    m.Add("transfer_mean_ms", "ms", s.transfer.mean);
    m.Add("first_decode_mean_ms", "ms", s.first_decode.mean);
    m.Add("wire_mean_ms", "ms", s.wire.mean);
    m.Add("tpot_mean_ms", "ms", s.tpot.mean);
    m.Add("e2e_mean_ms", "ms", s.e2e.mean);
    m.Add("output_tok_per_s", "tokens/s", s.output_throughput);
    m.Add("transferred_requests", "requests", s.transferred_requests);
    m.Add("bytes", "bytes", s.bytes);
    m.Add("descriptors", "count", s.descriptors);
    m.Add("bytes_per_request", "bytes", static_cast<double>(s.bytes) / n);
    m.Add("descriptors_per_request", "count", static_cast<double>(s.descriptors) / n);
    m.Add("max_link_utilisation", "fraction", s.links.empty() ? 0.0 : s.links.front().utilisation);
    m.Add("prefill_hit_rate", "fraction", s.prefill_pool.hit_rate);
    m.Add("decode_hit_rate", "fraction", s.decode_pool.hit_rate);
    m.Add("prefill_kv_usage_mean", "fraction", PoolUsageMean(s.prefill_pool));
    m.Add("prefill_kv_usage_max", "fraction", PoolUsageMax(s.prefill_pool));
    m.Add("decode_kv_usage_mean", "fraction", PoolUsageMean(s.decode_pool));
    m.Add("decode_kv_usage_max", "fraction", PoolUsageMax(s.decode_pool));
    m.Add("prefill_preemptions", "count", s.prefill_pool.preemptions);
    m.Add("decode_preemptions", "count", s.decode_pool.preemptions);
    const QueueGrowth g = Growth();
    m.Add("overloaded", "flag", g.overloaded ? 1 : 0);
    m.Add("queue_wait_q1_s", "s", g.first_quarter_wait_s);
    m.Add("queue_wait_q4_s", "s", g.last_quarter_wait_s);
    return m;
  }

  Status WriteOutputs(const std::string& dir, const Labels& labels) const override {
    const nlohmann::ordered_json m = {
        {"scenario", sc_.name},
        {"point", LabelsToJson(labels)},
        {"workload", Workload()},
        {"summary", nlohmann::ordered_json(ClusterSummaryToJson(summary_))}};
    Status w = WriteText(fs::path(dir) / "metrics.json",
                         m.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    if (w.ok()) w = WriteText(fs::path(dir) / "requests.csv", RequestsCsv());
    return w;
  }
  std::string RequestsCsv() const override { return ClusterRequestsCsv(*sim_); }

  std::string Report() const override {
    return FormatClusterSetup(sc_, sim_->setup()) + "workload: " + Workload() + "\n" +
           FormatClusterSummary(summary_);
  }
  std::string Workload() const override { return sim_->workload_description(); }
  std::string Rejections() const override {
    if (summary_.rejected == 0) return "";
    return fmt::format(
        "{} of {} requests rejected: a prompt reaches max_model_len, or needs more KV blocks "
        "than an instance's cache holds",
        summary_.rejected, summary_.arrived);
  }
  std::string SummaryJson() const override {
    return ClusterSummaryToJson(summary_).dump(-1, ' ', false,
                                               nlohmann::json::error_handler_t::replace);
  }
  std::optional<ReferenceComparison> CompareWithReference() const override {
    return std::nullopt;  // reference runs are single engines
  }
  std::string Overload() const override { return DescribeOverload(Growth()); }

 private:
  // A P/D request waits in the prefill pool's queue until its first prefill step.
  QueueGrowth Growth() const {
    std::vector<std::pair<Tick, Tick>> waits;
    for (const PdRecord& r : sim_->records())
      if (r.arrived && !r.rejected && r.first_scheduled >= 0)
        waits.emplace_back(r.arrival, r.first_scheduled);
    return MeasureQueueGrowth(std::move(waits));
  }

  Scenario sc_;
  std::unique_ptr<ClusterSim> sim_;
  ClusterSummary summary_;
};

}  // namespace

const SimulationKind& ClusterKind() {
  static const SimulationKind kKind = [] {
    SimulationKind k;
    k.name = "pd";
    k.columns = {{"finished", "requests"},
                 {"rejected", "requests"},
                 {"unfinished", "requests"},
                 {"makespan_s", "s"},
                 {"ttft_mean_ms", "ms"},
                 {"ttft_p90_ms", "ms"},
                 {"ttft_p99_ms", "ms"},
                 {"queue_mean_ms", "ms"},
                 {"prefill_mean_ms", "ms"},
                 {"transfer_mean_ms", "ms"},
                 {"first_decode_mean_ms", "ms"},
                 {"wire_mean_ms", "ms"},
                 {"tpot_mean_ms", "ms"},
                 {"e2e_mean_ms", "ms"},
                 {"output_tok_per_s", "tokens/s"},
                 {"transferred_requests", "requests"},
                 {"bytes", "bytes"},
                 {"descriptors", "count"},
                 {"bytes_per_request", "bytes"},
                 {"descriptors_per_request", "count"},
                 {"max_link_utilisation", "fraction"},
                 {"prefill_hit_rate", "fraction"},
                 {"decode_hit_rate", "fraction"},
                 {"prefill_kv_usage_mean", "fraction"},
                 {"prefill_kv_usage_max", "fraction"},
                 {"decode_kv_usage_mean", "fraction"},
                 {"decode_kv_usage_max", "fraction"},
                 {"prefill_preemptions", "count"},
                 {"decode_preemptions", "count"},
                 {"overloaded", "flag"},
                 {"queue_wait_q1_s", "s"},
                 {"queue_wait_q4_s", "s"}};
    // The TTFT split, throughput, the busiest link's utilisation and the prefill and decode
    // pools' prefix hit rates, in percent.
    k.table.indent = 0;
    k.table.gap = 1;
    k.table.columns = {
        {"TTFT ms", "ttft_mean_ms", 9, 1, 1, "", false},
        {"p90", "ttft_p90_ms", 9, 1, 1, "", false},
        {"queue", "queue_mean_ms", 9, 1, 1, "", false},
        {"prefill", "prefill_mean_ms", 9, 1, 1, "", false},
        {"transfer", "transfer_mean_ms", 9, 1, 1, "", false},
        {"1st dec", "first_decode_mean_ms", 9, 1, 1, "", false},
        {"tok/s", "output_tok_per_s", 8, 0, 1, "", false},
        {"link %", "max_link_utilisation", 7, 1, 100, "", false},
        {"P hit %", "prefill_hit_rate", 8, 1, 100, "", false},
        {"D hit %", "decode_hit_rate", 8, 1, 100, "", false},
    };
    k.presentation = SimulationKind::Presentation::kReportOrTable;
    return k;
  }();
  return kKind;
}

Result<std::unique_ptr<Simulation>> MakeClusterSimulation(const Scenario& sc) {
  auto sim = ClusterSim::Create(sc);
  if (!sim.ok()) return sim.status();
  return std::unique_ptr<Simulation>(new ClusterSimulation(sc, std::move(sim.value())));
}

}  // namespace kvsim
