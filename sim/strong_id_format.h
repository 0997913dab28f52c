// fmt support for core's strong ids (core/types.h). fmt 10 and later format a StrongId
// through its format_as (the integer); fmt 9, which this project builds against on Debian
// 12, applies format_as to enums only, so this header gives it the formatter: an id formats
// exactly as its integer, with the integer's format specs. Include it where an id is
// formatted (core may not include fmt, so the formatter cannot live next to the type).
#pragma once

#include <fmt/format.h>

#include "core/types.h"

#if FMT_VERSION < 100000
template <typename Tag, typename Rep, typename Char>
struct fmt::formatter<kvsim::StrongId<Tag, Rep>, Char> : fmt::formatter<Rep, Char> {
  template <typename FormatContext>
  auto format(kvsim::StrongId<Tag, Rep> id, FormatContext& ctx) const -> decltype(ctx.out()) {
    return fmt::formatter<Rep, Char>::format(id.value(), ctx);
  }
};
#endif
