// The CUDA kernels against the host references over the awkward layout matrix. SKIPs when
// the build has no CUDA or the machine has no device (cudaGetDeviceCount error 35 = none).
#include <catch2/catch_test_macros.hpp>

#include <cstring>

#include "kernels/device.h"
#include "kernels/validate/correctness.h"
#include "kernels/validate/gpu_suite.h"
#include "kernels/validate/layout_cases.h"

namespace kvsim::kernels {
namespace {

std::unique_ptr<Executor> DeviceOrSkip() {
  const DeviceInfo d = QueryDevice();
  if (!d.available) SKIP(d.why);
  auto ex = MakeCudaExecutor();
  if (!ex) SKIP("no CUDA executor");
  return ex;
}

void CheckCase(const LayoutCase& c, Executor& ex) {
  INFO(c.name << ": " << DescribeLayout(c.view));
  const CaseReport r = RunLayoutCase(c, ex, {});
  INFO("append: " << r.append.note << " | gather: " << r.gather.note
                  << " | convert: " << r.convert.note << " | attention: " << r.attention.note
                  << " | vec " << r.vec_bytes << " | rel err " << r.attention_rel_err);
  CHECK(r.append.ran);
  CHECK(r.append_mismatched_bytes == 0);
  CHECK(r.poisoned_bytes_changed == 0);
  CHECK(r.gather.passed);
  CHECK(r.convert.passed);
  if (r.attention.ran) CHECK(r.attention.passed);
  CHECK(r.passed());
}

TEST_CASE("gpu: awkward layout matrix matches the host references", "[gpu]") {
  auto ex = DeviceOrSkip();
  for (const LayoutCase& c : AwkwardLayoutCases(320)) CheckCase(c, *ex);
}

TEST_CASE("gpu: small subset (for compute-sanitizer)", "[gpu][small]") {
  auto ex = DeviceOrSkip();
  const auto cases = AwkwardLayoutCases(40);
  for (size_t i : {size_t{1}, size_t{8}, size_t{13}, size_t{16}, size_t{19}, size_t{24}})
    if (i < cases.size()) CheckCase(cases[i], *ex);
}

TEST_CASE("gpu: two runs are bit-identical", "[gpu]") {
  auto ex = DeviceOrSkip();
  const auto cases = AwkwardLayoutCases(200);
  const CaseReport a = RunLayoutCase(cases[4], *ex, {});
  const CaseReport b = RunLayoutCase(cases[4], *ex, {});
  CHECK(a.attention.ran);
  CHECK(a.attention_rel_err == b.attention_rel_err);
  CHECK(a.passed());
}

}  // namespace
}  // namespace kvsim::kernels
