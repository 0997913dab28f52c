// The correctness half of the GPU validation mode, written once against an Executor so the
// same harness runs on the GPU (kernels/validate/cuda_executor.h) and on the host
// references (HostExecutor, used by the CPU tests). For one LayoutCase it:
//   1. poisons the whole allocation, appends K/V of new tokens by slot mapping (with some
//      −1 slots and the null block never written) and compares the whole allocation with
//      the host reference byte for byte: bit-exact data, and no poisoned byte changed;
//   2. gathers the tokens back and compares with the inputs (and with the same gather from
//      a plain dense NHD layout holding the same data);
//   3. converts the layer to dense HND with twice the block size and back (block re-chunk
//      both ways, NHD↔HND, unpack/pack, unpad/pad): the intermediate equals the host
//      reference and the round trip restores the allocation exactly;
//   4. runs decode attention over the case's layout and over the plain layout: the outputs
//      must be bit-identical, and within tolerance of the fp64 reference.
// Inputs are random and never zero; every result names what it checked.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "kernels/decode_attention.h"
#include "kernels/kv_side.h"
#include "kernels/validate/layout_cases.h"

namespace kvsim::kernels {

// Memory and kernels of one machine. Pointers it returns are only ever passed back to it.
class Executor {
 public:
  virtual ~Executor() = default;
  virtual const char* name() const = 0;
  virtual void* Alloc(int64_t bytes) = 0;  // null on failure
  virtual void Free(void* p) = 0;
  virtual Status Upload(void* dst, const void* src, int64_t bytes) = 0;
  virtual Status Download(void* dst, const void* src, int64_t bytes) = 0;
  virtual Status RowCopy(const RowCopyParams& p) = 0;
  virtual Status DecodeAttention(const DecodeAttentionParams& p) = 0;
};

// Runs the host references. DecodeAttention writes the fp64 reference rounded to fp32.
class HostExecutor : public Executor {
 public:
  const char* name() const override { return "host"; }
  void* Alloc(int64_t bytes) override;
  void Free(void* p) override;
  Status Upload(void* dst, const void* src, int64_t bytes) override;
  Status Download(void* dst, const void* src, int64_t bytes) override;
  Status RowCopy(const RowCopyParams& p) override;
  Status DecodeAttention(const DecodeAttentionParams& p) override;
};

struct CheckResult {
  bool ran = false;     // false: rejected by CanImplement (see note) or not applicable
  bool passed = false;
  std::string note;     // rejection message or first failure
};

struct CaseReport {
  std::string name;
  std::string origin;
  std::string layout;        // DescribeLayout(view)
  int64_t alloc_bytes = 0;
  int64_t tokens = 0;        // tokens appended (skipped slots included)
  int vec_bytes = 0;         // access width the append used
  CheckResult append;        // bit-exact over the whole allocation
  int64_t append_mismatched_bytes = 0;
  int64_t poisoned_bytes_changed = 0;
  CheckResult gather;        // equals inputs; equals the plain layout's gather
  CheckResult convert;       // intermediate equals reference; round trip exact
  CheckResult attention;     // bit-identical to plain; within tolerance of fp64
  double attention_rel_err = 0;
  double attention_tolerance = 0;
  bool passed() const {
    auto ok = [](const CheckResult& c) { return !c.ran || c.passed; };
    return ok(append) && ok(gather) && ok(convert) && ok(attention) && append.ran;
  }
};

struct CorrectnessOptions {
  uint64_t seed = 1;
  int64_t split_tokens = 64;  // small partitions so short cases still combine several
  double attention_tolerance = 2e-3;  // ‖out − ref‖ / ‖ref‖ against fp64
};

CaseReport RunLayoutCase(const LayoutCase& c, Executor& ex, const CorrectnessOptions& o);

// The poison pattern: byte i of an allocation before any kernel runs.
inline uint8_t PoisonByte(int64_t i) {
  return static_cast<uint8_t>(0xA5u ^ static_cast<uint32_t>((i * 0x9E3779B1ull) >> 13));
}

}  // namespace kvsim::kernels
