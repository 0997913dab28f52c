// What a P/D run writes and prints (sim/cluster/cluster_sim.h): its summary as metrics.json's
// object and as `kvsim run`'s text, and requests.csv (docs/columns.md).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "sim/cluster/cluster_sim.h"
#include "sim/csv.h"
#include "sim/report/plan_report.h"
#include "sim/strong_id_format.h"

namespace kvsim {

namespace {

nlohmann::json StatsJson(const Percentiles& p) {
  return {{"mean", p.mean}, {"p50", p.p50}, {"p90", p.p90},
          {"p99", p.p99},   {"max", p.max}, {"count", p.count}};
}

nlohmann::json PoolJson(const PoolSummary& p) {
  nlohmann::json j = {{"kv_usage_mean", p.kv_usage_mean}, {"kv_usage_max", p.kv_usage_max},
                      {"requests", p.requests},           {"lookups", p.lookups},
                      {"query_tokens", p.query_tokens},   {"hit_tokens", p.hit_tokens},
                      {"hit_rate", p.hit_rate},           {"steps", p.steps},
                      {"preemptions", p.preemptions},     {"spec_drafts", p.spec_drafts},
                      {"spec_accepted", p.spec_accepted}, {"spec_acceptance", p.spec_acceptance}};
  if (p.has_cpu_tier) {
    j["cpu_tier"] = {{"hit_tokens", p.cpu_hit_tokens},
                     {"bytes_loaded", p.cpu_bytes_loaded},
                     {"bytes_stored", p.cpu_bytes_stored}};
  }
  return j;
}

std::string StatLine(const char* name, const Percentiles& p) {
  return fmt::format("  {:<22} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f}\n", name, p.mean, p.p50,
                     p.p90, p.p99);
}

}  // namespace

nlohmann::json ClusterSummaryToJson(const ClusterSummary& s) {
  nlohmann::json links = nlohmann::json::array();
  for (const auto& l : s.links) {
    links.push_back({{"link", l.name},
                     {"capacity_gbytes_per_s", l.capacity_gbytes_per_s},
                     {"bytes", l.bytes},
                     {"utilisation", l.utilisation}});
  }
  return {{"requests",
           {{"arrived", s.arrived},
            {"finished", s.finished},
            {"rejected", s.rejected},
            {"unfinished", s.unfinished}}},
          {"makespan_s", s.makespan_s},
          {"output_throughput", s.output_throughput},
          {"ttft_ms", StatsJson(s.ttft)},
          {"ttft_split_ms",
           {{"queue", StatsJson(s.queue)},
            {"prefill", StatsJson(s.prefill)},
            {"transfer", StatsJson(s.transfer)},
            {"first_decode", StatsJson(s.first_decode)}}},
          {"wire_ms", StatsJson(s.wire)},
          {"tpot_ms", StatsJson(s.tpot)},
          {"itl_ms", StatsJson(s.itl)},
          {"e2e_ms", StatsJson(s.e2e)},
          {"transfer",
           {{"requests", s.transferred_requests},
            {"bytes", s.bytes},
            {"descriptors", s.descriptors},
            {"save_relayout_bytes", s.save_relayout_bytes},
            {"receive_relayout_bytes", s.receive_relayout_bytes},
            {"decode_hit_tokens", s.decode_hit_tokens}}},
          {"prefill_pool", PoolJson(s.prefill_pool)},
          {"decode_pool", PoolJson(s.decode_pool)},
          {"links", links}};
}

std::string FormatClusterSummary(const ClusterSummary& s) {
  std::string out = fmt::format(
      "requests: {} arrived, {} finished, {} rejected, {} unfinished; makespan {:.2f} s, "
      "{:.0f} output tok/s\n",
      s.arrived, s.finished, s.rejected, s.unfinished, s.makespan_s, s.output_throughput);
  out += fmt::format("  {:<22} {:>10} {:>10} {:>10} {:>10}\n", "latency (ms)", "mean", "p50", "p90",
                     "p99");
  out += StatLine("TTFT", s.ttft);
  out += StatLine("  queue", s.queue);
  out += StatLine("  prefill", s.prefill);
  out += StatLine("  transfer", s.transfer);
  out += StatLine("  first decode", s.first_decode);
  out += StatLine("wire (in transfer)", s.wire);
  out += StatLine("TPOT", s.tpot);
  out += StatLine("ITL", s.itl);
  out += StatLine("E2E", s.e2e);
  out += fmt::format(
      "KV transfer: {} requests, {} over {} descriptors ({:.0f} per request); re-layout {} on "
      "save, {} on receive; {} prompt tokens already on the decoder\n",
      s.transferred_requests, HumanBytes(static_cast<double>(s.bytes)), WithCommas(s.descriptors),
      s.transferred_requests
          ? static_cast<double>(s.descriptors) / static_cast<double>(s.transferred_requests)
          : 0.0,
      HumanBytes(static_cast<double>(s.save_relayout_bytes)),
      HumanBytes(static_cast<double>(s.receive_relayout_bytes)), WithCommas(s.decode_hit_tokens));
  for (const PoolSummary* p : {&s.prefill_pool, &s.decode_pool}) {
    std::string usage;
    for (size_t i = 0; i < p->kv_usage_mean.size(); ++i) {
      usage += fmt::format("{}{:.1f}/{:.1f}", i ? " " : "", 100.0 * p->kv_usage_mean[i],
                           100.0 * p->kv_usage_max[i]);
    }
    std::string spec;
    if (p->spec_drafts > 0) {
      spec = fmt::format(", spec acceptance {:.1f}% ({} of {} drafts)", 100.0 * p->spec_acceptance,
                         WithCommas(p->spec_accepted), WithCommas(p->spec_drafts));
    }
    out += fmt::format(
        "{} pool: prefix hit rate {:.1f}% ({} of {} tokens, {} lookups), {} steps, {} "
        "preemptions{}, KV usage mean/max % per instance: {}\n",
        p->role, 100.0 * p->hit_rate, WithCommas(p->hit_tokens), WithCommas(p->query_tokens),
        p->lookups, p->steps, p->preemptions, spec, usage);
    if (p->has_cpu_tier) {
      out += fmt::format("  CPU tier: {} prompt tokens hit, {} loaded, {} stored\n",
                         WithCommas(p->cpu_hit_tokens),
                         HumanBytes(static_cast<double>(p->cpu_bytes_loaded)),
                         HumanBytes(static_cast<double>(p->cpu_bytes_stored)));
    }
  }
  out += "links (utilisation over the makespan):\n";
  for (size_t i = 0; i < s.links.size() && i < 6; ++i) {
    const LinkSummary& l = s.links[i];
    out += fmt::format("  {:<28} {:>6.1f}%  {} at {:.0f} GB/s\n", l.name, 100.0 * l.utilisation,
                       HumanBytes(l.bytes), l.capacity_gbytes_per_s);
  }
  return out;
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
                         ms(r.first_scheduled - r.arrival), ms(r.prefill_end - r.first_scheduled),
                         ms(r.kv_ready - r.prefill_end), ms(r.first_token - r.kv_ready),
                         ms(r.wire_end - r.wire_start), ms(r.finish - r.arrival));
    } else {
      out += ",,,,,,,";
    }
    out += fmt::format("{},{},{},{},{},{},{},{}\n", r.cached_tokens, r.decode_hit_tokens,
                       r.transfer_tokens, r.descriptors, r.bytes, r.save_relayout_bytes,
                       r.receive_relayout_bytes,
                       r.rejected ? "rejected" : (done ? "finished" : "unfinished"));
  }
  return out;
}

}  // namespace kvsim
