// CellHistory<T>: the value of a fixed-size array of cells (one per GPU block, or per CPU slot)
// at every recorded step, kept as keyframes plus per-step deltas, so a simulation's pool can
// be scrubbed step by step without a full copy per step. A step of a running server changes a
// few blocks out of thousands; a full copy per step of a 100k-block pool over 10k steps would
// be gigabytes, deltas are megabytes.
//
// A step is stored as a keyframe (every cell) when the deltas since the last keyframe add up
// to more entries than the array has cells, so rebuilding any step reads at most about two
// arrays' worth of data. Recording stops for good (Push returns false) once the next step
// would take the total past `byte_budget`: the steps recorded so far stay readable, and the
// caller says which steps have no snapshot.
//
// Owns its storage; not thread-safe. Readers keep their own "cells at step s" buffer, which
// Get() moves forward by deltas when it can.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/check.h"

namespace kvsim::viz {

template <class T>
class CellHistory {
 public:
  CellHistory(int64_t num_cells, int64_t byte_budget)
      : n_(num_cells), budget_(byte_budget), delta_begin_{0} {}

  int64_t num_cells() const { return n_; }
  // Steps recorded: 0 .. num_steps() − 1.
  int64_t num_steps() const { return static_cast<int64_t>(delta_begin_.size()) - 1; }
  int64_t bytes() const {
    return static_cast<int64_t>(key_cells_.size() * sizeof(T) + delta_.size() * sizeof(Delta) +
                                (delta_begin_.size() + key_steps_.size()) * sizeof(int64_t));
  }
  bool full() const { return full_; }
  int64_t num_keyframes() const { return static_cast<int64_t>(key_steps_.size()); }

  // Records the cells of the next step (`cells.size()` == num_cells()). False once the budget
  // is spent: nothing is recorded then, nor for any later step.
  bool Push(std::span<const T> cells) {
    KVSIM_CHECK(static_cast<int64_t>(cells.size()) == n_);
    if (full_) return false;
    scratch_.clear();
    if (num_steps() > 0) {
      for (int64_t i = 0; i < n_; ++i) {
        if (cells[static_cast<size_t>(i)] != prev_[static_cast<size_t>(i)]) {
          scratch_.push_back({static_cast<uint32_t>(i), cells[static_cast<size_t>(i)]});
        }
      }
    }
    const bool key = num_steps() == 0 || since_key_ + static_cast<int64_t>(scratch_.size()) > n_;
    const int64_t cost = key ? n_ * static_cast<int64_t>(sizeof(T)) + 8
                             : static_cast<int64_t>(scratch_.size() * sizeof(Delta));
    if (bytes() + cost + 8 > budget_) {
      full_ = true;
      return false;
    }
    if (key) {
      key_steps_.push_back(num_steps());
      key_cells_.insert(key_cells_.end(), cells.begin(), cells.end());
      since_key_ = 0;
    } else {
      delta_.insert(delta_.end(), scratch_.begin(), scratch_.end());
      since_key_ += static_cast<int64_t>(scratch_.size());
    }
    delta_begin_.push_back(static_cast<int64_t>(delta_.size()));
    prev_.assign(cells.begin(), cells.end());
    return true;
  }

  // The cells at `step` (< num_steps()) into `cells`. `cells_step` names the step `cells` holds
  // now (−1: nothing); it is moved forward by deltas when no keyframe lies in between, else
  // rebuilt from the keyframe at or before `step`. Sets `cells_step` = step.
  void Get(int64_t step, std::vector<T>& cells, int64_t& cells_step) const {
    KVSIM_CHECK(step >= 0 && step < num_steps());
    const auto k = static_cast<size_t>(
        std::upper_bound(key_steps_.begin(), key_steps_.end(), step) - key_steps_.begin() - 1);
    const int64_t key_step = key_steps_[k];
    int64_t from = cells_step;
    if (from < key_step || from > step || static_cast<int64_t>(cells.size()) != n_) {
      const auto first =
          key_cells_.begin() + static_cast<std::ptrdiff_t>(k * static_cast<size_t>(n_));
      cells.assign(first, first + n_);
      from = key_step;
    }
    for (int64_t s = from + 1; s <= step; ++s) {
      for (int64_t d = delta_begin_[static_cast<size_t>(s)];
           d < delta_begin_[static_cast<size_t>(s) + 1]; ++d) {
        const Delta& e = delta_[static_cast<size_t>(d)];
        cells[e.index] = e.value;
      }
    }
    cells_step = step;
  }

 private:
  struct Delta {
    uint32_t index;
    T value;
  };
  int64_t n_;
  int64_t budget_;
  bool full_ = false;
  std::vector<T> prev_;       // the last step pushed
  std::vector<T> key_cells_;  // keyframes, n_ cells each, in step order
  std::vector<int64_t> key_steps_;
  std::vector<Delta> delta_;  // per-step changes against the step before
  // Step s's deltas are delta_[delta_begin_[s], delta_begin_[s + 1]) (a keyframe has none).
  std::vector<int64_t> delta_begin_;
  int64_t since_key_ = 0;  // delta entries since the last keyframe
  std::vector<Delta> scratch_;
};

}  // namespace kvsim::viz
