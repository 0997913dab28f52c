#include "sim/cluster/cluster_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "sim/scenario/scenario_loader.h"

namespace kvsim {
namespace {

namespace fs = std::filesystem;

std::string Num(double v) { return fmt::format("{:.6g}", v); }

Status WriteText(const fs::path& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) return Status::Error("io_error", "cannot write " + path.string());
  return Status::Ok();
}

std::string Label(const SweepPoint& p) {
  std::string s;
  for (const auto& [k, v] : p.labels) s += (s.empty() ? "" : " ") + k + "=" + v;
  return s;
}

}  // namespace

const std::vector<std::string>& ClusterSweepColumns() {
  static const std::vector<std::string> kCols = {
      "finished",         "rejected",          "ttft_mean_ms",     "ttft_p99_ms",
      "queue_mean_ms",    "prefill_mean_ms",   "transfer_mean_ms", "first_decode_mean_ms",
      "wire_mean_ms",     "tpot_mean_ms",      "output_tok_per_s", "bytes_per_request",
      "descriptors_per_request", "max_link_utilisation", "prefill_hit_rate",
      "decode_hit_rate"};
  return kCols;
}

std::vector<std::string> ClusterSweepValues(const ClusterSummary& s) {
  const double n = s.transferred_requests > 0 ? static_cast<double>(s.transferred_requests) : 1;
  return {std::to_string(s.finished),
          std::to_string(s.rejected),
          Num(s.ttft.mean),
          Num(s.ttft.p99),
          Num(s.queue.mean),
          Num(s.prefill.mean),
          Num(s.transfer.mean),
          Num(s.first_decode.mean),
          Num(s.wire.mean),
          Num(s.tpot.mean),
          Num(s.output_throughput),
          Num(static_cast<double>(s.bytes) / n),
          Num(static_cast<double>(s.descriptors) / n),
          Num(s.links.empty() ? 0.0 : s.links.front().utilisation),
          Num(s.prefill_pool.hit_rate),
          Num(s.decode_pool.hit_rate)};
}

std::string ClusterRequestsCsv(const ClusterSim& sim) {
  std::string out =
      "id,prompt_tokens,output_tokens,prefill_instance,decode_instance,arrival_ms,ttft_ms,"
      "queue_ms,prefill_ms,transfer_ms,first_decode_ms,wire_ms,e2e_ms,prefill_hit_tokens,"
      "decode_hit_tokens,transfer_tokens,descriptors,bytes,save_relayout_bytes,"
      "receive_relayout_bytes,status\n";
  auto ms = [](Tick t) { return Num(static_cast<double>(t) / 1e6); };
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

int RunClusterPoints(const std::vector<SweepPoint>& points, const std::string& source,
                     const ClusterRunOptions& o, std::ostream& out, std::ostream& err) {
  const bool many = points.size() > 1;
  int rc = 0;
  nlohmann::json jpoints = nlohmann::json::array();
  std::string table;
  std::string csv;
  size_t w = 5;
  for (const SweepPoint& p : points) w = std::max(w, Label(p).size());
  if (many) {
    table = fmt::format("{:<{}} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>7}\n", "point", w,
                        "TTFT ms", "p99", "queue", "prefill", "transfer", "1st dec", "tok/s",
                        "link %");
    csv = "point";
    for (const auto& [k, v] : points.front().labels) csv += "," + k;
    csv += ",status";
    for (const auto& c : ClusterSweepColumns()) csv += "," + c;
    csv += "\n";
  }
  for (const SweepPoint& p : points) {
    const fs::path dir = o.out_dir.empty()
                             ? fs::path()
                             : (many ? fs::path(o.out_dir) / "points" / fmt::format("{:04d}", p.index)
                                     : fs::path(o.out_dir));
    std::string csv_row = std::to_string(p.index);
    for (const auto& [k, v] : p.labels) csv_row += "," + v;
    auto fail = [&](const Status& s) {
      rc = 2;
      err << "kvsim: error" << (many ? " (point " + Label(p) + ")" : "") << ": " << s.message()
          << "\n";
      if (many) {
        table += fmt::format("{:<{}} error: {}\n", Label(p), w, s.code());
        csv += csv_row + ",error: " + s.code() + "\n";
      }
      jpoints.push_back({{"point", Label(p)}, {"error", s.code()}, {"message", s.message()}});
    };
    auto sc = ParseScenario(p.tree, source);
    if (!sc.ok()) {
      fail(sc.status());
      continue;
    }
    auto sim = ClusterSim::Create(sc.value());
    if (!sim.ok()) {
      fail(sim.status());
      continue;
    }
    sim.value()->Run();
    const ClusterSummary s = sim.value()->Summary();
    const nlohmann::json js = ClusterSummaryToJson(s);
    if (!dir.empty()) {
      nlohmann::json m = {{"scenario", sc->name}, {"point", Label(p)},
                          {"workload", sim.value()->workload_description()}, {"summary", js}};
      Status w = WriteText(dir / "metrics.json", m.dump(2) + "\n");
      if (w.ok()) w = WriteText(dir / "requests.csv", ClusterRequestsCsv(*sim.value()));
      if (!w.ok()) {
        fail(w);
        continue;
      }
    }
    jpoints.push_back({{"point", Label(p)}, {"summary", js}});
    if (many) {
      table += fmt::format("{:<{}} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>8.0f} {:>7.1f}\n",
                           Label(p), w, s.ttft.mean, s.ttft.p99, s.queue.mean, s.prefill.mean,
                           s.transfer.mean, s.first_decode.mean, s.output_throughput,
                           s.links.empty() ? 0.0 : 100.0 * s.links.front().utilisation);
      csv += csv_row + ",ok";
      for (const auto& v : ClusterSweepValues(s)) csv += "," + v;
      csv += "\n";
    } else if (!o.json) {
      auto setup = BuildClusterSetup(sc.value());
      if (setup.ok()) out << FormatClusterSetup(sc.value(), setup.value());
      out << "workload: " << sim.value()->workload_description() << "\n"
          << FormatClusterSummary(s);
    }
  }
  if (many && !o.out_dir.empty()) {
    if (Status w = WriteText(fs::path(o.out_dir) / "summary.csv", csv); !w.ok()) {
      err << "kvsim: error: " << w.message() << "\n";
      rc = 2;
    }
  }
  if (o.json) {
    out << nlohmann::json({{"points", jpoints}}).dump(2) << "\n";
  } else if (many) {
    out << table;
  }
  if (!o.out_dir.empty() && !o.json) out << "outputs in " << o.out_dir << "\n";
  return rc;
}

}  // namespace kvsim
