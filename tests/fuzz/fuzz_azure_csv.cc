// libFuzzer target: Azure LLM inference trace CSVs (ParseAzureCsv): columns by header name,
// calendar timestamps in order, bounded token counts.
#include <cstdint>

#include "sim/workload/trace_workload.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr int64_t kLimit = 1 << 16;
  auto a = kvsim::ParseAzureCsv(AsText(data, size), "fuzz.csv", kLimit, "fuzz bound");
  if (!a.ok()) return 0;
  double prev = 0;
  for (const kvsim::TraceArrival& r : a.value()) {
    ACCEPTED_INVALID(r.prompt_tokens >= 1 && r.prompt_tokens <= kLimit, "ContextTokens range");
    ACCEPTED_INVALID(r.output_tokens >= 1, "GeneratedTokens below 1 after clamping");
    ACCEPTED_INVALID(r.time_s >= prev, "arrivals going back in time");
    prev = r.time_s;
  }
  return 0;
}
