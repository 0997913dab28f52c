// Fixture for tests/include_rules: a leaf utility that includes only the standard library.
#pragma once

#include <cstdint>
