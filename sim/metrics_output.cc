#include "sim/metrics_output.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "sim/output_file.h"
#include "sim/strong_id_format.h"

namespace kvsim {
namespace {

nlohmann::ordered_json P(const Percentiles& p) {
  return {{"mean", p.mean}, {"p50", p.p50}, {"p90", p.p90},
          {"p99", p.p99},   {"max", p.max}, {"count", p.count}};
}

}  // namespace

nlohmann::ordered_json SummaryToJson(const RunSummary& s) {
  nlohmann::ordered_json j;
  j["requests"] = {{"arrived", s.requests_arrived},
                   {"finished", s.requests_finished},
                   {"rejected", s.requests_rejected},
                   {"unfinished", s.requests_unfinished}};
  j["tokens"] = {{"prompt", s.prompt_tokens},
                 {"output", s.output_tokens},
                 {"prefix_hit", s.hit_tokens},
                 {"computed", s.computed_tokens}};
  j["prefix_hit_rate"] = s.prefix_hit_rate;
  j["prefix_cache_lookups"] = {{"lookups", s.lookups},
                               {"query_tokens", s.lookup_query_tokens},
                               {"hit_tokens", s.lookup_hit_tokens}};
  j["preemptions"] = s.preemptions;
  j["steps"] = s.steps;
  j["makespan_s"] = s.makespan_s;
  j["busy_fraction"] = s.busy_fraction;
  j["throughput"] = {{"output_tokens_per_s", s.output_throughput},
                     {"total_tokens_per_s", s.total_throughput},
                     {"requests_per_s", s.request_throughput}};
  j["ttft_ms"] = P(s.ttft_ms);
  j["tpot_ms"] = P(s.tpot_ms);
  j["itl_ms"] = P(s.itl_ms);
  j["e2e_ms"] = P(s.e2e_ms);
  j["queue_ms"] = P(s.queue_ms);
  j["kv_usage"] = {{"mean", s.kv_usage_mean}, {"max", s.kv_usage_max}};
  j["padding"] = {{"kv_bytes_total", s.kv_bytes_total},
                  {"padding_bytes_total", s.padding_bytes_total},
                  {"padding_bytes_in_use_mean", s.padding_bytes_in_use_mean}};
  j["spec_acceptance"] = s.spec_acceptance;
  if (!s.ranks.empty()) {
    nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
    for (const InstanceSummary& r : s.ranks) {
      ranks.push_back({{"rank", r.name},
                       {"requests", r.requests},
                       {"steps", r.steps},
                       {"preemptions", r.preemptions},
                       {"prefix_cache_lookups",
                        {{"lookups", r.lookups},
                         {"query_tokens", r.query_tokens},
                         {"hit_tokens", r.hit_tokens}}},
                       {"prefix_hit_rate", r.hit_rate},
                       {"kv_usage", {{"mean", r.kv_usage_mean}, {"max", r.kv_usage_max}}}});
    }
    j["ranks"] = ranks;
  }
  return j;
}

std::string FormatRanks(const RunSummary& s) {
  std::string out;
  for (const InstanceSummary& r : s.ranks) {
    out += fmt::format(
        "  {}: {} requests, {} steps, {} preemptions, prefix hit rate {:.1f}% ({} of {} lookup "
        "tokens), KV usage mean/max {:.1f}/{:.1f}%\n",
        r.name, r.requests, r.steps, r.preemptions, 100.0 * r.hit_rate, r.hit_tokens,
        r.query_tokens, 100.0 * r.kv_usage_mean, 100.0 * r.kv_usage_max);
  }
  return out;
}

nlohmann::ordered_json LabelsToJson(const Labels& labels) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [k, v] : labels) {
    const char* first = v.data();
    const char* last = v.data() + v.size();
    int64_t i = 0;
    double d = 0;
    if (v == "true" || v == "false") {
      j[k] = v == "true";
    } else if (v == "null") {
      j[k] = nullptr;
    } else if (auto [p, ec] = std::from_chars(first, last, i); ec == std::errc() && p == last) {
      j[k] = i;
    } else if (auto [q, ec2] = std::from_chars(first, last, d);
               ec2 == std::errc() && q == last && std::isfinite(d)) {
      j[k] = d;
    } else {
      j[k] = v;
    }
  }
  return j;
}

nlohmann::ordered_json RunToJson(const Engine& e, const Labels& labels) {
  const Scenario& sc = e.scenario();
  const KvCachePlan& plan = e.plan();
  nlohmann::ordered_json j;
  // The scenario's path is in provenance.json, not here: metrics.json depends only on the
  // scenario's content, so rerunning DIR/scenario.resolved.yaml reproduces it byte for byte.
  j["scenario"] = sc.name;
  j["seed"] = sc.seed;
  j["point"] = LabelsToJson(labels);
  j["model"] = sc.model.name;
  j["hardware"] = {{"name", sc.sim.hardware.name}, {"source", sc.sim.hardware_source}};
  j["workload"] = e.workload_description();
  if (!e.workload_note().empty()) j["workload_note"] = e.workload_note();
  j["plan"] = {{"attn_block_size", plan.attn_block_size},
               {"mamba_block_size", plan.mamba_block_size},
               {"attn_pack_size", plan.config.attn_pack_size},
               {"num_blocks", plan.num_blocks},
               {"block_bytes", plan.block_bytes},
               {"kv_bytes", plan.total_bytes()},
               {"padding_fraction", plan.padding_fraction()},
               {"kv_cache_size_tokens", plan.kv_cache_size_tokens}};
  j["summary"] = SummaryToJson(e.Summary());
  if (std::string why = DescribeRejections(e); !why.empty()) j["rejections"] = why;
  nlohmann::ordered_json series = nlohmann::ordered_json::array();
  for (const KvSample& s : e.metrics().kv_series()) {
    series.push_back({static_cast<double>(s.tick) / 1e9, s.usage, s.running, s.waiting});
  }
  j["kv_usage_series"] = {{"columns", {"t_s", "usage", "running", "waiting"}}, {"rows", series}};
  return j;
}

Status WriteRunOutputs(const Engine& e, const Labels& labels, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::Error("io_error", dir + ": cannot create directory: " + ec.message());
  if (Status s = WriteFileAtomically(
          dir + "/metrics.json",
          RunToJson(e, labels).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
              "\n");
      !s.ok()) {
    return s;
  }
  return WriteFileAtomically(dir + "/requests.csv", RequestsCsv(e));
}

std::string RequestsCsv(const Engine& e) {
  std::string csv =
      "id,group,turn,arrival_ms,first_scheduled_ms,first_token_ms,finish_ms,prompt_tokens,"
      "output_tokens,cached_tokens,preemptions,status\n";
  auto ms = [](Tick t) { return t < 0 ? std::string() : fmt::format("{:.6f}", t / 1e6); };
  for (const RequestRecord& r : e.metrics().records()) {
    if (!r.arrived) continue;  // an id that never arrived (the run stopped first)
    const char* status = r.rejected ? "rejected" : r.finish >= 0 ? "finished" : "unfinished";
    csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{}\n", r.id, r.group, r.turn,
                       ms(r.arrival), ms(r.first_scheduled), ms(r.first_token), ms(r.finish),
                       r.prompt_tokens, r.output_tokens, r.cached_tokens, r.preemptions, status);
  }
  return csv;
}

QueueGrowth MeasureQueueGrowth(std::vector<std::pair<Tick, Tick>> waits) {
  QueueGrowth g;
  g.served = static_cast<int64_t>(waits.size());
  if (waits.size() < 4) return g;
  // Arrival order; ties keep the order given (records are in id order, so runs agree).
  std::stable_sort(waits.begin(), waits.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  const size_t quarter = waits.size() / 4;
  auto mean_wait_s = [&](size_t from) {
    double sum = 0;
    for (size_t i = from; i < from + quarter; ++i)
      sum += static_cast<double>(waits[i].second - waits[i].first);
    return sum / static_cast<double>(quarter) / static_cast<double>(kTicksPerSecond);
  };
  g.first_quarter_wait_s = mean_wait_s(0);
  g.last_quarter_wait_s = mean_wait_s(waits.size() - quarter);
  g.overloaded = waits.size() >= 40 && g.last_quarter_wait_s > 1.0 &&
                 g.last_quarter_wait_s > 4.0 * g.first_quarter_wait_s;
  return g;
}

QueueGrowth MeasureQueueGrowth(std::span<const RequestRecord> records) {
  std::vector<std::pair<Tick, Tick>> waits;
  for (const RequestRecord& r : records)
    if (!r.rejected && r.first_scheduled >= 0) waits.emplace_back(r.arrival, r.first_scheduled);
  return MeasureQueueGrowth(std::move(waits));
}

std::string DescribeOverload(const QueueGrowth& g) {
  if (!g.overloaded) return "";
  return fmt::format(
      "the queue grew through the run: the last quarter of the requests waited {:.1f} s on "
      "average before their first step, the first quarter {:.2f} s; the arrivals exceed what "
      "the engine serves, so TTFT measures the backlog",
      g.last_quarter_wait_s, g.first_quarter_wait_s);
}

std::string DescribeOverload(std::span<const RequestRecord> records) {
  return DescribeOverload(MeasureQueueGrowth(records));
}

std::string DescribeRejections(const Engine& e) {
  const Scenario& sc = e.scenario();
  const KvCachePlan& plan = e.plan();
  const int64_t max_len = plan.max_model_len;
  const int64_t budget = sc.scheduler.max_num_batched_tokens;
  const bool chunked = sc.sim.scheduler.enable_chunked_prefill;
  int64_t arrived = 0, too_long = 0, over_budget = 0, no_room = 0;
  int64_t longest = 0;
  for (const RequestRecord& r : e.metrics().records()) {
    if (!r.arrived) continue;  // as the summarizer counts them
    ++arrived;
    if (!r.rejected) continue;
    longest = std::max(longest, r.prompt_tokens);
    if (max_len > 0 && r.prompt_tokens >= max_len) {
      ++too_long;
    } else if (!chunked && r.prompt_tokens > budget) {
      ++over_budget;
    } else {
      ++no_room;
    }
  }
  const int64_t rejected = too_long + over_budget + no_room;
  if (rejected == 0) return "";
  std::string why;
  auto add = [&](int64_t n, const std::string& reason) {
    if (n == 0) return;
    why += fmt::format("{}{} × {}", why.empty() ? "" : "; ", n, reason);
  };
  add(too_long, fmt::format("prompt ≥ max_model_len {}", max_len));
  add(over_budget,
      fmt::format("prompt above the token budget {} with chunked prefill off", budget));
  add(no_room, fmt::format("needs more KV blocks than the cache holds ({} usable blocks of {} "
                           "tokens; longest rejected prompt {} tokens)",
                           plan.usable_blocks(), plan.attn_block_size, longest));
  return fmt::format("{} of {} requests rejected: {}", rejected, arrived, why);
}

}  // namespace kvsim
