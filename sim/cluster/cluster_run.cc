#include "sim/cluster/cluster_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "sim/metrics_output.h"
#include "sim/output_file.h"
#include "sim/scenario/scenario_loader.h"
#include "sim/sweep/sweep_runner.h"
#include "sim/trace_export.h"

namespace kvsim {
namespace {

namespace fs = std::filesystem;

Status WriteText(const fs::path& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  return WriteFileAtomically(path.string(), text);  // whole or not at all
}

}  // namespace

const std::vector<std::string>& ClusterSweepColumns() {
  static const std::vector<std::string> kCols = {
      "finished",              "rejected",
      "unfinished",            "makespan_s",
      "ttft_mean_ms",          "ttft_p90_ms",
      "ttft_p99_ms",           "queue_mean_ms",
      "prefill_mean_ms",       "transfer_mean_ms",
      "first_decode_mean_ms",  "wire_mean_ms",
      "tpot_mean_ms",          "e2e_mean_ms",
      "output_tok_per_s",      "transferred_requests",
      "bytes",                 "descriptors",
      "bytes_per_request",     "descriptors_per_request",
      "max_link_utilisation",  "prefill_hit_rate",
      "decode_hit_rate",       "prefill_kv_usage_mean",
      "prefill_kv_usage_max",  "decode_kv_usage_mean",
      "decode_kv_usage_max",   "prefill_preemptions",
      "decode_preemptions"};
  return kCols;
}

namespace {

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

}  // namespace

std::vector<std::string> ClusterSweepValues(const ClusterSummary& s) {
  const double n = s.transferred_requests > 0 ? static_cast<double>(s.transferred_requests) : 1;
  return {std::to_string(s.finished),
          std::to_string(s.rejected),
          std::to_string(s.unfinished),
          CsvNumber(s.makespan_s),
          CsvNumber(s.ttft.mean),
          CsvNumber(s.ttft.p90),
          CsvNumber(s.ttft.p99),
          CsvNumber(s.queue.mean),
          CsvNumber(s.prefill.mean),
          CsvNumber(s.transfer.mean),
          CsvNumber(s.first_decode.mean),
          CsvNumber(s.wire.mean),
          CsvNumber(s.tpot.mean),
          CsvNumber(s.e2e.mean),
          CsvNumber(s.output_throughput),
          std::to_string(s.transferred_requests),
          std::to_string(s.bytes),
          std::to_string(s.descriptors),
          CsvNumber(static_cast<double>(s.bytes) / n),
          CsvNumber(static_cast<double>(s.descriptors) / n),
          CsvNumber(s.links.empty() ? 0.0 : s.links.front().utilisation),
          CsvNumber(s.prefill_pool.hit_rate),
          CsvNumber(s.decode_pool.hit_rate),
          CsvNumber(PoolUsageMean(s.prefill_pool)),
          CsvNumber(PoolUsageMax(s.prefill_pool)),
          CsvNumber(PoolUsageMean(s.decode_pool)),
          CsvNumber(PoolUsageMax(s.decode_pool)),
          std::to_string(s.prefill_pool.preemptions),
          std::to_string(s.decode_pool.preemptions)};
}

std::string ClusterRequestsCsv(const ClusterSim& sim) {
  std::string out =
      "id,prompt_tokens,output_tokens,prefill_instance,decode_instance,arrival_ms,ttft_ms,"
      "queue_ms,prefill_ms,transfer_ms,first_decode_ms,wire_ms,e2e_ms,prefill_hit_tokens,"
      "decode_hit_tokens,transfer_tokens,descriptors,bytes,save_relayout_bytes,"
      "receive_relayout_bytes,status\n";
  auto ms = [](Tick t) { return CsvNumber(TicksToMs(t)); };
  for (const PdRecord& r : sim.records()) {
    if (!r.arrived) continue;
    const bool done = r.finish >= 0;
    out += fmt::format("{},{},{},{},{},{},", r.id, r.prompt_tokens, r.output_tokens,
                       r.prefill_instance, r.decode_instance, ms(r.arrival));
    if (done) {
      out += fmt::format("{},{},{},{},{},{},{},", ms(r.first_token - r.arrival),
                         ms(r.prefill_start - r.arrival), ms(r.prefill_end - r.prefill_start),
                         ms(r.kv_ready - r.prefill_end), ms(r.first_token - r.kv_ready),
                         ms(r.wire_end - r.wire_start), ms(r.finish - r.arrival));
    } else {
      out += ",,,,,,,";
    }
    out += fmt::format("{},{},{},{},{},{},{},{}\n", r.prefill_hit_tokens, r.decode_hit_tokens,
                       r.transfer_tokens, r.descriptors, r.bytes, r.save_relayout_bytes,
                       r.receive_relayout_bytes,
                       r.rejected ? "rejected" : (done ? "finished" : "unfinished"));
  }
  return out;
}

ClusterPointOutput RunClusterScenario(const Scenario& sc, const std::string& label,
                                      const std::string& out_dir,
                                      const std::string& trace_path) {
  ClusterPointOutput o;
  auto sim = ClusterSim::Create(sc);
  if (!sim.ok()) {
    o.status = sim.status();
    return o;
  }
  ClusterSim& cs = *sim.value();
  std::unique_ptr<TraceRecorder> trace;
  if (!trace_path.empty()) {
    trace = std::make_unique<TraceRecorder>(sc.sim.run.trace_max_requests);
    cs.SetTrace(trace.get());
  }
  cs.Run();
  o.ran = true;
  o.summary = cs.Summary();
  o.workload = cs.workload_description();
  o.report = FormatClusterSetup(sc, cs.setup());
  o.report += "workload: " + o.workload + "\n" + FormatClusterSummary(o.summary);
  if (!out_dir.empty()) {
    const nlohmann::json m = {{"scenario", sc.name},
                              {"point", label},
                              {"workload", o.workload},
                              {"summary", ClusterSummaryToJson(o.summary)}};
    Status w = WriteText(fs::path(out_dir) / "metrics.json", m.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    if (w.ok()) w = WriteText(fs::path(out_dir) / "requests.csv", ClusterRequestsCsv(cs));
    if (!w.ok()) o.status = w;
  }
  if (trace) {
    if (Status w = trace->Write(trace_path); !w.ok() && o.status.ok()) o.status = w;
  }
  return o;
}

int RunClusterPoints(const std::vector<SweepPoint>& points, const std::string& source,
                     const ClusterRunOptions& o, std::ostream& out, std::ostream& err) {
  const bool many = points.size() > 1;
  std::map<int64_t, PointResult> results;
  RunPoints(
      points, source, o.jobs,
      [&](const SweepPoint& p) { return o.point_options ? o.point_options(p) : PointOptions{}; },
      [&](PointResult&& r) {
        CheckPointKind(r, /*cluster=*/true);
        results.emplace(r.index, std::move(r));
      });
  size_t w = 5;
  for (const SweepPoint& p : points) w = std::max(w, p.Label().size());
  std::string table;
  if (many) {
    table = fmt::format("{:<{}} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>7}\n", "point", w,
                        "TTFT ms", "p90", "queue", "prefill", "transfer", "1st dec", "tok/s",
                        "link %");
  }
  std::vector<std::string> keys;
  for (const auto& [k, v] : points.front().labels) keys.push_back(k);
  std::string csv = SweepCsvHeader(keys, /*cluster=*/true) + "\n";
  nlohmann::json jpoints = nlohmann::json::array();
  int64_t failed = 0;
  int64_t nothing_served = 0;  // points that ran but rejected every request
  for (const auto& [idx, r] : results) {
    const std::string label = LabelOf(r.labels);
    csv += SweepCsvRow(r, /*cluster=*/true, o.sweep) + "\n";
    if (!r.status.ok()) {
      ++failed;
      err << "kvsim: error" << (many ? " (point " + label + ")" : "") << ": "
          << r.status.message() << "\n";
      if (many) table += fmt::format("{:<{}} error: {}\n", label, w, r.status.code());
      jpoints.push_back(
          {{"point", label}, {"error", r.status.code()}, {"message", r.status.message()}});
      continue;
    }
    const ClusterSummary& s = r.cluster_summary;
    // Rejected requests are never silent: count them, and a point that served nothing fails.
    if (s.rejected > 0) {
      err << fmt::format(
          "kvsim: warning: {}{} of {} requests rejected (a prompt reaches max_model_len, or "
          "needs more KV blocks than an instance's cache holds)\n",
          many ? label + ": " : "", s.rejected, s.arrived);
      if (s.finished == 0) ++nothing_served;
    }
    jpoints.push_back({{"point", label}, {"summary", ClusterSummaryToJson(s)}});
    if (many) {
      table += fmt::format(
          "{:<{}} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>8.0f} {:>7.1f}\n", label,
          w, s.ttft.mean, s.ttft.p90, s.queue.mean, s.prefill.mean, s.transfer.mean,
          s.first_decode.mean, s.output_throughput,
          s.links.empty() ? 0.0 : 100.0 * s.links.front().utilisation);
    } else if (!o.json) {
      out << r.report;
    }
  }
  int rc = 0;
  if (failed > 0) rc = failed == static_cast<int64_t>(results.size()) ? 2 : 1;
  if (rc == 0 && nothing_served > 0) rc = 1;
  if (many && !o.out_dir.empty()) {
    if (Status ws = WriteText(fs::path(o.out_dir) / "summary.csv", csv); !ws.ok()) {
      err << "kvsim: error: " << ws.message() << "\n";
      rc = 4;  // the CLI's exit code for an output that could not be written
    }
  }
  if (o.json) {
    out << nlohmann::json({{"points", jpoints}, {"failed", failed}}).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else if (many) {
    out << table;
    if (failed > 0) {
      out << fmt::format("{} of {} points failed (errors above)\n", failed, results.size());
    }
  }
  if (!o.out_dir.empty() && !o.json && failed < static_cast<int64_t>(results.size())) {
    out << "outputs in " << o.out_dir << "\n";
  }
  return rc;
}

}  // namespace kvsim
