#include "viz/step_log.h"
#include "sim/json_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

namespace kvsim::viz {
namespace {

using nlohmann::json;

// Interns request ids so that chunks carry small integers.
class RequestIndex {
 public:
  explicit RequestIndex(std::vector<std::string>* ids) : ids_(ids) {}
  int32_t Get(const std::string& id) {
    auto [it, inserted] = index_.emplace(id, static_cast<int32_t>(ids_->size()));
    if (inserted) ids_->push_back(id);
    return it->second;
  }

 private:
  std::vector<std::string>* ids_;
  std::unordered_map<std::string, int32_t> index_;
};

bool IsInt(const json& j) { return j.is_number_integer() || j.is_number_unsigned(); }

// What the classification needs to remember about one request across steps.
struct RequestState {
  int64_t computed = 0;        // before + n of its last chunk
  int64_t high_water = 0;      // tokens computed before its last preemption
  int64_t first_token_step = -1;  // from the summary line (-1: unknown)
  bool running = false;
};

}  // namespace

int64_t StepRecord::num_scheduled_tokens() const {
  int64_t t = 0;
  for (const StepChunk& c : scheduled) t += c.n;
  return t;
}

Result<StepLog> ParseStepLog(std::string_view text, const std::string& source,
                             int64_t max_steps) {
  StepLog log;
  RequestIndex index(&log.request_ids);
  std::vector<json> records;
  std::vector<int64_t> record_line;
  json summary;
  int64_t lineno = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    auto bad = [&](const std::string& what) {
      return Status::Error("bad_step_log", fmt::format("{}:{}: {}", source, lineno, what));
    };
    json j = ParseJsonNoThrow<json>(line);
    if (!j.is_object()) return bad("not a JSON object (a step log has one record per line)");
    if (j.contains("summary")) {
      summary = std::move(j);
      continue;
    }
    if (static_cast<int64_t>(records.size()) >= max_steps) {
      return bad(fmt::format("more than {} steps; the viewer keeps at most that many",
                             max_steps));
    }
    for (const char* key : {"step", "num_free_blocks"}) {
      if (!j.contains(key) || !IsInt(j[key])) return bad(fmt::format("'{}': expected an integer", key));
    }
    for (const char* key : {"scheduled", "preempted", "finished"}) {
      if (!j.contains(key) || !j[key].is_array()) return bad(fmt::format("'{}': expected a list", key));
    }
    for (const json& e : j["scheduled"]) {
      if (!e.is_array() || e.size() != 4 || !e[0].is_string() || !IsInt(e[1]) || !IsInt(e[2]) ||
          !IsInt(e[3])) {
        return bad("'scheduled': each entry must be [id, n, before, hit]");
      }
    }
    for (const char* key : {"preempted", "finished"}) {
      for (const json& e : j[key]) {
        if (!e.is_string()) return bad(fmt::format("'{}': expected a list of request ids", key));
      }
    }
    if (!records.empty() && j["step"].get<int64_t>() <= records.back()["step"].get<int64_t>()) {
      return bad("'step': steps must increase from record to record");
    }
    records.push_back(std::move(j));
    record_line.push_back(lineno);
  }
  if (records.empty()) {
    return Status::Error("bad_step_log", source + ": no step records");
  }

  std::vector<int64_t> first_token_step;
  if (summary.is_object() && summary.contains("per_request") &&
      summary["per_request"].is_object()) {
    log.has_summary = true;
    for (const auto& [id, v] : summary["per_request"].items()) {
      const auto r = static_cast<size_t>(index.Get(id));
      if (first_token_step.size() <= r) first_token_step.resize(r + 1, -1);
      if (v.is_object() && v.contains("first_token_step") && IsInt(v["first_token_step"])) {
        first_token_step[r] = v["first_token_step"].get<int64_t>();
      }
    }
  }

  auto ids = [&](const json& list) {
    std::vector<int32_t> out;
    for (const json& e : list) out.push_back(index.Get(e.get<std::string>()));
    return out;
  };
  auto block_count = [](const json& j, const char* key) {
    // [[id, [i, ...]], ...]: the offloaded blocks a decision loads or stores.
    int64_t n = 0;
    if (!j.contains(key) || !j[key].is_array()) return n;
    for (const json& e : j[key]) {
      if (e.is_array() && e.size() == 2 && e[1].is_array()) n += static_cast<int64_t>(e[1].size());
    }
    return n;
  };
  log.steps.reserve(records.size());
  for (const json& j : records) {
    StepRecord s;
    s.step = j["step"].get<int64_t>();
    s.num_free_blocks = j["num_free_blocks"].get<int64_t>();
    if (j.contains("running") && IsInt(j["running"])) s.running = j["running"].get<int64_t>();
    if (j.contains("waiting") && IsInt(j["waiting"])) s.waiting = j["waiting"].get<int64_t>();
    if (j.contains("t_start_ns") && IsInt(j["t_start_ns"])) s.t_start_ns = j["t_start_ns"].get<int64_t>();
    if (j.contains("t_end_ns") && IsInt(j["t_end_ns"])) s.t_end_ns = j["t_end_ns"].get<int64_t>();
    for (const json& e : j["scheduled"]) {
      StepChunk c;
      c.request = index.Get(e[0].get<std::string>());
      c.n = e[1].get<int64_t>();
      c.before = e[2].get<int64_t>();
      c.hit = e[3].get<int64_t>();
      s.scheduled.push_back(c);
    }
    s.preempted = ids(j["preempted"]);
    s.finished = ids(j["finished"]);
    // The CPU tier's fields are optional; malformed ones are ignored, not errors.
    if (j.contains("cpu_blocks_used") && IsInt(j["cpu_blocks_used"]) &&
        j.contains("cpu_blocks_ready") && IsInt(j["cpu_blocks_ready"])) {
      s.cpu_blocks_used = j["cpu_blocks_used"].get<int64_t>();
      s.cpu_blocks_ready = j["cpu_blocks_ready"].get<int64_t>();
      s.cpu_load_blocks = block_count(j, "cpu_loads");
      s.cpu_store_blocks = block_count(j, "cpu_stores");
      if (j.contains("loading") && j["loading"].is_array()) {
        for (const json& e : j["loading"]) {
          if (e.is_string()) s.loading.push_back(index.Get(e.get<std::string>()));
        }
      }
    }
    log.steps.push_back(std::move(s));
  }
  ClassifyChunks(&log, first_token_step);
  return log;
}

void ClassifyChunks(StepLog* log, std::span<const int64_t> first_token_step) {
  std::vector<RequestState> state(log->request_ids.size());
  for (size_t r = 0; r < first_token_step.size() && r < state.size(); ++r) {
    state[r].first_token_step = first_token_step[r];
  }
  log->max_tokens_in_step = 0;
  log->max_free_blocks = 0;
  log->total_preemptions = 0;
  for (StepRecord& s : log->steps) {
    for (StepChunk& c : s.scheduled) {
      RequestState& rs = state[static_cast<size_t>(c.request)];
      if (c.before < rs.high_water) {
        c.kind = ChunkKind::kRecompute;
      } else if (rs.first_token_step >= 0 ? s.step > rs.first_token_step
                                          : (c.n == 1 && rs.running && c.hit < 0)) {
        c.kind = ChunkKind::kDecode;
      } else {
        c.kind = ChunkKind::kPrefill;
      }
      rs.computed = c.before + c.n;
      rs.running = true;
    }
    for (const int32_t r : s.preempted) {
      RequestState& rs = state[static_cast<size_t>(r)];
      rs.high_water = std::max(rs.high_water, rs.computed);
      rs.computed = 0;
      rs.running = false;
    }
    for (const int32_t r : s.finished) state[static_cast<size_t>(r)].running = false;
    log->max_tokens_in_step = std::max(log->max_tokens_in_step, s.num_scheduled_tokens());
    log->max_free_blocks = std::max(log->max_free_blocks, s.num_free_blocks);
    log->total_preemptions += static_cast<int64_t>(s.preempted.size());
  }
}

Result<StepLog> ReadStepLog(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Status::Error("missing_file", path + ": no such step log");
  }
  // A bound on what the viewer reads: 2 GiB of JSONL is tens of millions of records.
  if (std::filesystem::file_size(path, ec) > (int64_t{2} << 30)) {
    return Status::Error("too_large", path + ": larger than 2 GiB");
  }
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ParseStepLog(ss.str(), path);
}

}  // namespace kvsim::viz
