// The version of this kvsim build: the project version and, in a git checkout, the
// `git describe` of the tree it was built from ("0.1.0 (git ea4bace-dirty)"). The text is
// generated at build time (cmake/version.cmake), so `kvsim --version` and the provenance a
// run writes next to its outputs name the exact commit.
#pragma once

const char* KvsimVersion();
