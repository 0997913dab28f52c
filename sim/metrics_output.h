// Writing a single engine's outputs: metrics.json (summary, plan facts, KV usage series)
// and the per-request CSV, and why requests were rejected. Numbers are printed with fixed
// formats so the same run always gives the same bytes. (The engine's sweep row and table
// row are its MetricSet: sim/run/engine_simulation.cc.)
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "sim/engine.h"
#include "sim/labels.h"

namespace kvsim {

nlohmann::ordered_json SummaryToJson(const RunSummary& s);
// One line per data-parallel rank (RunSummary::ranks; "" without DP).
std::string FormatRanks(const RunSummary& s);
// A point's labels as a JSON object, each value typed as the scenario wrote it: integers and
// decimals as numbers, true/false as booleans, null as null, anything else as a string
// ({"cache.block_size": 16, "cluster.topology.ratio": "2:2"}).
nlohmann::ordered_json LabelsToJson(const Labels& labels);
nlohmann::ordered_json RunToJson(const Engine& e, const Labels& labels);

// Writes DIR/metrics.json and DIR/requests.csv (creating DIR).
Status WriteRunOutputs(const Engine& e, const Labels& labels, const std::string& dir);
// requests.csv's text: a header, then one line per request.
std::string RequestsCsv(const Engine& e);

// Why requests of a run were rejected, for the reader of the table: "" when none were,
// else "R of N requests rejected: a × <reason>; b × <reason>". A request is rejected on
// arrival when its prompt reaches max_model_len or needs more blocks than the cache has, or
// later when it cannot be scheduled even into an empty engine (a prompt above the token
// budget with chunked prefill off); the reasons are told apart from the scenario here, so
// the engine only records the fact.
std::string DescribeRejections(const Engine& e);

// Whether the queue grew through a run, from each served request's arrival and first step
// (a request counts once it has been scheduled at least once). Taken in arrival order, the
// mean wait (first step − arrival) of the first and of the last quarter of them; the run is
// overloaded when the last quarter waited more than 1 s on average and more than 4× the
// first quarter, with at least 40 served requests. Then TTFT measures the backlog, not the
// engine: the arrivals exceed what it serves. Every kind reports the three numbers as the
// CSV columns overloaded, queue_wait_q1_s and queue_wait_q4_s (docs/columns.md).
struct QueueGrowth {
  int64_t served = 0;
  double first_quarter_wait_s = 0;  // 0 with fewer than 4 served requests
  double last_quarter_wait_s = 0;
  bool overloaded = false;
};
// `waits` holds (arrival, first step) per served request, in any order.
QueueGrowth MeasureQueueGrowth(std::vector<std::pair<Tick, Tick>> waits);
QueueGrowth MeasureQueueGrowth(std::span<const RequestRecord> records);
// The note for the reader of the table: "" unless `g.overloaded`.
std::string DescribeOverload(const QueueGrowth& g);
// DescribeOverload(MeasureQueueGrowth(records)).
std::string DescribeOverload(std::span<const RequestRecord> records);

}  // namespace kvsim
