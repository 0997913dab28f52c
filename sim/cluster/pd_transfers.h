// PdTransfers: the KV transfers of a P/D cluster (sim/cluster/cluster_sim.h), from the moment
// the decoder has reserved blocks for a prompt to the moment its KV is usable there. Each
// transfer is priced from the cluster's transfer plan (the bytes and descriptors of the prompt
// blocks the decoder does not hold yet) and its time model (save-side re-layout, descriptor
// posting, receive-side re-layout; core/kv_transfer.h). Its bytes cross the topology as a flow
// of the FlowNetwork, sharing links max-min fairly with the other transfers, so the network is
// the cluster's external clock. The cluster keeps the routing, the instances and the records;
// this class keeps only what is on its way between the pools.
//
// Instances are named by their index in their own pool (prefill p, decode d).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "core/kv_transfer.h"
#include "core/types.h"
#include "sim/cluster/cluster_setup.h"
#include "sim/cluster/flow_network.h"
#include "sim/event.h"

namespace kvsim {

class PdTransfers {
 public:
  // `setup` must outlive this. `flow_cap_bytes_per_ns` bounds one transfer's rate (0: none).
  PdTransfers(const ClusterSetup& setup, const KvTransferTimeModel& time,
              double flow_cap_bytes_per_ns);

  // Request `id`'s prompt is complete on prefill instance `p` and goes to decode instance `d`.
  void Expect(RequestId id, int p, int d);

  // The decoder reserved blocks for `id` at `now`, already holding `hit_tokens` of its
  // `prompt_tokens`: the transfer's cost, and when its bytes may start to move (after the
  // save-side re-layout, and after posting unless posting overlaps the wire).
  struct Reservation {
    KvTransferCost cost;
    Tick wire_start = 0;
  };
  Reservation Reserve(RequestId id, int64_t hit_tokens, int64_t prompt_tokens, Tick now);

  // The bytes of `id` start to move at `now`.
  void StartWire(RequestId id, Tick now);

  // The network as a clock: its next delivery, advancing it, and the flows whose last byte
  // arrived at the current tick (in flow order).
  std::optional<Tick> NextCompletion() const;
  void AdvanceTo(Tick now) { net_.AdvanceTo(now); }
  std::vector<int64_t> Finished() const { return net_.Finished(); }
  // Ends the finished `flow` and names its request.
  RequestId Deliver(int64_t flow);
  // When the KV of `id`, delivered at `now`, is usable on the decoder: not before posting
  // ends, then the path's latency and the receive-side re-layout.
  Tick UsableAt(RequestId id, Tick now) const;

  int prefill_of(RequestId id) const { return transfers_.at(id).p; }
  int decode_of(RequestId id) const { return transfers_.at(id).d; }
  // The transfer of `id` is over (its KV is in use on the decoder).
  void Forget(RequestId id) { transfers_.erase(id); }

  size_t on_wire() const { return flow_to_request_.size(); }
  const FlowNetwork& network() const { return net_; }

 private:
  struct Transfer {
    int p = -1;
    int d = -1;
    KvTransferCost cost;
    Tick post_end = 0;  // the wire may not deliver before posting ends (overlap mode)
    int64_t flow = -1;
  };

  const ClusterSetup& setup_;
  KvTransferTimeModel time_;
  double flow_cap_;
  FlowNetwork net_;
  std::map<RequestId, Transfer> transfers_;
  std::map<int64_t, RequestId> flow_to_request_;
};

}  // namespace kvsim
