// Fixture for tests/include_rules: a component that includes the scenario parser, which
// cmake/check_include_rules.cmake must reject (a component never includes sim/scenario/).
#pragma once

#include "sim/scenario/scenario_loader.h"
