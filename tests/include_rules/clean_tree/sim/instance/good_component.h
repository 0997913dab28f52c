// Fixture for tests/include_rules: the same shape as the violation fixtures, with allowed
// includes only, which cmake/check_include_rules.cmake must accept.
#pragma once

#include "sim/event.h"
#include "sim/instance/spec_config.h"
