// Writing a single engine's outputs: metrics.json (summary, plan facts, KV usage series)
// and the per-request CSV, and why requests were rejected. Numbers are printed with fixed
// formats so the same run always gives the same bytes. (The engine's sweep row and table
// row are its MetricSet: sim/run/engine_simulation.cc.)
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>

#include "core/status.h"
#include "sim/engine.h"
#include "sim/labels.h"

namespace kvsim {

nlohmann::ordered_json SummaryToJson(const RunSummary& s);
// A point's labels as a JSON object, each value typed as the scenario wrote it: integers and
// decimals as numbers, true/false as booleans, null as null, anything else as a string
// ({"cache.block_size": 16, "cluster.topology.ratio": "2:2"}).
nlohmann::ordered_json LabelsToJson(const Labels& labels);
nlohmann::ordered_json RunToJson(const Engine& e, const Labels& labels);

// Writes DIR/metrics.json and DIR/requests.csv (creating DIR).
Status WriteRunOutputs(const Engine& e, const Labels& labels, const std::string& dir);

// Why requests of a run were rejected, for the reader of the table: "" when none were,
// else "R of N requests rejected: a × <reason>; b × <reason>". A request is rejected on
// arrival when its prompt reaches max_model_len or needs more blocks than the cache has, or
// later when it cannot be scheduled even into an empty engine (a prompt above the token
// budget with chunked prefill off); the reasons are told apart from the scenario here, so
// the engine only records the fact.
std::string DescribeRejections(const Engine& e);

// An overload note for the reader of the table: "" unless the queue grew through the run.
// Of the requests that were scheduled, taken in arrival order, the last quarter waited (first
// scheduled − arrival) on average more than 1 s and more than 4× the first quarter's wait
// (at least 40 such requests). Then TTFT measures the backlog, not the engine: the arrivals
// exceed what it serves. `records` as Metrics keeps them.
std::string DescribeOverload(std::span<const RequestRecord> records);

}  // namespace kvsim
