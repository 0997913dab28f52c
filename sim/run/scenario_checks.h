// The checks a scenario passes before it runs, beyond what the scenario loader checks, shared
// by `kvsim run`, `sweep` and `layout` and the Python module (python/), so that each refuses
// the same scenarios with the same message.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "sim/scenario_config.h"

namespace kvsim {

// The plan (planner errors name the key), a pool with at least one usable block, the KV
// cache manager's config, and the workload (a required trace that is missing). A P/D
// scenario's pools are planned by the cluster itself; for it only the workload is checked.
Status ValidateScenario(const Scenario& sc);

// What is legal but likely not meant, one line each (the CLI prints them as
// "kvsim: note: ..."): a KV budget per rank above the GPU's HBM (hardware.hbm_capacity_bytes),
// which the shipped Mooncake study uses on purpose as a what-if.
std::vector<std::string> ScenarioNotes(const Scenario& sc);

}  // namespace kvsim
