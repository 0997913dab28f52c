// Status and Result<T>: the channel for bad input and impossible configurations.
// A Status carries a short machine-readable code (e.g. "page_size_not_divisible") and a
// human message that names what is wrong (file, line and key path where they are known).
// Result<T> is either a value or a non-OK Status. Both are cheap value types.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "core/check.h"

namespace kvsim {

class Status {
 public:
  Status() = default;  // OK
  static Status Ok() { return Status(); }
  static Status Error(std::string code, std::string message) {
    Status s;
    s.code_ = std::move(code);
    s.message_ = std::move(message);
    return s;
  }
  bool ok() const { return code_.empty(); }
  const std::string& code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const { return ok() ? "OK" : code_ + ": " + message_; }

 private:
  std::string code_;  // empty means OK
  std::string message_;
};

template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) { KVSIM_CHECK(!status_.ok()); }  // NOLINT
  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & {
    KVSIM_CHECK_MSG(ok(), status_.ToString().c_str());
    return *value_;
  }
  const T& value() const& {
    KVSIM_CHECK_MSG(ok(), status_.ToString().c_str());
    return *value_;
  }
  T&& value() && {
    KVSIM_CHECK_MSG(ok(), status_.ToString().c_str());
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace kvsim
