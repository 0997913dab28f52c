// What the binding files of the `_kvsim` extension share: raising a kvsim Status as the
// module's Python exception (kvsim.Error, carrying the CLI's file:line:key text), and the
// step records as columns (one Python list per column, for a pandas DataFrame).
#pragma once

#include <pybind11/pybind11.h>

#include <vector>

#include "core/status.h"
#include "sim/instance/step_clock.h"

namespace kvsim::py {

namespace pyb = pybind11;

// Raises kvsim.Error(status.message(), status.code()): the text is the one the CLI prints
// after "kvsim: error: ".
[[noreturn]] void Raise(const Status& status);

template <class T>
T Unwrap(Result<T> r) {
  if (!r.ok()) Raise(r.status());
  return std::move(r.value());
}

// The records' scalar fields and the sizes of their lists, one list per column (docs/
// step-log.md names): step, t_start_ms, t_end_ms (None when not timed), num_scheduled_tokens,
// num_scheduled, num_preempted, num_finished, num_admitted, num_resumed, num_free_blocks,
// running, waiting, and, from `labels`, constant columns prepended (point, seed).
pyb::dict StepColumns(const std::vector<StepRecord>& records, const pyb::dict& constants);
// Appends `more`'s columns to `into`'s (same keys), for several runs in one table.
void ExtendColumns(pyb::dict& into, const pyb::dict& more);

void BindRun(pyb::module_& m);       // run, sweep, load_tree (run_bindings.cc)
void BindSchedule(pyb::module_& m);  // layout, schedule, replay (plan_bindings.cc)

}  // namespace kvsim::py
