// PdTransfers: one P/D transfer's price and timing, worked by hand on a star topology.
#include "sim/cluster/pd_transfers.h"

#include <catch2/catch_test_macros.hpp>
#include <string>

#include "sim/config/config_tree.h"
#include "sim/scenario/scenario_loader.h"

namespace kvsim {
namespace {

// 4 layers of 8 KV heads × 128, bf16, 16-token blocks, the same NHD layout and TP 1 on both
// sides: one descriptor per block and layer of 16 × 8 × 128 × 2 (K, V) × 2 B = 65,536 B, no
// re-layout. Every instance hangs off one switch through a 25 GB/s NIC with 3 µs latency.
const char* kScenario = R"(
name: t
model:
  name: toy
  layers:
    - {type: full_attention, count: 4, num_kv_heads: 8, head_size: 128}
cache:
  num_gpu_blocks: 100
  block_size: 16
cluster:
  prefill: {count: 2}
  decode: {count: 2}
  topology: {nic_gbytes_per_s: 25, nic_latency_us: 3}
)";

ClusterSetup Setup(const Scenario& sc) {
  auto setup = BuildClusterSetup(sc);
  INFO(setup.status().ToString());
  REQUIRE(setup.ok());
  return std::move(setup.value());
}

Scenario Load() {
  auto tree = ParseYaml(kScenario, "t.yaml");
  REQUIRE(tree.ok());
  auto sc = ParseScenario(tree.value(), "t.yaml");
  INFO(sc.status().ToString());
  REQUIRE(sc.ok());
  return std::move(sc.value());
}

TEST_CASE("pd transfers: price, posting, wire, latency, by hand") {
  const Scenario sc = Load();
  const ClusterSetup setup = Setup(sc);
  KvTransferTimeModel time;  // 2 µs per descriptor, posting then wire
  PdTransfers t(setup, time, 0);
  const RequestId id{7};
  t.Expect(id, 1, 0);
  CHECK(t.prefill_of(id) == 1);
  CHECK(t.decode_of(id) == 0);

  // 160 prompt tokens, 32 already cached on the decoder: 8 blocks × 4 layers = 32 descriptors,
  // 32 × 65,536 = 2,097,152 B. Posting 32 × 2 µs = 64 µs, then the wire.
  const Tick now = 1'000'000;
  const PdTransfers::Reservation r = t.Reserve(id, 32, 160, now);
  CHECK(r.cost.descriptors == 32);
  CHECK(r.cost.bytes == 2097152);
  CHECK(r.wire_start == now + 64000);

  // Alone on its path, the flow runs at the NIC's 25 B/ns: 2,097,152 / 25 = 83,886.08 ns,
  // rounded up to the next tick.
  t.AdvanceTo(r.wire_start);
  t.StartWire(id, r.wire_start);
  CHECK(t.on_wire() == 1);
  REQUIRE(t.NextCompletion().has_value());
  const Tick end = *t.NextCompletion();
  CHECK(end == r.wire_start + 83887);
  t.AdvanceTo(end);
  const std::vector<int64_t> done = t.Finished();
  REQUIRE(done.size() == 1);
  CHECK(t.Deliver(done[0]) == id);
  CHECK(t.on_wire() == 0);
  CHECK_FALSE(t.NextCompletion().has_value());
  // Usable on the decoder after two NICs' latency (3 µs each) and no re-layout.
  CHECK(t.UsableAt(id, end) == end + 6000);
  t.Forget(id);
}

TEST_CASE("pd transfers: with posting overlapping the wire, delivery waits for the posting") {
  const Scenario sc = Load();
  const ClusterSetup setup = Setup(sc);
  KvTransferTimeModel time;
  time.overlap_posting = true;
  PdTransfers t(setup, time, 0);
  const RequestId id{3};
  t.Expect(id, 0, 1);
  // 16 tokens, nothing cached: 1 block × 4 layers = 4 descriptors, 262,144 B; the wire starts
  // at once and needs ceil(262,144 / 25) = 10,486 ns, the posting 8 µs.
  const PdTransfers::Reservation r = t.Reserve(id, 0, 16, 0);
  CHECK(r.cost.bytes == 262144);
  CHECK(r.wire_start == 0);
  t.StartWire(id, 0);
  REQUIRE(t.NextCompletion().has_value());
  CHECK(*t.NextCompletion() == 10486);
  // Delivered at 10,486 ns, after the posting's 8,000: latency only. Had the wire been faster
  // than the posting, delivery would count from the posting's end.
  CHECK(t.UsableAt(id, 10486) == 10486 + 6000);
  CHECK(t.UsableAt(id, 5000) == 8000 + 6000);
}

TEST_CASE("pd transfers: two transfers sharing a decode NIC split it") {
  const Scenario sc = Load();
  const ClusterSetup setup = Setup(sc);
  // Both prefill instances send 16 uncached tokens (262,144 B) to decode instance 0 at 0 ns,
  // the wire starting at once (posting overlapped); when the first delivery is due.
  auto first_delivery = [&](double cap_bytes_per_ns) {
    KvTransferTimeModel time;
    time.overlap_posting = true;
    PdTransfers t(setup, time, cap_bytes_per_ns);
    for (int p = 0; p < 2; ++p) {
      const RequestId id{p};
      t.Expect(id, p, 0);
      CHECK(t.Reserve(id, 0, 16, 0).wire_start == 0);
      t.StartWire(id, 0);
    }
    REQUIRE(t.NextCompletion().has_value());
    return *t.NextCompletion();
  };
  // The decode NIC carries both at 12.5 B/ns: ceil(262,144 / 12.5) = 20,972 ns. A 10 B/ns cap
  // per transfer holds each below its share: ceil(262,144 / 10) = 26,215 ns.
  CHECK(first_delivery(0) == 20972);
  CHECK(first_delivery(10) == 26215);
}

}  // namespace
}  // namespace kvsim
