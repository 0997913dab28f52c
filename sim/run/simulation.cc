#include "sim/run/simulation.h"

#include "sim/run/kinds.h"
#include "sim/scenario_config.h"

namespace kvsim {

const SimulationKind& KindOf(const Scenario& sc) {
  if (sc.cluster.enabled) return ClusterKind();
  return sc.offload.enabled ? EngineOffloadKind() : EngineKind();
}

Result<std::unique_ptr<Simulation>> MakeSimulation(const Scenario& sc) {
  return sc.cluster.enabled ? MakeClusterSimulation(sc) : MakeEngineSimulation(sc);
}

}  // namespace kvsim
