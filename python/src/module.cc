// The `_kvsim` extension: the kvsim library (never the CLI) for the pure-Python package
// python/kvsim/, which turns what these functions return (CSV text, JSON text, columns) into
// pandas DataFrames and dicts.
#include <pybind11/stl.h>

#include "apps/kvsim/version.h"
#include "python/src/common.h"

namespace kvsim::py {

void Raise(const Status& status) {
  pyb::object error = pyb::module_::import("kvsim._errors").attr("Error");
  pyb::object instance = error(status.message(), status.code());
  PyErr_SetObject(error.ptr(), instance.ptr());
  throw pyb::error_already_set();
}

pyb::dict StepColumns(const std::vector<StepRecord>& records, const pyb::dict& constants) {
  pyb::dict cols;
  for (auto item : constants) {
    pyb::list same;
    for (size_t i = 0; i < records.size(); ++i) same.append(item.second);
    cols[item.first] = same;
  }
  pyb::list step, t_start, t_end, tokens, scheduled, preempted, finished, admitted, resumed,
      free_blocks, running, waiting;
  auto ms = [](int64_t ns) -> pyb::object {
    return ns < 0 ? pyb::object(pyb::none()) : pyb::object(pyb::float_(ns / 1e6));
  };
  for (const StepRecord& r : records) {
    step.append(r.step);
    t_start.append(ms(r.t_start_ns));
    t_end.append(ms(r.t_end_ns));
    tokens.append(r.num_scheduled_tokens);
    scheduled.append(r.scheduled.size());
    preempted.append(r.preempted.size());
    finished.append(r.finished.size());
    admitted.append(r.admitted_new.size());
    resumed.append(r.resumed.size());
    free_blocks.append(r.num_free_blocks);
    running.append(r.running);
    waiting.append(r.waiting);
  }
  cols["step"] = step;
  cols["t_start_ms"] = t_start;
  cols["t_end_ms"] = t_end;
  cols["num_scheduled_tokens"] = tokens;
  cols["num_scheduled"] = scheduled;
  cols["num_preempted"] = preempted;
  cols["num_finished"] = finished;
  cols["num_admitted"] = admitted;
  cols["num_resumed"] = resumed;
  cols["num_free_blocks"] = free_blocks;
  cols["running"] = running;
  cols["waiting"] = waiting;
  return cols;
}

void ExtendColumns(pyb::dict& into, const pyb::dict& more) {
  for (auto item : more) {
    if (!into.contains(item.first)) {
      into[item.first] = pyb::list();
    }
    into[item.first].cast<pyb::list>().attr("extend")(item.second);
  }
}

}  // namespace kvsim::py

PYBIND11_MODULE(_kvsim, m) {
  m.doc() = "kvsim's library for Python: use the `kvsim` package, not this module";
  m.attr("__version__") = KvsimVersion();
  kvsim::py::BindRun(m);
  kvsim::py::BindSchedule(m);
}
