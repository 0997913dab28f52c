#include "kernels/reference/decode_attention_ref.h"

#include <Eigen/Dense>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/kv_side.h"
#include "kernels/reference/half.h"

namespace kvsim::kernels {

std::vector<double> DecodeAttentionReference(const DecodeAttentionArguments& a) {
  const int64_t d = a.head_size;
  const int64_t group = a.num_q_heads / a.num_kv_heads;
  std::vector<double> out(static_cast<size_t>(a.batch * a.num_q_heads * d), 0.0);
  KvSide side = CacheSide(a.layout, a.layer, const_cast<void*>(a.cache), TokenMap::kBlockTable);
  const auto* q16 = static_cast<const uint16_t*>(a.query);
  const auto load = [&](const uint8_t* p, int64_t e) {
    uint16_t bits;
    std::memcpy(&bits, p + 2 * e, 2);
    return HalfToDouble(bits, a.dtype);
  };
  for (int64_t b = 0; b < a.batch; ++b) {
    const int64_t n = a.seq_lens[b];
    side.block_table = a.block_tables + b * a.max_blocks_per_seq;
    for (int64_t kvh = 0; kvh < a.num_kv_heads; ++kvh) {
      Eigen::MatrixXd k(n, d), v(n, d);
      for (int64_t t = 0; t < n; ++t) {
        int64_t blk = 0, pos = 0;
        side.Locate(t, &blk, &pos);
        const uint8_t* kr = side.Address(0, blk, pos, kvh, 0);
        const uint8_t* vr = side.Address(1, blk, pos, kvh, 0);
        for (int64_t e = 0; e < d; ++e) {
          k(t, e) = load(kr, e);
          v(t, e) = load(vr, e);
        }
      }
      for (int64_t g = 0; g < group; ++g) {
        const int64_t qh = kvh * group + g;
        Eigen::VectorXd q(d);
        for (int64_t e = 0; e < d; ++e)
          q(e) = HalfToDouble(q16[(b * a.num_q_heads + qh) * d + e], a.dtype);
        Eigen::VectorXd s = (k * q) * static_cast<double>(a.scale);
        const double m = s.maxCoeff();
        Eigen::VectorXd p = (s.array() - m).exp();
        Eigen::VectorXd o = v.transpose() * p / p.sum();
        for (int64_t e = 0; e < d; ++e) out[(b * a.num_q_heads + qh) * d + e] = o(e);
      }
    }
  }
  return out;
}

double RelativeError(const float* x, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isnan(x[i])) return std::numeric_limits<double>::infinity();
    const double diff = static_cast<double>(x[i]) - ref[i];
    num += diff * diff;
    den += ref[i] * ref[i];
  }
  if (den == 0) return num == 0 ? 0 : std::numeric_limits<double>::infinity();
  return std::sqrt(num / den);
}

}  // namespace kvsim::kernels
