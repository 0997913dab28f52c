// Parsing JSON text that a user handed in, without exceptions escaping.
//
// nlohmann's `parse(text, nullptr, false)` promises a discarded value on bad input, yet it
// still throws out_of_range 406 for a number too large for a double ("1e309"). Every reader of
// user JSON goes through ParseJsonNoThrow so such a file is refused with a message, not a crash.
#pragma once

#include <exception>
#include <string>
#include <string_view>

namespace kvsim {

// The parsed value, or a discarded value with `*error` (when given) saying why.
template <class JsonT>
JsonT ParseJsonNoThrow(std::string_view text, std::string* error = nullptr) {
  try {
    return JsonT::parse(text);
  } catch (const std::exception& e) {
    if (error) *error = e.what();
    return JsonT(JsonT::value_t::discarded);
  }
}

}  // namespace kvsim
