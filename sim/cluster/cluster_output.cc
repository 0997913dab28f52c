// What a P/D run reports (sim/cluster/cluster_sim.h): its summary from the records and the
// instances, the requests' phases in its trace, the summary as metrics.json's object and as
// `kvsim run`'s text, and requests.csv (docs/columns.md).
#include <fmt/format.h>
#include <algorithm>

#include <nlohmann/json.hpp>

#include "sim/cluster/cluster_sim.h"
#include "sim/instance/instance_core.h"
#include "sim/instance/offload_driver.h"
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

// Request phases come from the records once the run is over: every boundary is known then,
// and the phases of one request nest properly (wait for blocks and wire inside transfer).
void ClusterSim::TraceRequests() {
  for (const PdRecord& r : records_) {
    if (!r.arrived || !trace_->keeps(r.id)) continue;
    if (r.rejected) {
      trace_->RequestInstant(r.id, "rejected", r.arrival);
      continue;
    }
    const std::string p = fmt::format(R"("prefill_instance":{})", r.prefill_instance);
    if (r.first_scheduled >= 0) trace_->RequestPhase(r.id, "queued", r.arrival, r.first_scheduled);
    if (r.prefill_end >= 0) {
      trace_->RequestPhase(r.id, "prefill", r.first_scheduled, r.prefill_end,
                           fmt::format(R"({},"hit_tokens":{})", p, r.cached_tokens));
    }
    if (r.kv_ready >= 0) {
      trace_->RequestPhase(
          r.id, "transfer", r.prefill_end, r.kv_ready,
          fmt::format(R"({},"decode_instance":{},"tokens":{},"bytes":{},"descriptors":{})", p,
                      r.decode_instance, r.transfer_tokens, r.bytes, r.descriptors));
      if (r.reserved > r.prefill_end) {
        trace_->RequestPhase(r.id, "wait_decode_blocks", r.prefill_end, r.reserved);
      }
      trace_->RequestPhase(r.id, "wire", r.wire_start, r.wire_end);
    }
    if (r.first_token >= 0) {
      trace_->RequestPhase(r.id, "first_decode", r.kv_ready, r.first_token,
                           fmt::format(R"("decode_instance":{})", r.decode_instance));
    }
    if (r.finish >= 0 && r.finish > r.first_token) {
      trace_->RequestPhase(r.id, "decode", r.first_token, r.finish);
    }
  }
}

ClusterSummary ClusterSim::Summary() const {
  ClusterSummary s;
  // What every deployment reports (the one summarizer), then the P/D parts of TTFT and the
  // transfers.
  RequestSummarizer summarizer;
  std::vector<double> prefill, transfer, first, wire;
  for (const PdRecord& r : records_) {
    summarizer.Add(r);
    if (!r.arrived || r.rejected) continue;
    if (r.transfers > 0) {
      ++s.transferred_requests;
      s.bytes += r.bytes;
      s.descriptors += r.descriptors;
      s.save_relayout_bytes += r.save_relayout_bytes;
      s.receive_relayout_bytes += r.receive_relayout_bytes;
      s.decode_hit_tokens += r.decode_hit_tokens;
    }
    if (r.finish < 0) continue;
    prefill.push_back(TicksToMs(r.prefill_end - r.first_scheduled));
    transfer.push_back(TicksToMs(r.kv_ready - r.prefill_end));
    first.push_back(TicksToMs(r.first_token - r.kv_ready));
    wire.push_back(TicksToMs(r.wire_end - r.wire_start));
  }
  const RequestSummary rs = summarizer.Finish(now());
  s.arrived = rs.arrived;
  s.finished = rs.finished;
  s.rejected = rs.rejected;
  s.unfinished = rs.unfinished;
  const Tick span = rs.span;
  s.makespan_s = rs.makespan_s;
  s.ttft = rs.ttft_ms;
  s.queue = rs.queue_ms;
  s.tpot = rs.tpot_ms;
  s.e2e = rs.e2e_ms;
  s.prefill = ExactPercentiles(prefill);
  s.transfer = ExactPercentiles(transfer);
  s.first_decode = ExactPercentiles(first);
  s.wire = ExactPercentiles(wire);
  s.output_throughput = static_cast<double>(rs.output_tokens) / s.makespan_s;
  const Percentiles itl = itl_.Summarize();  // in ticks; as ms, as Metrics::Summarize
  s.itl = {itl.mean / 1e6, itl.p50 / 1e6, itl.p90 / 1e6, itl.p99 / 1e6, itl.max / 1e6, itl.count};
  for (int role = 0; role < 2; ++role) {
    PoolSummary& ps = role == 0 ? s.prefill_pool : s.decode_pool;
    ps.role = role == 0 ? "prefill" : "decode";
    for (size_t k = 0; k < inst_.size(); ++k) {
      const Instance* in = inst_[k].get();
      if (in->prefill() != (role == 0)) continue;
      const InstanceUsage& u = loop_->usage(static_cast<int>(k));
      ps.kv_usage_mean.push_back(u.area / static_cast<double>(span));
      ps.kv_usage_max.push_back(u.max);
      ps.requests.push_back(u.requests);
      const PrefixCacheStats& st = in->core.inst().kv().stats();
      ps.lookups += st.requests;
      ps.query_tokens += st.query_tokens;
      ps.hit_tokens += st.hit_tokens;
      ps.steps += in->core.steps();
      ps.preemptions += in->core.preemptions();
      ps.spec_drafts += in->core.inst().drafts_scheduled();
      ps.spec_accepted += in->core.inst().drafts_accepted();
      if (const OffloadDriver* off = in->core.offload()) {
        ps.has_cpu_tier = true;
        ps.cpu_hit_tokens += in->cpu_hit_tokens;
        ps.cpu_bytes_loaded += off->blocks_loaded() * in->core.offload_block_bytes();
        ps.cpu_bytes_stored += off->blocks_stored() * in->core.offload_block_bytes();
      }
    }
    ps.spec_acceptance = ps.spec_drafts > 0 ? static_cast<double>(ps.spec_accepted) /
                                                  static_cast<double>(ps.spec_drafts)
                                            : 0.0;
    ps.hit_rate = ps.query_tokens > 0
                      ? static_cast<double>(ps.hit_tokens) / static_cast<double>(ps.query_tokens)
                      : 0.0;
  }
  const auto& carried = transfers_->network().carried_bytes();
  for (int r = 0; r < setup_.topology.num_resources(); ++r) {
    const double b = carried[static_cast<size_t>(r)];
    if (b <= 0) continue;
    const double cap = setup_.topology.link(r / 2).bytes_per_ns;
    s.links.push_back(
        {setup_.topology.ResourceName(r), cap, b, b / (cap * static_cast<double>(span))});
  }
  std::stable_sort(s.links.begin(), s.links.end(), [](const LinkSummary& a, const LinkSummary& b) {
    return a.utilisation > b.utilisation;
  });
  return s;
}

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
