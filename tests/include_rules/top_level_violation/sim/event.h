// Fixture for tests/include_rules: a leaf utility directly in sim/ that includes a driver,
// which cmake/check_include_rules.cmake must reject (leaf utilities include only each other).
#pragma once

#include "sim/engine.h"
