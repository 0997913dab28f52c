// fmt formats a strong id (core/types.h) exactly as its integer, format specs included
// (sim/strong_id_format.h on fmt 9, format_as on fmt 10 and later).
#include <catch2/catch_test_macros.hpp>

#include <fmt/format.h>

#include "sim/strong_id_format.h"

namespace kvsim {
namespace {

TEST_CASE("A strong id formats as its integer") {
  using PlumId = StrongId<struct PlumTag, int64_t>;
  CHECK(fmt::format("{}", PlumId{42}) == "42");
  CHECK(fmt::format("{}", RequestId{int64_t{1} << 40}) == "1099511627776");
  CHECK(fmt::format("{},{}", RequestHandle{7}, kNoRequestHandle) == "7,-1");
  CHECK(fmt::format("{:>4}|{:04}", InstanceId{3}, PlumId{12}) == "   3|0012");
}

}  // namespace
}  // namespace kvsim
