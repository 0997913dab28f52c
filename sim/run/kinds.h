// The kinds of Simulation (sim/run/simulation.h), one factory each, for MakeSimulation:
// the single engine (engine_simulation.cc) and the P/D cluster (cluster_simulation.cc).
// A new kind adds its factory here, its SimulationKind, and one line in MakeSimulation.
#pragma once

#include <memory>

#include "sim/run/simulation.h"

namespace kvsim {

Result<std::unique_ptr<Simulation>> MakeEngineSimulation(const Scenario& sc);
Result<std::unique_ptr<Simulation>> MakeClusterSimulation(const Scenario& sc);

}  // namespace kvsim
