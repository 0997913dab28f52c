// TraceRecorder: a Chrome / Perfetto trace of one run (`kvsim run --trace out.json`), in the
// Trace Event Format (JSON array of events; open in ui.perfetto.dev or chrome://tracing).
//   process 1 "engine": one complete event per engine step (tokens, sequences, preemptions),
//     counters for KV usage and the running/waiting queue lengths;
//   process 2 "requests": one thread per request (the first `max_requests` by id) with its
//     phases: queued (arrival → first scheduled), prefill (→ first token), decode (→ finish),
//     and an instant event at each preemption.
// A P/D cluster run (sim/cluster) names its own processes: one per instance ("prefill 0",
// "decode 1", ...) carrying that instance's steps and counters, plus "requests" (pid 2),
// whose threads show the cluster phases including the KV transfer.
// Timestamps are microseconds with nanosecond decimals, printed from integer ticks, so the
// file is byte-identical for the same scenario and seed.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "core/status.h"
#include "core/types.h"
#include "sim/event.h"

namespace kvsim {

class TraceRecorder {
 public:
  static constexpr int kEnginePid = 1;
  static constexpr int kRequestsPid = 2;

  explicit TraceRecorder(int64_t max_requests) : max_requests_(max_requests) {}

  // Names process `pid` in the trace (default: 1 "engine", 2 "requests").
  void NameProcess(int pid, const std::string& name);

  void Step(Tick start, Tick end, int64_t tokens, int64_t seqs, int64_t new_admissions,
            int64_t preempted, int pid = kEnginePid);
  void Counters(Tick t, double kv_usage, int64_t running, int64_t waiting, int pid = kEnginePid);
  // One named counter track of process `pid`.
  void Counter(Tick t, const char* name, double value, int pid);
  // `args` is a JSON object's members without braces (`"instance":"decode 0"`), or empty.
  void RequestPhase(RequestId id, const char* name, Tick begin, Tick end,
                    const std::string& args = "");
  void RequestInstant(RequestId id, const char* name, Tick t);
  bool keeps(RequestId id) const { return id.value() < max_requests_; }

  Status Write(const std::string& path) const;
  const std::string& body() const { return body_; }

 private:
  void Sep();
  int64_t max_requests_;
  std::map<int, std::string> process_names_ = {{kEnginePid, "engine"}, {kRequestsPid, "requests"}};
  std::string body_;  // events, comma-separated
  int64_t events_ = 0;
};

}  // namespace kvsim
