// Strong id types (core/types.h). Most of the contract is checked at compile time: ids of
// different kinds do not convert into each other or from/to their integers implicitly, and
// each is exactly as big and as cheap to copy as its integer. The run-time cases check that
// an id orders, compares and hashes as its integer does (unordered containers keyed by ids
// iterate as they did keyed by integers, which the golden outputs rely on).
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "core/kv_cache_manager.h"
#include "core/types.h"

namespace kvsim {
namespace {

// Two ids of this test, of the same integer as RequestHandle, and one over int64_t.
using AppleId = StrongId<struct AppleTag, int32_t>;
using PearId = StrongId<struct PearTag, int32_t>;
using PlumId = StrongId<struct PlumTag, int64_t>;

template <typename A, typename B>
constexpr bool kComparable = requires(A a, B b) { a == b; };

// Ids of different kinds never convert into each other, in either direction, nor compare.
static_assert(!std::is_convertible_v<AppleId, PearId> && !std::is_constructible_v<PearId, AppleId>);
static_assert(!std::is_convertible_v<AppleId, RequestHandle>);
static_assert(!std::is_convertible_v<RequestHandle, AppleId>);
static_assert(!std::is_constructible_v<RequestHandle, PlumId>);
// The case the types exist for: a request's id is not the KV manager's handle for it.
static_assert(!std::is_convertible_v<RequestId, RequestHandle>);
static_assert(!std::is_convertible_v<RequestHandle, RequestId>);
static_assert(!std::is_constructible_v<RequestHandle, RequestId>);
static_assert(!std::is_constructible_v<RequestId, RequestHandle>);
static_assert(!kComparable<RequestId, RequestHandle> && !kComparable<RequestId, int64_t>);
static_assert(!std::is_convertible_v<int64_t, RequestId>);
static_assert(!std::is_convertible_v<RequestId, int64_t>);
// A cluster's global instance id is neither a request's id or handle nor a pool-local index.
static_assert(!std::is_convertible_v<InstanceId, RequestHandle>);
static_assert(!std::is_convertible_v<RequestHandle, InstanceId>);
static_assert(!std::is_constructible_v<InstanceId, RequestId>);
static_assert(!std::is_convertible_v<int, InstanceId> && !std::is_convertible_v<InstanceId, int>);
static_assert(!kComparable<InstanceId, int> && !kComparable<InstanceId, RequestHandle>);
static_assert(sizeof(InstanceId) == sizeof(int32_t) && InstanceId{2} > InstanceId{1});
static_assert(kComparable<RequestHandle, RequestHandle> && kComparable<PlumId, PlumId>);
static_assert(!kComparable<AppleId, PearId> && !kComparable<RequestHandle, AppleId>);
// Nor to or from their integers implicitly: construction is explicit, .value() gives it back.
static_assert(!std::is_convertible_v<int32_t, RequestHandle>);
static_assert(!std::is_convertible_v<RequestHandle, int32_t>);
static_assert(!std::is_convertible_v<int64_t, PlumId> && !std::is_convertible_v<PlumId, int64_t>);
static_assert(std::is_constructible_v<RequestHandle, int32_t>);
static_assert(!kComparable<RequestHandle, int32_t> && !kComparable<PlumId, int64_t>);
static_assert(std::is_same_v<decltype(RequestHandle{}.value()), int32_t>);
static_assert(std::is_same_v<decltype(PlumId{}.value()), int64_t>);

// The KV manager takes its handles only.
template <typename H>
constexpr bool kManagerTakes = requires(KvCacheManager& m, const KvCacheManager& cm, H h) {
  m.Free(h);
  cm.num_tokens(h);
};
static_assert(kManagerTakes<RequestHandle>);
static_assert(!kManagerTakes<RequestId>);
static_assert(!kManagerTakes<int32_t> && !kManagerTakes<int64_t> && !kManagerTakes<AppleId>);

// Zero cost: the integer's size, trivially copyable, usable in constant expressions.
static_assert(sizeof(RequestHandle) == sizeof(int32_t) && sizeof(PlumId) == sizeof(int64_t));
static_assert(sizeof(RequestId) == sizeof(int64_t) && std::is_trivially_copyable_v<RequestId>);
static_assert(RequestId{}.value() == 0);
static_assert(std::is_trivially_copyable_v<RequestHandle>);
static_assert(std::is_trivially_destructible_v<RequestHandle>);
static_assert(RequestHandle{}.value() == 0);
static_assert(kNoRequestHandle.value() == -1);
static_assert(RequestHandle{3} < RequestHandle{4} && RequestHandle{4} == RequestHandle{4});
static_assert(PlumId{2} >= PlumId{1} && PlumId{2} != PlumId{1});
static_assert(format_as(PlumId{int64_t{1} << 40}) == int64_t{1} << 40);

TEST_CASE("A strong id hashes as its integer") {
  for (int64_t v : {int64_t{0}, int64_t{1}, int64_t{-1}, int64_t{1} << 40}) {
    CHECK(std::hash<PlumId>{}(PlumId{v}) == std::hash<int64_t>{}(v));
  }
  CHECK(std::hash<RequestHandle>{}(RequestHandle{7}) == std::hash<int32_t>{}(7));
}

TEST_CASE("Containers keyed by strong ids iterate as if keyed by their integers") {
  const std::vector<int64_t> keys = {17, 3, 99, 0, 42, 5, 1000003, 64};
  std::unordered_set<int64_t> plain;
  std::unordered_set<PlumId> strong;
  std::map<PlumId, int> ordered;
  for (int64_t k : keys) {
    plain.insert(k);
    strong.insert(PlumId{k});
    ordered[PlumId{k}] = 0;
  }
  std::vector<int64_t> a, b, c;
  for (int64_t k : plain) a.push_back(k);
  for (PlumId k : strong) b.push_back(k.value());
  for (const auto& [k, v] : ordered) c.push_back(k.value());
  CHECK(a == b);
  CHECK(std::is_sorted(c.begin(), c.end()));
  CHECK(c.size() == keys.size());
}

}  // namespace
}  // namespace kvsim
