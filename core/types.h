// Strong id types: the ids that name things across the project, each its own type so that
// one kind of id cannot be passed where another is expected (a request's id where the KV
// manager's handle for it is asked, a pool-local instance index where the cluster's global
// one is). StrongId<Tag, Rep> wraps one integer and adds nothing at run time: it is as big
// as Rep, trivially copyable, constexpr, compares and orders as Rep does, and hashes with
// std::hash<Rep> (so unordered containers keyed by an id behave exactly as they did keyed
// by the integer). Construction from the integer is explicit; .value() gives it back.
//
// Formatting: format_as(id) is the integer, which fmt ≥ 10 finds by itself;
// sim/strong_id_format.h adds the fmt::formatter that fmt 9 needs (core may not include fmt).
//
// Which ids are strong, and which stay plain integers on purpose:
//   RequestId      a request's id in a run (workloads, scheduler, engine, cluster, metrics,
//                  trace); dense from 0, so outputs index their records by .value().
//   RequestHandle  the KvCacheManager's slot for a request (reused after RemoveRequest).
//   InstanceId     an engine instance's global index in a P/D cluster (prefill instances
//                  first, then decode instances); pool-local indices (a router's choice, the
//                  topology's paths, the records' columns) stay plain ints.
//   BlockId        a plain int32_t alias, defined below (see there why).
//   KV cache group indices stay plain ints: they index KvCachePlan::groups and every
//                  per-group vector directly, in loops over the groups.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <type_traits>

namespace kvsim {

template <typename Tag, typename Rep>
class StrongId {
  static_assert(std::is_integral_v<Rep>, "a strong id wraps an integer");

 public:
  using rep_type = Rep;

  constexpr StrongId() noexcept = default;  // Rep{} (0)
  constexpr explicit StrongId(Rep v) noexcept : v_(v) {}

  constexpr Rep value() const noexcept { return v_; }

  friend constexpr bool operator==(StrongId, StrongId) noexcept = default;
  friend constexpr auto operator<=>(StrongId, StrongId) noexcept = default;

 private:
  Rep v_{};
};

// fmt ≥ 10 formats any type with a format_as found by ADL as what it returns.
template <typename Tag, typename Rep>
constexpr Rep format_as(StrongId<Tag, Rep> id) noexcept {
  return id.value();
}

struct RequestIdTag;
struct RequestHandleTag;
struct InstanceIdTag;

using RequestId = StrongId<RequestIdTag, int64_t>;
using RequestHandle = StrongId<RequestHandleTag, int32_t>;
using InstanceId = StrongId<InstanceIdTag, int32_t>;

// RequestHandle's "no handle" (a request the KV manager does not know, or no longer knows).
inline constexpr RequestHandle kNoRequestHandle{-1};

// Zero cost: same size and alignment as the integer, copied as the integer.
static_assert(sizeof(RequestId) == sizeof(int64_t) && alignof(RequestId) == alignof(int64_t));
static_assert(sizeof(RequestHandle) == sizeof(int32_t));
static_assert(alignof(RequestHandle) == alignof(int32_t));
static_assert(std::is_trivially_copyable_v<RequestHandle>);

// BlockId: the index of one KV block in a block pool, shared by the pool, its parts (the
// cache map and the free queue), the KV cache manager's block tables and the viewer. Plain
// 32-bit ids keep a block table small and a pool record at 32 bytes; pools are limited to
// 2^30 blocks. Two values are reserved: block 0 is the null block (a placeholder for a
// position a group no longer needs, owned by nobody), and −1 means "no block".
// It stays a plain integer on purpose, not a StrongId. A block id is used as an index almost
// everywhere it appears (the pool's record array, the free queue's prev/next links, the hash
// map's values, the viewer's cell arrays), and block tables travel as std::vector<BlockId> /
// std::span<const BlockId> through the KV groups' policies, the offload driver and the
// viewer: a wrapper would cost nothing at run time but put .value() at most of its ~240 uses,
// on the replay's hottest code, for little protection there. Revisit if block ids start to
// be mixed up with other integers at the pool's boundary.
using BlockId = int32_t;
inline constexpr BlockId kNullBlock = 0;
inline constexpr BlockId kNoBlock = -1;

}  // namespace kvsim

template <typename Tag, typename Rep>
struct std::hash<kvsim::StrongId<Tag, Rep>> {
  size_t operator()(kvsim::StrongId<Tag, Rep> id) const noexcept {
    return std::hash<Rep>{}(id.value());
  }
};
