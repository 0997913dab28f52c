#include "sim/trace_export.h"

#include <fmt/format.h>

#include <fstream>

namespace kvsim {
namespace {

std::string Us(Tick t) { return fmt::format("{}.{:03d}", t / 1000, static_cast<int>(t % 1000)); }

}  // namespace

void TraceRecorder::Sep() {
  if (events_++ > 0) body_ += ",\n";
}

void TraceRecorder::Step(Tick start, Tick end, int64_t tokens, int64_t seqs,
                         int64_t new_admissions, int64_t preempted) {
  Sep();
  body_ += fmt::format(
      R"({{"name":"step","cat":"engine","ph":"X","pid":1,"tid":1,"ts":{},"dur":{},)"
      R"("args":{{"tokens":{},"seqs":{},"admitted":{},"preempted":{}}}}})",
      Us(start), Us(end - start), tokens, seqs, new_admissions, preempted);
}

void TraceRecorder::Counters(Tick t, double kv_usage, int64_t running, int64_t waiting) {
  Sep();
  body_ += fmt::format(R"({{"name":"kv_usage","ph":"C","pid":1,"ts":{},"args":{{"usage":{:.4f}}}}})",
                       Us(t), kv_usage);
  Sep();
  body_ += fmt::format(
      R"({{"name":"queues","ph":"C","pid":1,"ts":{},"args":{{"running":{},"waiting":{}}}}})",
      Us(t), running, waiting);
}

void TraceRecorder::RequestPhase(int64_t id, const char* name, Tick begin, Tick end) {
  if (!keeps(id) || end < begin) return;
  Sep();
  body_ += fmt::format(
      R"({{"name":"{}","cat":"request","ph":"X","pid":2,"tid":{},"ts":{},"dur":{}}})", name,
      id + 1, Us(begin), Us(end - begin));
}

void TraceRecorder::RequestInstant(int64_t id, const char* name, Tick t) {
  if (!keeps(id)) return;
  Sep();
  body_ += fmt::format(R"({{"name":"{}","ph":"i","s":"t","pid":2,"tid":{},"ts":{}}})", name,
                       id + 1, Us(t));
}

Status TraceRecorder::Write(const std::string& path) const {
  std::ofstream f(path, std::ios::binary);
  if (!f) return Status::Error("io_error", path + ": cannot write the trace file");
  f << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  f << R"({"name":"process_name","ph":"M","pid":1,"args":{"name":"engine"}},)" << "\n";
  f << R"({"name":"process_name","ph":"M","pid":2,"args":{"name":"requests"}})";
  if (!body_.empty()) f << ",\n" << body_;
  f << "\n]}\n";
  if (!f) return Status::Error("io_error", path + ": write failed");
  return Status::Ok();
}

}  // namespace kvsim
