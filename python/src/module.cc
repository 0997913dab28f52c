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

namespace {

// A request as a step record names it: its id from the input, or its number.
pyb::object Name(int32_t i, const std::vector<StepRequest>* requests) {
  if (requests != nullptr) return pyb::str((*requests)[static_cast<size_t>(i)].id);
  return pyb::int_(i);
}

}  // namespace

pyb::dict StepColumns(const std::vector<StepRecord>& records, const pyb::dict& constants,
                      bool timed, const std::vector<StepRequest>* requests) {
  pyb::dict cols;
  for (auto item : constants) {
    pyb::list same;
    for (size_t i = 0; i < records.size(); ++i) same.append(item.second);
    cols[item.first] = same;
  }
  auto name = [&](int32_t i) { return Name(i, requests); };
  auto names = [&](const std::vector<int32_t>& ids) {
    pyb::list l;
    for (int32_t i : ids) l.append(name(i));
    return l;
  };
  // Times are the CLI's nanoseconds, and milliseconds as the other tables give them; None
  // where a record was not timed.
  auto ns = [](int64_t t) { return t < 0 ? pyb::object(pyb::none()) : pyb::object(pyb::int_(t)); };
  auto ms = [](int64_t t) {
    return t < 0 ? pyb::object(pyb::none())
                 : pyb::object(pyb::float_(static_cast<double>(t) / 1e6));
  };
  bool offload = false;
  for (const StepRecord& r : records) offload = offload || r.has_offload;

  pyb::list instance, step, t_start_ns, t_end_ns, t_start_ms, t_end_ms, scheduled, preempted,
      finished, free_blocks, admitted, resumed, running, waiting, tokens, n_scheduled, n_preempted,
      n_finished, n_admitted, n_resumed;
  pyb::list kv_admitted, loading, cpu_loads, cpu_stores, cpu_evicted, cpu_used, cpu_ready;
  for (const StepRecord& r : records) {
    instance.append(r.instance);
    step.append(r.step);
    if (timed) {
      t_start_ns.append(ns(r.t_start_ns));
      t_end_ns.append(ns(r.t_end_ns));
      t_start_ms.append(ms(r.t_start_ns));
      t_end_ms.append(ms(r.t_end_ns));
    }
    pyb::list chunks;
    for (const StepRecord::Chunk& c : r.scheduled) {
      chunks.append(pyb::make_tuple(name(c.request), c.num_tokens, c.before, c.hit));
    }
    scheduled.append(chunks);
    preempted.append(names(r.preempted));
    finished.append(names(r.finished));
    free_blocks.append(r.num_free_blocks);
    admitted.append(names(r.admitted_new));
    resumed.append(names(r.resumed));
    running.append(r.running);
    waiting.append(r.waiting);
    tokens.append(r.num_scheduled_tokens);
    n_scheduled.append(r.scheduled.size());
    n_preempted.append(r.preempted.size());
    n_finished.append(r.finished.size());
    n_admitted.append(r.admitted_new.size());
    n_resumed.append(r.resumed.size());
    if (!offload) continue;
    pyb::list adm, loads, stores, evicted;
    for (const StepRecord::KvAdmitted& k : r.kv_admitted) {
      adm.append(pyb::make_tuple(name(k.request), k.gpu_hit, k.cpu_hit));
    }
    for (const StepRecord::CpuBlocks& b : r.cpu_loads) {
      loads.append(pyb::make_tuple(name(b.request), pyb::cast(b.block_indices)));
    }
    for (const StepRecord::CpuBlocks& b : r.cpu_stores) {
      stores.append(pyb::make_tuple(name(b.request), pyb::cast(b.block_indices)));
    }
    for (const StepRecord::CpuEvicted& e : r.cpu_evicted) {
      evicted.append(pyb::make_tuple(name(e.request), e.block_index));
    }
    kv_admitted.append(adm);
    loading.append(names(r.loading));
    cpu_loads.append(loads);
    cpu_stores.append(stores);
    cpu_evicted.append(evicted);
    cpu_used.append(r.cpu_blocks_used);
    cpu_ready.append(r.cpu_blocks_ready);
  }
  cols["instance"] = instance;
  cols["step"] = step;
  if (timed) {
    cols["t_start_ns"] = t_start_ns;
    cols["t_end_ns"] = t_end_ns;
    cols["t_start_ms"] = t_start_ms;
    cols["t_end_ms"] = t_end_ms;
  }
  cols["scheduled"] = scheduled;
  cols["preempted"] = preempted;
  cols["finished"] = finished;
  cols["num_free_blocks"] = free_blocks;
  cols["new"] = admitted;
  cols["resumed"] = resumed;
  cols["running"] = running;
  cols["waiting"] = waiting;
  cols["num_scheduled_tokens"] = tokens;
  cols["num_scheduled"] = n_scheduled;
  cols["num_preempted"] = n_preempted;
  cols["num_finished"] = n_finished;
  cols["num_admitted"] = n_admitted;
  cols["num_resumed"] = n_resumed;
  if (offload) {
    cols["kv_admitted"] = kv_admitted;
    cols["loading"] = loading;
    cols["cpu_loads"] = cpu_loads;
    cols["cpu_stores"] = cpu_stores;
    cols["cpu_evicted"] = cpu_evicted;
    cols["cpu_blocks_used"] = cpu_used;
    cols["cpu_blocks_ready"] = cpu_ready;
  }
  return cols;
}

}  // namespace kvsim::py

PYBIND11_MODULE(_kvsim, m) {
  m.doc() = "kvsim's library for Python: use the `kvsim` package, not this module";
  m.attr("__version__") = KvsimVersion();
  kvsim::py::BindRun(m);
  kvsim::py::BindSchedule(m);
}
