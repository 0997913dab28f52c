// SimRequest: a request as the scheduler and the engine see it. The engine owns every
// SimRequest (stable addresses for the whole run); the scheduler moves pointers to them
// between the running list and the waiting queue and updates the token counters exactly as
// vLLM's `Request` changes during `Scheduler.schedule()` (reference §6). Token ids and block
// hashes are not here: they belong to the KV allocator's view of the request.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/types.h"

namespace kvsim {

// kFinishedPreempted: finished by a token that was in flight when it was preempted (async);
// it is still in WAITING until the instance releases it. kWaitingForRemoteKvs: admitted with
// an external (CPU-tier) hit whose load has not been reported finished; it holds its blocks
// and sits in the skipped-waiting queue, not in RUNNING.
enum class RequestStatus : uint8_t {
  kWaiting,
  kRunning,
  kPreempted,
  kFinished,
  kFinishedPreempted,
  kWaitingForRemoteKvs,
};

constexpr std::string_view RequestStatusName(RequestStatus s) {
  switch (s) {
    case RequestStatus::kWaiting: return "waiting";
    case RequestStatus::kRunning: return "running";
    case RequestStatus::kPreempted: return "preempted";
    case RequestStatus::kFinished: return "finished";
    case RequestStatus::kFinishedPreempted: return "finished";
    case RequestStatus::kWaitingForRemoteKvs: return "waiting_for_remote_kvs";
  }
  return "?";
}

struct SimRequest {
  RequestId id;
  RequestStatus status = RequestStatus::kWaiting;
  int64_t priority = 0;          // PRIORITY policy: lower value = more important
  int64_t arrival_tick = 0;      // ns; PRIORITY policy tie-break and latency metrics
  int64_t num_prompt_tokens = 0;
  int64_t max_output_tokens = 1; // the request finishes after this many output tokens
  // Invariants: num_tokens == num_prompt_tokens + num_output_tokens;
  //             0 <= num_computed_tokens <= num_tokens + num_spec_tokens.
  int64_t num_tokens = 0;           // prompt + outputs so far
  int64_t num_output_tokens = 0;
  int64_t num_computed_tokens = 0;  // tokens whose KV is (or, once scheduled, will be) written
  int64_t num_spec_tokens = 0;      // draft tokens waiting to be verified in the next step
  // Async scheduling: tokens sampled by a step whose outputs are not applied yet (vLLM's
  // num_output_placeholders). They count as known tokens for scheduling, not in num_tokens.
  int64_t num_output_placeholders = 0;
  int64_t num_cached_tokens = -1;   // prefix hit at the first admission (-1: not admitted yet)
  // The last scheduled chunk stopped short of the known tokens (vLLM's is_prefill_chunk, set
  // when a step's chunks are committed).
  bool is_prefill_chunk = false;
  int32_t num_preemptions = 0;
  RequestHandle kv_handle = kNoRequestHandle;  // the KV allocator's (opaque to the scheduler)

  int64_t num_tokens_with_spec() const { return num_tokens + num_spec_tokens; }
  // Prompt plus every sampled token, in flight or applied (step-log.md §5 "known tokens").
  int64_t known_tokens() const { return num_tokens + num_output_placeholders; }
};

}  // namespace kvsim
