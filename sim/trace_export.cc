#include "sim/trace_export.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "sim/output_file.h"

namespace kvsim {
namespace {

std::string Us(Tick t) { return fmt::format("{}.{:03d}", t / 1000, static_cast<int>(t % 1000)); }

}  // namespace

void TraceRecorder::Sep() {
  if (events_++ > 0) body_ += ",\n";
}

void TraceRecorder::NameProcess(int pid, const std::string& name) { process_names_[pid] = name; }

void TraceRecorder::Step(Tick start, Tick end, int64_t tokens, int64_t seqs,
                         int64_t new_admissions, int64_t preempted, int pid) {
  Sep();
  body_ += fmt::format(
      R"({{"name":"step","cat":"engine","ph":"X","pid":{},"tid":1,"ts":{},"dur":{},)"
      R"("args":{{"tokens":{},"seqs":{},"admitted":{},"preempted":{}}}}})",
      pid, Us(start), Us(end - start), tokens, seqs, new_admissions, preempted);
}

void TraceRecorder::Counters(Tick t, double kv_usage, int64_t running, int64_t waiting,
                             int pid) {
  Sep();
  body_ += fmt::format(
      R"({{"name":"kv_usage","ph":"C","pid":{},"ts":{},"args":{{"usage":{:.4f}}}}})", pid,
      Us(t), kv_usage);
  Sep();
  body_ += fmt::format(
      R"({{"name":"queues","ph":"C","pid":{},"ts":{},"args":{{"running":{},"waiting":{}}}}})",
      pid, Us(t), running, waiting);
}

void TraceRecorder::Counter(Tick t, const char* name, double value, int pid) {
  Sep();
  body_ += fmt::format(R"({{"name":"{}","ph":"C","pid":{},"ts":{},"args":{{"value":{}}}}})",
                       name, pid, Us(t), value);
}

void TraceRecorder::RequestPhase(RequestId id, const char* name, Tick begin, Tick end,
                                 const std::string& args) {
  if (!keeps(id) || end < begin) return;
  Sep();
  body_ += fmt::format(
      R"({{"name":"{}","cat":"request","ph":"X","pid":{},"tid":{},"ts":{},"dur":{}{}}})", name,
      kRequestsPid, id.value() + 1, Us(begin), Us(end - begin),
      args.empty() ? std::string() : ",\"args\":{" + args + "}");
}

void TraceRecorder::RequestInstant(RequestId id, const char* name, Tick t) {
  if (!keeps(id)) return;
  Sep();
  body_ += fmt::format(R"({{"name":"{}","ph":"i","s":"t","pid":{},"tid":{},"ts":{}}})", name,
                       kRequestsPid, id.value() + 1, Us(t));
}

Status TraceRecorder::Write(const std::string& path) const {
  std::error_code ec;  // a missing parent folder is created; failing that, the write fails
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  for (const auto& [pid, name] : process_names_) {
    out += (first ? "" : ",\n") +
           fmt::format(R"({{"name":"process_name","ph":"M","pid":{},"args":{{"name":"{}"}}}})",
                       pid, name);
    first = false;
  }
  if (!body_.empty()) out += ",\n" + body_;
  out += "\n]}\n";
  return WriteFileAtomically(path, out);
}

}  // namespace kvsim
