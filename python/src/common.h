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

// The records as columns, one list per column, named as docs/step-log.md names the fields:
// instance ("" for a single engine), step, with `timed` t_start_ns / t_end_ns (and the same
// in ms; None where a record was not timed), scheduled (tuples (id, n, before, hit)),
// preempted, finished, num_free_blocks, new, resumed (lists of ids), running, waiting,
// num_scheduled_tokens; the sizes of the lists (num_scheduled, num_preempted, num_finished,
// num_admitted, num_resumed); and, when any record has a CPU tier, kv_admitted (tuples (id,
// gpu_hit, cpu_hit)), loading, cpu_loads / cpu_stores (tuples (id, [block indexes])),
// cpu_evicted (tuples (id, block index)), cpu_blocks_used, cpu_blocks_ready. Requests are named
// by their id in `requests`, or (null) by their number, as the simulator numbers them.
// `constants` become constant columns in front (point, seed).
pyb::dict StepColumns(const std::vector<StepRecord>& records, const pyb::dict& constants,
                      bool timed, const std::vector<StepRequest>* requests);

void BindRun(pyb::module_& m);       // run, sweep, load_tree (run_bindings.cc)
void BindSchedule(pyb::module_& m);  // layout, schedule, replay (plan_bindings.cc)

}  // namespace kvsim::py
