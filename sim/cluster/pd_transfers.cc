#include "sim/cluster/pd_transfers.h"

#include <algorithm>
#include <limits>

namespace kvsim {

PdTransfers::PdTransfers(const ClusterSetup& setup, const KvTransferTimeModel& time,
                         double flow_cap_bytes_per_ns)
    : setup_(setup),
      time_(time),
      flow_cap_(flow_cap_bytes_per_ns),
      net_(setup.topology.ResourceCapacities()) {}

void PdTransfers::Expect(RequestId id, int p, int d) {
  Transfer& t = transfers_[id];
  t.p = p;
  t.d = d;
}

PdTransfers::Reservation PdTransfers::Reserve(RequestId id, int64_t hit_tokens,
                                              int64_t prompt_tokens, Tick now) {
  Transfer& t = transfers_.at(id);
  t.cost = setup_.transfer.ForRequest(hit_tokens, prompt_tokens);
  const Tick save = time_.SaveRelayoutNs(t.cost);
  t.post_end = now + save + time_.PostingNs(t.cost);
  return {t.cost, time_.overlap_posting ? now + save : t.post_end};
}

void PdTransfers::StartWire(RequestId id, Tick now) {
  Transfer& t = transfers_.at(id);
  const TopoPath& path = setup_.path(t.p, t.d);
  const double cap = flow_cap_ > 0 ? flow_cap_ : std::numeric_limits<double>::infinity();
  t.flow = net_.Add(path.resources, static_cast<double>(t.cost.bytes), now, cap);
  flow_to_request_[t.flow] = id;
}

std::optional<Tick> PdTransfers::NextCompletion() const {
  const auto flow = net_.NextCompletion();
  if (!flow) return std::nullopt;
  return flow->first;
}

RequestId PdTransfers::Deliver(int64_t flow) {
  net_.Remove(flow);
  const RequestId id = flow_to_request_.at(flow);
  flow_to_request_.erase(flow);
  return id;
}

Tick PdTransfers::UsableAt(RequestId id, Tick now) const {
  const Transfer& t = transfers_.at(id);
  const Tick delivered = std::max(now, time_.overlap_posting ? t.post_end : now);
  return delivered + setup_.path(t.p, t.d).latency_ns + time_.ReceiveRelayoutNs(t.cost);
}

}  // namespace kvsim
