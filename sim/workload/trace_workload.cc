#include "sim/workload/trace_workload.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/embedded_data.h"
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

// "2023-11-16 18:17:03.9799600" → seconds since the epoch.
bool ParseTimestamp(const std::string& s, double* out) {
  int y, mo, d, h, mi;
  double sec;
  if (std::sscanf(s.c_str(), "%d-%d-%d %d:%d:%lf", &y, &mo, &d, &h, &mi, &sec) != 6) return false;
  *out = static_cast<double>(DaysFromCivil(y, mo, d)) * 86400.0 + h * 3600.0 + mi * 60.0 + sec;
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

Result<std::vector<TraceArrival>> ParseAzureCsv(const std::string& text, const std::string& name) {
  std::vector<TraceArrival> out;
  std::istringstream in(text);
  std::string line;
  int64_t lineno = 0;
  double t0 = -1;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (lineno == 1 && line.rfind("TIMESTAMP", 0) == 0) continue;
    const auto c1 = line.find(',');
    const auto c2 = c1 == std::string::npos ? c1 : line.find(',', c1 + 1);
    double t = 0;
    char* end1 = nullptr;
    char* end2 = nullptr;
    long long ctx = 0, gen = 0;
    bool ok = c2 != std::string::npos && ParseTimestamp(line.substr(0, c1), &t);
    if (ok) {
      const std::string a = line.substr(c1 + 1, c2 - c1 - 1), b = line.substr(c2 + 1);
      ctx = std::strtoll(a.c_str(), &end1, 10);
      gen = std::strtoll(b.c_str(), &end2, 10);
      ok = !a.empty() && !b.empty() && *end1 == '\0' && *end2 == '\0' && ctx > 0 && gen >= 0;
    }
    if (!ok) {
      return Status::Error("bad_trace", name + ":" + std::to_string(lineno) +
                                            ": expected TIMESTAMP,ContextTokens,GeneratedTokens "
                                            "(e.g. 2023-11-16 18:17:03.9799600,4808,10), got \"" +
                                            line.substr(0, 80) + "\"");
    }
    if (t0 < 0) t0 = t;
    TraceArrival a;
    a.time_s = t - t0;
    a.prompt_tokens = ctx;
    a.output_tokens = std::max<long long>(1, gen);
    a.index = out.size();
    out.push_back(a);
  }
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
  if (format == "azure") {
    auto a = ParseAzureCsv(text, path);
    if (!a.ok()) return a.status();
    w->arrivals_ = std::move(a.value());
  } else {
    auto t = RequestTrace::Parse(text, path);
    if (!t.ok()) return t.status();
    const RequestTrace& tr = t.value();
    if (tr.size() == 0) return Status::Error("bad_trace", path + ": no requests in the trace");
    const double t0 = tr[0].timestamp;
    for (size_t i = 0; i < tr.size(); ++i) {
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
  r.id = created_++;
  r.arrival = static_cast<Tick>(std::llround(t * 1e9));
  r.max_output_tokens = a.output_tokens;
  r.output_seed = tokens_.Next();
  if (source_->jsonl) {
    source_->jsonl->PromptTokens(a.index, r.prompt);
  } else {
    if (!system_prompts_.empty()) {
      const auto& p = system_prompts_[sys_pick_.Below(system_prompts_.size())];
      r.prompt.insert(r.prompt.end(), p.begin(), p.end());
    }
    const uint64_t vocab = static_cast<uint64_t>(config_.vocab_size);
    for (int64_t i = 0; i < a.prompt_tokens; ++i) {
      r.prompt.push_back(static_cast<TokenId>(tokens_.Below(vocab)));
    }
  }
  return r;
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
  return TraceWorkload::Open(config, seed, path);
}

}  // namespace kvsim
