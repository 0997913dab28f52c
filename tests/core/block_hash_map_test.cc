// BlockHashMap on its own, over a test record of its own (not the pool's): duplicate-key
// chains in insertion order, groups as separate namespaces, overflow into the next bucket and
// the backward shift that brings keys home (including across the wrap), and a randomized
// comparison with a reference multimap, with CheckInvariants throughout.
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <deque>
#include <map>
#include <random>
#include <vector>

#include "core/block_hash_map.h"

namespace kvsim {
namespace {

struct Rec {
  BlockHash hash = 0;
  int32_t group = -1;
  BlockId dup_next = kNoBlock;
};
static_assert(ChainedBlockRecord<Rec>);

// The owner sets the record's key, then inserts (the map's contract).
void Put(BlockHashMap& m, std::vector<Rec>& rec, BlockId b, BlockHash h, int32_t g) {
  rec[static_cast<size_t>(b)].hash = h;
  rec[static_cast<size_t>(b)].group = g;
  m.Insert(rec.data(), b, h, g);
}

// The first `n` hashes (group 0) whose home bucket is `bucket`.
std::vector<BlockHash> HashesHomedAt(BlockHashMap& m, size_t bucket, int n) {
  std::vector<BlockHash> out;
  for (BlockHash h = 1; static_cast<int>(out.size()) < n; ++h)
    if (m.view().Home(h, 0) == bucket) out.push_back(h);
  return out;
}

TEST_CASE("BlockHashMap: a key's blocks chain in insertion order", "[block_hash_map]") {
  BlockHashMap m(8);
  std::vector<Rec> rec(8);
  CHECK(m.Find(42, 0) == kNoBlock);
  Put(m, rec, 2, 42, 0);
  Put(m, rec, 1, 42, 0);
  Put(m, rec, 3, 42, 0);
  CHECK(m.CheckInvariants(rec.data()) == 3);
  CHECK(m.Find(42, 0) == 2);  // the first inserted
  CHECK(rec[2].dup_next == 1);
  CHECK(rec[1].dup_next == 3);
  CHECK(rec[3].dup_next == kNoBlock);

  m.Erase(rec.data(), 1);  // the middle of the chain: relinked around it
  CHECK(rec[2].dup_next == 3);
  CHECK(m.Find(42, 0) == 2);
  m.Erase(rec.data(), 2);  // the first: the next one takes the slot
  CHECK(m.Find(42, 0) == 3);
  CHECK(m.CheckInvariants(rec.data()) == 1);
  m.Erase(rec.data(), 3);  // the last: the key is gone
  CHECK(m.Find(42, 0) == kNoBlock);
  CHECK(m.BucketOf(42, 0) == m.num_buckets());
  CHECK(m.CheckInvariants(rec.data()) == 0);
}

TEST_CASE("BlockHashMap: groups are separate namespaces", "[block_hash_map]") {
  BlockHashMap m(4);
  std::vector<Rec> rec(4);
  Put(m, rec, 1, 7, 0);
  Put(m, rec, 2, 7, 1);
  CHECK(m.Find(7, 0) == 1);
  CHECK(m.Find(7, 1) == 2);
  CHECK(m.Find(7, 2) == kNoBlock);
  CHECK(m.Find(8, 0) == kNoBlock);
  CHECK(m.CheckInvariants(rec.data()) == 2);
  m.Clear();
  CHECK(m.Find(7, 0) == kNoBlock);
  CHECK(m.CheckInvariants(rec.data()) == 0);
}

TEST_CASE("BlockHashMap: overflow to the next bucket and backward shift", "[block_hash_map]") {
  // Capacity 4 → 4 buckets of 4 slots. Six keys homed at bucket 2: k0..k3 fill it (slots
  // 0..3), k4 and k5 overflow into bucket 3.
  BlockHashMap m(4);
  REQUIRE(m.num_buckets() == 4);
  std::vector<Rec> rec(8);
  const std::vector<BlockHash> k = HashesHomedAt(m, 2, 6);
  for (int i = 0; i < 6; ++i)
    Put(m, rec, static_cast<BlockId>(i + 1), k[static_cast<size_t>(i)], 0);
  for (int i = 0; i < 4; ++i) CHECK(m.BucketOf(k[static_cast<size_t>(i)], 0) == 2);
  CHECK(m.BucketOf(k[4], 0) == 3);
  CHECK(m.BucketOf(k[5], 0) == 3);
  CHECK(m.CheckInvariants(rec.data()) == 6);

  // Erasing k1 from the full bucket 2 opens a hole its overflow probed past: k4 (bucket 3,
  // one step from home ≥ one step to the hole) moves back into it; k5 stays.
  m.Erase(rec.data(), 2);
  CHECK(m.BucketOf(k[4], 0) == 2);
  CHECK(m.BucketOf(k[5], 0) == 3);
  CHECK(m.Find(k[1], 0) == kNoBlock);
  CHECK(m.CheckInvariants(rec.data()) == 5);
  // Bucket 2 is full again; erasing k0 brings k5 home too.
  m.Erase(rec.data(), 1);
  CHECK(m.BucketOf(k[5], 0) == 2);
  for (int i = 2; i < 6; ++i) CHECK(m.Find(k[static_cast<size_t>(i)], 0) == i + 1);
  CHECK(m.CheckInvariants(rec.data()) == 4);
  // Nothing probes past bucket 2 any more: erasing from it moves nothing, whether it was
  // full (k2: the scan finds bucket 3 empty) or not (k3: no scan at all).
  m.Erase(rec.data(), 3);
  m.Erase(rec.data(), 4);
  CHECK(m.BucketOf(k[4], 0) == 2);
  CHECK(m.BucketOf(k[5], 0) == 2);
  CHECK(m.CheckInvariants(rec.data()) == 2);
}

TEST_CASE("BlockHashMap: probing wraps from the last bucket to the first", "[block_hash_map]") {
  BlockHashMap m(4);
  std::vector<Rec> rec(8);
  const std::vector<BlockHash> k = HashesHomedAt(m, 3, 5);
  for (int i = 0; i < 5; ++i)
    Put(m, rec, static_cast<BlockId>(i + 1), k[static_cast<size_t>(i)], 0);
  CHECK(m.BucketOf(k[4], 0) == 0);  // wrapped
  CHECK(m.Find(k[4], 0) == 5);
  m.Erase(rec.data(), 3);  // k2 out of the full bucket 3: k4 comes back across the wrap
  CHECK(m.BucketOf(k[4], 0) == 3);
  CHECK(m.CheckInvariants(rec.data()) == 4);
}

TEST_CASE("BlockHashMap against a reference multimap", "[block_hash_map][property]") {
  std::mt19937_64 rng(5);
  const int64_t n = 256;
  BlockHashMap m(n);
  std::vector<Rec> rec(static_cast<size_t>(n));
  std::map<std::pair<BlockHash, int32_t>, std::deque<BlockId>> ref;  // insertion order
  std::vector<BlockId> hashed, unhashed;
  for (BlockId b = 0; b < n; ++b) unhashed.push_back(b);
  for (int step = 0; step < 30000; ++step) {
    if (rng() % 2 == 0 && !unhashed.empty()) {
      const size_t i = rng() % unhashed.size();
      const BlockId b = unhashed[i];
      unhashed.erase(unhashed.begin() + static_cast<long>(i));
      // Few distinct hashes: many duplicates and collisions, at load up to 1/4.
      const BlockHash h = rng() % 150 * 0x9e3779b97f4a7c15ULL;
      const int32_t g = static_cast<int32_t>(rng() % 2);
      Put(m, rec, b, h, g);
      ref[{h, g}].push_back(b);
      hashed.push_back(b);
    } else if (!hashed.empty()) {
      const size_t i = rng() % hashed.size();
      const BlockId b = hashed[i];
      hashed.erase(hashed.begin() + static_cast<long>(i));
      auto& q = ref[{rec[static_cast<size_t>(b)].hash, rec[static_cast<size_t>(b)].group}];
      q.erase(std::find(q.begin(), q.end(), b));
      m.Erase(rec.data(), b);
      rec[static_cast<size_t>(b)].group = -1;
      unhashed.push_back(b);
    }
    if (step % 53 == 0) {
      for (const auto& [key, q] : ref)
        REQUIRE(m.Find(key.first, key.second) == (q.empty() ? kNoBlock : q.front()));
      REQUIRE(m.CheckInvariants(rec.data()) == static_cast<int64_t>(hashed.size()));
    }
  }
}

}  // namespace
}  // namespace kvsim
