// Parsing the scenario sections the simulator reads (beyond the model and cache the page
// planner needs): hardware and cost-model coefficients, the workload, speculative decoding,
// run limits, metrics/trace output and the scheduler's extra knobs. ParseSimSections (called
// from the scenario loader) fills the typed structs: WorkloadConfig
// (sim/workload/workload_config.h) and the engine's SimConfig (sim/scenario_config.h);
// nothing downstream sees YAML. Every key is documented through ConfigReader, so `kvsim
// list` prints it.
//
//   hardware:   preset (H100-SXM, H200, B200, A100-80G), file (a hardware YAML, e.g. a GPU
//               calibration), then any coefficient inline; later sources win.
//   workload:   kind shared_prefix | multi_turn | agent_tree | trace, arrivals, lengths, caps.
//   spec:       acceptance_rate, method (mtp | eagle | draft | dflash).
//   run:        max_sim_seconds; trace_max_requests.
//   metrics:    kv_sample_interval_ms.
//   sweep:      not parsed here: sim/sweep expands it into points before parsing.
#pragma once

#include <string>
#include <vector>

#include "sim/config/config_reader.h"

namespace kvsim {

struct Scenario;

// The metric names a reference may give: ttft_mean_ms, ttft_p90_ms, ttft_p99_ms,
// tpot_mean_ms, e2e_mean_ms, e2e_p90_ms, e2e_p99_ms, output_tok_per_s.
const std::vector<std::string>& ReferenceMetricNames();

// Reads hardware, workload, spec, run, metrics (and marks `sweep` as known) from the root.
void ParseSimSections(ConfigReader& root, Scenario& sc);
// Refuses a synthetic workload whose every prompt reaches the model's context
// (workload.max_model_len, set by the loader once model and cache are parsed): the system
// prompt alone, or with the shortest prompt, would have every request rejected.
void CheckPromptsFitContext(ConfigReader& root, const Scenario& sc);
// Reads the scheduler keys beyond the token budget and sequence limit.
void ParseSchedulerExtras(ConfigReader& sched, Scenario& sc);

// Hardware preset names (scenarios/hardware/*.yaml, by their `name`).
std::vector<std::string> HardwarePresetNames();
// The YAML text of a hardware preset by name (or file stem), and its repository path in
// `file`; null when there is none.
const std::string* HardwarePresetText(const std::string& name, std::string* file);

}  // namespace kvsim
