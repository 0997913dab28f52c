#include "viz/step_log.h"

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
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
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

  std::vector<RequestState> state;
  auto req = [&](const std::string& id) {
    const int32_t r = index.Get(id);
    if (state.size() <= static_cast<size_t>(r)) state.resize(static_cast<size_t>(r) + 1);
    return r;
  };
  if (summary.is_object() && summary.contains("per_request") &&
      summary["per_request"].is_object()) {
    log.has_summary = true;
    for (const auto& [id, v] : summary["per_request"].items()) {
      const int32_t r = req(id);
      if (v.is_object() && v.contains("first_token_step") && IsInt(v["first_token_step"])) {
        state[static_cast<size_t>(r)].first_token_step = v["first_token_step"].get<int64_t>();
      }
    }
  }

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
      c.request = req(e[0].get<std::string>());
      c.n = e[1].get<int64_t>();
      c.before = e[2].get<int64_t>();
      c.hit = e[3].get<int64_t>();
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
      s.scheduled.push_back(c);
    }
    for (const json& e : j["preempted"]) {
      const int32_t r = req(e.get<std::string>());
      RequestState& rs = state[static_cast<size_t>(r)];
      rs.high_water = std::max(rs.high_water, rs.computed);
      rs.computed = 0;
      rs.running = false;
      s.preempted.push_back(r);
    }
    for (const json& e : j["finished"]) {
      const int32_t r = req(e.get<std::string>());
      state[static_cast<size_t>(r)].running = false;
      s.finished.push_back(r);
    }
    log.max_tokens_in_step = std::max(log.max_tokens_in_step, s.num_scheduled_tokens());
    log.max_free_blocks = std::max(log.max_free_blocks, s.num_free_blocks);
    log.total_preemptions += static_cast<int64_t>(s.preempted.size());
    log.steps.push_back(std::move(s));
  }
  return log;
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
