#include "sim/run/scenario_checks.h"

#include "sim/instance_builder.h"
#include "sim/report/plan_report.h"
#include "sim/workload/i_workload.h"

namespace kvsim {

Status ValidateScenario(const Scenario& sc) {
  if (Status w = CheckWorkload(sc.sim.workload); !w.ok()) return w;
  if (sc.cluster.enabled) return Status::Ok();
  auto plan = sc.Plan();
  if (!plan.ok()) return plan.status();
  if (plan->num_blocks < 2) {
    return Status::Error("no_kv_memory",
                         sc.source + ": cache.kv_memory_bytes: the KV cache has no usable "
                                     "blocks; give more memory (or cache.num_gpu_blocks)");
  }
  // The manager's config as the engine builds it (a pool too large names the key that sized it).
  auto kv = EngineKvConfig(sc, plan.value());
  return kv.ok() ? Status::Ok() : kv.status();
}

std::vector<std::string> ScenarioNotes(const Scenario& sc) {
  std::vector<std::string> notes;
  const int64_t hbm = sc.sim.hardware.hbm_capacity_bytes;
  if (!sc.cluster.enabled && hbm > 0 && sc.cache.kv_memory_bytes > hbm) {
    notes.push_back(sc.Where("cache.kv_memory_bytes") + ": cache.kv_memory_bytes: " +
                    HumanBytes(static_cast<double>(sc.cache.kv_memory_bytes)) +
                    " per rank is more than the GPU's memory (hardware.hbm_capacity_bytes " +
                    HumanBytes(static_cast<double>(hbm)) + ", " + sc.sim.hardware.name +
                    "): a what-if, not a configuration that GPU can run");
  }
  return notes;
}
}  // namespace kvsim
