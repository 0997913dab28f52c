// IKvConnector: what the scheduler needs from a KV connector (vLLM's KVConnectorBase_V1,
// scheduler role), here the CPU offloading tier (core/offload/offload_connector.h, driven by
// sim/instance/offload_driver.h). Without one the scheduler behaves exactly as before.
//
// Contract, in the order vLLM's Scheduler.schedule() calls the connector (kv-offload.md §4–§5):
//  * MatchedTokens(r, g) — get_num_new_matched_tokens — for a waiting request with no computed
//    tokens, after the GPU lookup found `g` tokens. `deferred` (vLLM's None): skip the request
//    this step (skipped-waiting queue), it is looked up again next step. Otherwise `tokens` is
//    the external hit e ≥ 0; e > 0 means an asynchronous load: the request is allocated g + e
//    tokens now, scheduled nothing, and waits (WAITING_FOR_REMOTE_KVS) for the load.
//  * AfterAlloc(r, g, e) — update_state_after_alloc — once allocate_slots succeeded for such a
//    request (e may be 0); plans the load when e > 0.
//  * LoadFinished(r) — is r's id in finished_recving_kv_req_ids? — for a request in
//    WAITING_FOR_REMOTE_KVS; true consumes the id (the request is then promoted).
#pragma once

#include <cstdint>

#include "sim/scheduler/sim_request.h"

namespace kvsim {

struct ExternalHit {
  bool deferred = false;
  int64_t tokens = 0;
};

class IKvConnector {
 public:
  virtual ~IKvConnector() = default;
  virtual ExternalHit MatchedTokens(const SimRequest& r, int64_t gpu_hit_tokens) = 0;
  virtual void AfterAlloc(const SimRequest& r, int64_t gpu_hit_tokens, int64_t ext_tokens) = 0;
  virtual bool LoadFinished(const SimRequest& r) = 0;
};

}  // namespace kvsim
