#include "sim/workload/trace_workload.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/check.h"
#include "sim/embedded_data.h"
#include "sim/file_pin.h"
#include "sim/trace/request_trace.h"
#include "sim/workload/synthetic_workload.h"

namespace kvsim {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSharedTraceDir = "/work/shared/data/traces";

// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// "2023-11-16 18:17:03.9799600" → seconds since the epoch; false unless every field is in
// its calendar range (no month 13, no second 75) and nothing trails the seconds.
bool ParseTimestamp(const std::string& s, double* out) {
  int y, mo, d, h, mi, used = 0;
  double sec;
  if (std::sscanf(s.c_str(), "%d-%d-%d %d:%d:%lf%n", &y, &mo, &d, &h, &mi, &sec, &used) != 6)
    return false;
  if (static_cast<size_t>(used) != s.size()) return false;
  if (y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 ||
      mi < 0 || mi > 59 || !(sec >= 0 && sec < 61))
    return false;
  *out = static_cast<double>(DaysFromCivil(y, mo, d)) * 86400.0 + h * 3600.0 + mi * 60.0 + sec;
  return true;
}

std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t c = line.find(',', start);
    std::string f = line.substr(start, c == std::string::npos ? c : c - start);
    while (!f.empty() && (f.back() == ' ' || f.back() == '\t')) f.pop_back();
    while (!f.empty() && (f.front() == ' ' || f.front() == '\t')) f.erase(f.begin());
    out.push_back(std::move(f));
    if (c == std::string::npos) return out;
    start = c + 1;
  }
}

// A whole non-negative decimal integer (no sign, no exponent, no trailing text).
// Longer numbers than int64 holds read as INT64_MAX, so the caller reports them as too large.
bool ParseCount(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  int64_t v = 0;
  for (char ch : s) {
    if (ch < '0' || ch > '9') return false;
    v = v > (INT64_MAX - 9) / 10 ? INT64_MAX : v * 10 + (ch - '0');
  }
  *out = v;
  return true;
}

std::string ReadAll(const std::string& path, bool* ok) {
  std::ifstream f(path, std::ios::binary);
  if (f) {
    std::stringstream ss;
    ss << f.rdbuf();
    *ok = true;
    return ss.str();
  }
  if (const std::string* e = FindEmbeddedFile(path)) {
    *ok = true;
    return *e;
  }
  *ok = false;
  return {};
}

}  // namespace

class TraceSource {
 public:
  std::optional<RequestTrace> jsonl;
};

std::string FindTraceFile(const std::string& path, const std::string& scenario_dir,
                          std::vector<std::string>* tried) {
  std::vector<std::string> candidates;
  if (fs::path(path).is_absolute()) {
    candidates.push_back(path);
  } else {
    if (!scenario_dir.empty()) candidates.push_back((fs::path(scenario_dir) / path).string());
    candidates.push_back(path);
    if (const char* env = std::getenv("KVSIM_TRACE_DIR")) {
      candidates.push_back((fs::path(env) / path).string());
    }
    candidates.push_back((fs::path(kSharedTraceDir) / path).string());
  }
  for (const auto& c : candidates) {
    if (tried) tried->push_back(c);
    std::error_code ec;
    if (fs::is_regular_file(c, ec)) return c;
  }
  // Built-in sample traces (scenarios/traces/).
  const std::string builtin = "scenarios/traces/" + fs::path(path).filename().string();
  if (tried) tried->push_back("<built-in>/" + builtin);
  if (FindEmbeddedFile(builtin)) return builtin;
  return {};
}

Result<std::vector<TraceArrival>> ParseAzureCsv(const std::string& text, const std::string& name,
                                                int64_t max_prompt_tokens,
                                                const std::string& max_why) {
  const std::string format =
      " (the Azure format: a header TIMESTAMP,ContextTokens,GeneratedTokens, then rows such as "
      "2023-11-16 18:17:03.9799600,4808,10)";
  auto error = [&](int64_t line, const std::string& msg) {
    return Status::Error("bad_trace", name + ":" + std::to_string(line) + ": " + msg);
  };
  std::vector<TraceArrival> out;
  std::istringstream in(text);
  std::string line;
  int64_t lineno = 0;
  // Columns by header name, so files with extra or reordered columns read right.
  int col_time = -1, col_ctx = -1, col_gen = -1;
  size_t num_cols = 0;
  double t0 = -1, prev = -1;
  int64_t prev_line = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const std::vector<std::string> f = SplitCsv(line);
    if (col_time < 0) {
      for (size_t i = 0; i < f.size(); ++i) {
        if (f[i] == "TIMESTAMP") col_time = static_cast<int>(i);
        if (f[i] == "ContextTokens") col_ctx = static_cast<int>(i);
        if (f[i] == "GeneratedTokens") col_gen = static_cast<int>(i);
      }
      std::string missing;
      if (col_time < 0) missing += " TIMESTAMP";
      if (col_ctx < 0) missing += " ContextTokens";
      if (col_gen < 0) missing += " GeneratedTokens";
      if (!missing.empty()) {
        return error(lineno, "the header lacks the column(s)" + missing + format + ", got \"" +
                                 line.substr(0, 80) + "\"");
      }
      num_cols = f.size();
      continue;
    }
    if (f.size() != num_cols) {
      return error(lineno, std::to_string(f.size()) + " fields, the header has " +
                               std::to_string(num_cols) + format);
    }
    double t = 0;
    if (!ParseTimestamp(f[static_cast<size_t>(col_time)], &t)) {
      return error(lineno, "TIMESTAMP: expected a date and time such as 2023-11-16 "
                           "18:17:03.9799600, got \"" +
                               f[static_cast<size_t>(col_time)].substr(0, 40) + "\"");
    }
    if (prev >= 0 && t < prev) {
      return error(lineno, "TIMESTAMP: goes back in time (earlier than line " +
                               std::to_string(prev_line) +
                               "); the simulator replays arrivals in file order, so sort the "
                               "file by TIMESTAMP");
    }
    int64_t ctx = 0, gen = 0;
    const std::string& cs = f[static_cast<size_t>(col_ctx)];
    if (!ParseCount(cs, &ctx) || ctx <= 0) {
      return error(lineno, "ContextTokens: expected a positive integer, got \"" +
                               cs.substr(0, 40) + "\"");
    }
    if (ctx > max_prompt_tokens) {
      return error(lineno, "ContextTokens: " + cs + " is above " +
                               std::to_string(max_prompt_tokens) + " tokens (" + max_why + ")");
    }
    const std::string& gs = f[static_cast<size_t>(col_gen)];
    if (!ParseCount(gs, &gen)) {
      return error(lineno, "GeneratedTokens: expected a non-negative integer, got \"" +
                               gs.substr(0, 40) + "\"");
    }
    if (gen > kMaxTracePromptTokens) {
      return error(lineno, "GeneratedTokens: " + gs + " is above " +
                               std::to_string(kMaxTracePromptTokens) +
                               " tokens (kvsim's bound on one request)");
    }
    if (t0 < 0) t0 = t;
    prev = t;
    prev_line = lineno;
    TraceArrival a;
    a.time_s = t - t0;
    a.prompt_tokens = ctx;
    a.output_tokens = std::max<int64_t>(1, gen);
    a.index = out.size();
    out.push_back(a);
  }
  if (col_time < 0) return Status::Error("bad_trace", name + ": empty file" + format);
  if (out.empty()) return Status::Error("bad_trace", name + ": no requests in the trace");
  return out;
}

TraceWorkload::TraceWorkload(const WorkloadConfig& config, uint64_t seed)
    : config_(config), tokens_(Rng(seed).Fork(3)), sys_pick_(Rng(seed).Fork(4)) {}

TraceWorkload::~TraceWorkload() = default;

Result<std::unique_ptr<IWorkload>> TraceWorkload::Open(const WorkloadConfig& config,
                                                       uint64_t seed, const std::string& path) {
  std::unique_ptr<TraceWorkload> w(new TraceWorkload(config, seed));
  w->path_ = path;
  w->source_ = std::make_unique<TraceSource>();
  std::string format = config.trace.format;
  bool ok = false;
  const std::string text = ReadAll(path, &ok);
  if (!ok) return Status::Error("missing_file", path + ": cannot read the trace");
  if (format == "auto") {
    const std::string ext = fs::path(path).extension().string();
    format = ext == ".csv" ? "azure" : "jsonl";
  }
  // A prompt must leave room for one output token below the model's context length.
  TraceLimits limits;
  if (config.max_model_len > 0) {
    limits.max_prompt_tokens = config.max_model_len - 1;
    limits.why = "max_model_len " + std::to_string(config.max_model_len) +
                 " less one output token; raise model.max_model_len or drop the request";
  }
  if (format == "azure") {
    auto a = ParseAzureCsv(text, path, std::min(limits.max_prompt_tokens, kMaxTracePromptTokens),
                           limits.why);
    if (!a.ok()) return a.status();
    w->arrivals_ = std::move(a.value());
  } else {
    auto t = RequestTrace::Parse(text, path, false, limits);
    if (!t.ok()) return t.status();
    const RequestTrace& tr = t.value();
    if (tr.size() == 0) return Status::Error("bad_trace", path + ": no requests in the trace");
    const double t0 = tr[0].timestamp;
    for (size_t i = 0; i < tr.size(); ++i) {
      // Arrivals are relative to the first line, so an earlier line later on would arrive
      // before time 0: a shuffled or concatenated file. Say so instead of reordering.
      if (i > 0 && tr[i].timestamp < tr[i - 1].timestamp) {
        return Status::Error("bad_trace",
                             path + ":" + std::to_string(tr[i].line) +
                                 ": 'timestamp' goes back in time (earlier than line " +
                                 std::to_string(tr[i - 1].line) +
                                 "); the simulator replays arrivals in file order, so sort the "
                                 "file by timestamp");
      }
      TraceArrival a;
      a.time_s = (tr[i].timestamp - t0) / 1000.0;  // milliseconds in JSONL traces
      a.prompt_tokens = tr[i].input_length;
      a.output_tokens = std::max<int64_t>(1, tr[i].output_length);
      a.index = i;
      w->arrivals_.push_back(a);
    }
    if (format == "jsonl") format = tr.has_hash_ids(0) ? "mooncake" : "tokens";
    w->source_->jsonl = std::move(t.value());
  }
  // Replay in arrival order (stable, so equal timestamps keep file order).
  std::stable_sort(w->arrivals_.begin(), w->arrivals_.end(),
                   [](const TraceArrival& a, const TraceArrival& b) { return a.time_s < b.time_s; });
  w->format_ = format;
  if (format != "azure" && config.system_prompt.tokens > 0) {
    return Status::Error("bad_value",
                         path + ": workload.system_prompt applies to Azure CSV traces only; a " +
                             format + " trace carries its own prompt tokens");
  }
  if (format == "azure") {
    w->system_prompts_ = MakeSystemPrompts(config.system_prompt, config.vocab_size, seed);
  }
  return std::unique_ptr<IWorkload>(std::move(w));
}

std::optional<RequestSpec> TraceWorkload::Next() {
  if (next_ >= arrivals_.size()) return std::nullopt;
  if (config_.num_requests > 0 && created_ >= config_.num_requests) return std::nullopt;
  const TraceArrival& a = arrivals_[next_++];
  const double t = a.time_s * config_.trace.time_scale;
  if (config_.duration_s > 0 && t > config_.duration_s) return std::nullopt;
  RequestSpec r;
  r.id = RequestId{created_++};
  r.arrival = static_cast<Tick>(std::llround(t * 1e9));
  r.max_output_tokens = a.output_tokens;
  r.output_seed = tokens_.Next();
  if (source_->jsonl) {
    PromptPart record;
    record.kind = PromptPart::Kind::kRecord;
    record.length = (*source_->jsonl)[a.index].input_length;
    record.key = static_cast<uint64_t>(a.index);
    r.Add(record);
  } else {
    if (!system_prompts_.empty()) {
      const uint64_t i = sys_pick_.Below(system_prompts_.size());
      r.Add({PromptPart::Kind::kShared, static_cast<int64_t>(system_prompts_[i].size()), i, {}});
    }
    r.Add(RandomPart(tokens_, a.prompt_tokens, /*modulo=*/true));
  }
  return r;
}

void TraceWorkload::AppendStored(const PromptPart& part, std::vector<TokenId>& out) const {
  if (part.kind == PromptPart::Kind::kShared) {
    KVSIM_CHECK(part.key < system_prompts_.size());
    const auto& p = system_prompts_[static_cast<size_t>(part.key)];
    out.insert(out.end(), p.begin(), p.end());
    return;
  }
  KVSIM_CHECK(part.kind == PromptPart::Kind::kRecord && source_->jsonl);
  if (out.empty()) {  // a trace record is a whole prompt: write it in place
    source_->jsonl->PromptTokens(static_cast<size_t>(part.key), out);
    return;
  }
  std::vector<TokenId> ids;
  source_->jsonl->PromptTokens(static_cast<size_t>(part.key), ids);
  out.insert(out.end(), ids.begin(), ids.end());
}

std::string TraceWorkload::Describe() const {
  std::ostringstream s;
  s << "trace (" << format_ << "): " << path_ << ", " << arrivals_.size() << " requests";
  if (config_.num_requests > 0 && static_cast<size_t>(config_.num_requests) < arrivals_.size()) {
    s << " (first " << config_.num_requests << ")";
  }
  if (config_.trace.time_scale != 1.0) s << ", time x" << config_.trace.time_scale;
  return s.str();
}

Status CheckWorkload(const WorkloadConfig& config) {
  if (config.kind != "trace" || !config.trace.required) return Status::Ok();
  std::vector<std::string> tried;
  if (!FindTraceFile(config.trace.path, config.scenario_dir, &tried).empty()) return Status::Ok();
  std::string where;
  for (const auto& t : tried) where += "\n  " + t;
  return Status::Error("missing_file", "workload.trace.path: cannot find trace \"" +
                                           config.trace.path + "\"; looked in:" + where +
                                           "\n  (give one with --set workload.trace.path=FILE)");
}

Result<std::unique_ptr<IWorkload>> MakeWorkload(const WorkloadConfig& config, uint64_t seed,
                                                std::string* note) {
  if (config.kind != "trace") {
    return std::unique_ptr<IWorkload>(std::make_unique<SyntheticWorkload>(config, seed));
  }
  std::vector<std::string> tried;
  const std::string path = FindTraceFile(config.trace.path, config.scenario_dir, &tried);
  if (path.empty()) {
    if (config.trace.required) return CheckWorkload(config);
    if (note) {
      *note = "trace \"" + config.trace.path +
              "\" not found; using the synthetic shared_prefix generator instead";
    }
    WorkloadConfig fallback = config;
    fallback.kind = "shared_prefix";
    return std::unique_ptr<IWorkload>(std::make_unique<SyntheticWorkload>(fallback, seed));
  }
  if (!config.trace.sha256.empty()) {
    // A resolved scenario pins the file it was run with: a file found by the same name
    // elsewhere, or changed since, would give other numbers under the same scenario.
    auto pin = PinFile(path);
    if (!pin.ok()) return pin.status();
    if (pin->sha256 != config.trace.sha256 ||
        (config.trace.bytes >= 0 && pin->bytes != config.trace.bytes)) {
      return Status::Error(
          "trace_changed",
          "workload.trace: " + path + " has SHA-256 " + pin->sha256 + " (" +
              std::to_string(pin->bytes) + " bytes), but the scenario pins " +
              config.trace.sha256 + " (" + std::to_string(config.trace.bytes) +
              " bytes): this is not the trace the run was made with; restore that file, or "
              "remove workload.trace.sha256 and bytes to run with this one");
    }
  }
  return TraceWorkload::Open(config, seed, path);
}

}  // namespace kvsim
