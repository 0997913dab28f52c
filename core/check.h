// KVSIM_CHECK: the channel for broken invariants (a bug in kvsim, never bad user input).
// It prints the failed condition with file:line and aborts. Bad input goes through Status
// (status.h); "out of blocks" is an ordinary return value of the pool.
#pragma once

#include <cstdio>
#include <cstdlib>

#define KVSIM_CHECK(cond)                                                            \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      std::fprintf(stderr, "%s:%d: KVSIM_CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                  \
    }                                                                                \
  } while (0)

#define KVSIM_CHECK_MSG(cond, msg)                                                   \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      std::fprintf(stderr, "%s:%d: KVSIM_CHECK failed: %s (%s)\n", __FILE__, __LINE__, #cond, \
                   (msg));                                                           \
      std::abort();                                                                  \
    }                                                                                \
  } while (0)

#ifdef NDEBUG
#define KVSIM_DCHECK(cond) \
  do {                     \
  } while (0)
#else
#define KVSIM_DCHECK(cond) KVSIM_CHECK(cond)
#endif
