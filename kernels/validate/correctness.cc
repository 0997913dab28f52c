#include "kernels/validate/correctness.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

#include "core/int_math.h"
#include "kernels/reference/decode_attention_ref.h"
#include "kernels/reference/half.h"
#include "kernels/reference/row_copy_ref.h"
#include "kernels/row_copy.h"

namespace kvsim::kernels {

void* HostExecutor::Alloc(int64_t bytes) { return std::malloc(static_cast<size_t>(bytes) + 16); }
void HostExecutor::Free(void* p) { std::free(p); }
Status HostExecutor::Upload(void* dst, const void* src, int64_t bytes) {
  std::memcpy(dst, src, static_cast<size_t>(bytes));
  return Status::Ok();
}
Status HostExecutor::Download(void* dst, const void* src, int64_t bytes) {
  std::memcpy(dst, src, static_cast<size_t>(bytes));
  return Status::Ok();
}
Status HostExecutor::RowCopy(const RowCopyParams& p) {
  RunRowCopyHost(p);
  return Status::Ok();
}
Status HostExecutor::DecodeAttention(const DecodeAttentionParams& p) {
  const std::vector<double> ref = DecodeAttentionReference(p.args);
  for (size_t i = 0; i < ref.size(); ++i) p.args.out[i] = static_cast<float>(ref[i]);
  return Status::Ok();
}

namespace {

// A buffer on the executor, freed on scope exit.
class Buf {
 public:
  Buf(Executor& ex, int64_t bytes) : ex_(ex), bytes_(bytes), p_(ex.Alloc(std::max<int64_t>(bytes, 16))) {}
  ~Buf() {
    if (p_) ex_.Free(p_);
  }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  void* get() const { return p_; }
  template <typename T>
  T* as() const { return static_cast<T*>(p_); }
  bool ok() const { return p_ != nullptr; }
  Status Put(const void* host) { return ex_.Upload(p_, host, bytes_); }
  Status Get(void* host) const { return ex_.Download(host, p_, bytes_); }

 private:
  Executor& ex_;
  int64_t bytes_;
  void* p_;
};

std::vector<uint8_t> Poisoned(int64_t bytes, uint8_t salt = 0) {
  std::vector<uint8_t> v(static_cast<size_t>(bytes));
  for (int64_t i = 0; i < bytes; ++i) v[static_cast<size_t>(i)] = PoisonByte(i) ^ salt;
  return v;
}

// Random, never-zero element data: finite values in ±[1/64, 1] for 16-bit floats,
// bytes 0x01..0x7e for 1-byte formats (no NaN patterns).
void FillRandom(std::vector<uint8_t>& v, DType dtype, std::mt19937_64& rng) {
  if (ElementBytes(dtype) == 2) {
    std::uniform_real_distribution<float> mag(1.0f / 64, 1.0f);
    for (size_t i = 0; i + 1 < v.size(); i += 2) {
      float f = mag(rng);
      if (rng() & 1) f = -f;
      const uint16_t h = FloatToHalf(f, dtype);
      std::memcpy(&v[i], &h, 2);
    }
  } else {
    for (auto& b : v) b = static_cast<uint8_t>(1 + rng() % 0x7e);
  }
}

std::string Str(int64_t v) { return std::to_string(v); }

int64_t CountDiff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  int64_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += a[i] != b[i];
  return n;
}

}  // namespace

CaseReport RunLayoutCase(const LayoutCase& c, Executor& ex, const CorrectnessOptions& o) {
  CaseReport rep;
  rep.name = c.name;
  rep.origin = c.origin;
  rep.layout = DescribeLayout(c.view);
  rep.alloc_bytes = c.alloc_bytes;
  const KvLayout& L = c.view;
  const int64_t mbt = L.manager_block_tokens();
  const int64_t m = L.num_manager_blocks();
  const int64_t heads = L.num_heads;
  const int64_t row = L.k_bytes;
  const bool has_v = L.v_bytes > 0;
  std::mt19937_64 rng(o.seed);
  if (m < 2) {
    rep.append.note = "layout has fewer than 2 manager blocks";
    return rep;
  }

  // Slot mapping: blocks 1..m-1 in a random order, every slot of each written once; one
  // extra token with slot −1 after every 7th. Block 0 (the null block) is never written.
  std::vector<int32_t> perm(static_cast<size_t>(m - 1));
  std::iota(perm.begin(), perm.end(), 1);
  std::shuffle(perm.begin(), perm.end(), rng);
  const int64_t valid = (m - 1) * mbt;
  std::vector<int64_t> slots;
  for (int64_t u = 0; u < valid; ++u) {
    if (u % 7 == 3) slots.push_back(-1);
    slots.push_back(static_cast<int64_t>(perm[static_cast<size_t>(u / mbt)]) * mbt + u % mbt);
  }
  const int64_t tokens = static_cast<int64_t>(slots.size());
  rep.tokens = tokens;
  const int64_t in_bytes = tokens * heads * row;
  std::vector<uint8_t> hk(static_cast<size_t>(in_bytes)), hv(static_cast<size_t>(in_bytes));
  FillRandom(hk, c.dtype, rng);
  FillRandom(hv, c.dtype, rng);
  const std::vector<uint8_t> poison = Poisoned(c.alloc_bytes);

  Buf d_cache(ex, c.alloc_bytes), d_k(ex, in_bytes), d_v(ex, in_bytes),
      d_slots(ex, tokens * 8);
  if (!d_cache.ok() || !d_k.ok() || !d_v.ok() || !d_slots.ok()) {
    rep.append.note = "allocation failed";
    return rep;
  }
  d_cache.Put(poison.data());
  d_k.Put(hk.data());
  d_v.Put(hv.data());
  d_slots.Put(slots.data());

  // 1. Append.
  CacheAppendArguments app;
  app.layout = L;
  app.layer = c.layer;
  app.cache = d_cache.get();
  app.dtype = c.dtype;
  app.num_tokens = tokens;
  app.num_heads = heads;
  app.head_size = c.head_size;
  app.key = d_k.get();
  app.value = has_v ? d_v.get() : nullptr;
  app.slot_mapping = d_slots.as<int64_t>();
  Status st = CanImplement(app);
  if (!st.ok()) {
    rep.append.note = st.message();
    return rep;
  }
  rep.append.ran = true;
  const RowCopyParams app_p = MakeParams(app);
  rep.vec_bytes = app_p.vec_bytes;
  st = ex.RowCopy(app_p);
  std::vector<uint8_t> got(poison.size());
  if (st.ok()) st = d_cache.Get(got.data());
  if (!st.ok()) {
    rep.append.note = st.message();
    return rep;
  }
  std::vector<uint8_t> ref = poison;
  {
    CacheAppendArguments h = app;
    h.cache = ref.data();
    h.key = hk.data();
    h.value = has_v ? hv.data() : nullptr;
    h.slot_mapping = slots.data();
    RunRowCopyHost(MakeParams(h));
  }
  rep.append_mismatched_bytes = CountDiff(got, ref);
  for (size_t i = 0; i < got.size(); ++i)
    rep.poisoned_bytes_changed += (ref[i] == poison[i] && got[i] != poison[i]);
  // The reference must have written every byte of every (token, head) cell it was given
  // and nothing else: count the written bytes as a sanity check of the harness itself.
  int64_t written = 0;
  for (size_t i = 0; i < ref.size(); ++i) written += ref[i] != poison[i];
  const int64_t expect = valid * heads * (L.k_bytes + L.v_bytes);
  rep.append.passed = rep.append_mismatched_bytes == 0 && written <= expect &&
                      written * 10 >= expect * 9;  // random data may equal poison by chance
  if (!rep.append.passed) {
    rep.append.note = Str(rep.append_mismatched_bytes) + " bytes differ from the reference (" +
                      Str(rep.poisoned_bytes_changed) + " poisoned bytes changed); reference " +
                      "wrote " + Str(written) + " of " + Str(expect) + " expected bytes";
  }

  // 2. Gather back, and the same through a plain dense layout.
  const KvLayout plain = PlainLayoutLike(L);
  const int64_t plain_bytes = plain.allocation_bytes();
  Buf d_plain(ex, plain_bytes), d_ok(ex, in_bytes), d_ov(ex, in_bytes);
  const std::vector<uint8_t> out_poison = Poisoned(in_bytes, 0x3c);
  std::vector<uint8_t> gk(out_poison.size()), gv(out_poison.size());
  std::vector<uint8_t> pk(out_poison.size()), pv(out_poison.size());
  rep.gather.ran = true;
  {
    const PagedGatherArguments g = ReadBackArguments(app, d_ok.get(), has_v ? d_ov.get() : nullptr);
    d_ok.Put(out_poison.data());
    d_ov.Put(out_poison.data());
    st = CanImplement(g);
    if (st.ok()) st = ex.RowCopy(MakeParams(g));
    if (st.ok()) st = d_ok.Get(gk.data());
    if (st.ok()) st = d_ov.Get(gv.data());
    // Same data through the plain layout.
    CacheAppendArguments pa = app;
    pa.layout = plain;
    pa.layer = 0;
    pa.cache = d_plain.get();
    const std::vector<uint8_t> plain_poison = Poisoned(plain_bytes, 0x5a);
    if (st.ok()) st = d_plain.Put(plain_poison.data());
    if (st.ok()) st = CanImplement(pa);
    if (st.ok()) st = ex.RowCopy(MakeParams(pa));
    PagedGatherArguments pg = g;
    pg.layout = plain;
    pg.layer = 0;
    pg.cache = d_plain.get();
    if (st.ok()) st = d_ok.Put(out_poison.data());
    if (st.ok()) st = d_ov.Put(out_poison.data());
    if (st.ok()) st = ex.RowCopy(MakeParams(pg));
    if (st.ok()) st = d_ok.Get(pk.data());
    if (st.ok()) st = d_ov.Get(pv.data());
  }
  if (!st.ok()) {
    rep.gather.note = st.message();
  } else {
    // Expected: the input rows of tokens with a slot, the output poison elsewhere.
    std::vector<uint8_t> ek = out_poison, ev = out_poison;
    const int64_t tok_bytes = heads * row;
    for (int64_t i = 0; i < tokens; ++i) {
      if (slots[static_cast<size_t>(i)] < 0) continue;
      std::memcpy(&ek[i * tok_bytes], &hk[i * tok_bytes], tok_bytes);
      std::memcpy(&ev[i * tok_bytes], &hv[i * tok_bytes], tok_bytes);
    }
    const int64_t dk = CountDiff(gk, ek), dv = has_v ? CountDiff(gv, ev) : 0;
    const int64_t plain_diff = CountDiff(gk, pk) + (has_v ? CountDiff(gv, pv) : 0);
    rep.gather.passed = dk == 0 && dv == 0 && plain_diff == 0;
    if (!rep.gather.passed)
      rep.gather.note = Str(dk + dv) + " gathered bytes differ from the inputs; " +
                        Str(plain_diff) + " differ from the plain layout's gather";
  }

  // 3. Convert the written blocks to dense HND with twice the block size, and back.
  {
    KvLayout mid = plain;
    mid.order = KvOrder::kLBHNC;
    mid.block_tokens = 2 * mbt;
    mid.num_blocks = CeilDiv(valid, 2 * mbt) + 1;
    const int64_t mid_bytes = mid.allocation_bytes();
    Buf d_mid(ex, mid_bytes), d_back(ex, c.alloc_bytes), d_sbt(ex, (m - 1) * 4),
        d_dbt(ex, mid.num_blocks * 4);
    std::vector<int32_t> dbt(static_cast<size_t>(mid.num_blocks));
    // Destination blocks in reverse order, so the block tables really differ.
    for (int64_t i = 0; i < mid.num_blocks; ++i)
      dbt[static_cast<size_t>(i)] = static_cast<int32_t>(mid.num_blocks - 1 - i);
    const std::vector<uint8_t> mid_poison = Poisoned(mid_bytes, 0x77);
    d_mid.Put(mid_poison.data());
    d_back.Put(poison.data());
    d_sbt.Put(perm.data());
    d_dbt.Put(dbt.data());
    LayoutConvertArguments cv;
    cv.src_layout = L;
    cv.src_layer = c.layer;
    cv.src = d_cache.get();
    cv.src_block_table = d_sbt.as<int32_t>();
    cv.dst_layout = mid;
    cv.dst = d_mid.get();
    cv.dst_block_table = d_dbt.as<int32_t>();
    cv.num_tokens = valid;
    st = CanImplement(cv);
    if (!st.ok()) {
      rep.convert.note = st.message();
    } else {
      rep.convert.ran = true;
      LayoutConvertArguments back = cv;
      std::swap(back.src_layout, back.dst_layout);
      std::swap(back.src_layer, back.dst_layer);
      back.src = d_mid.get();
      back.dst = d_back.get();
      std::swap(back.src_block_table, back.dst_block_table);
      std::vector<uint8_t> gm(mid_poison.size()), gb(poison.size());
      st = ex.RowCopy(MakeParams(cv));
      if (st.ok()) st = d_mid.Get(gm.data());
      if (st.ok()) st = ex.RowCopy(MakeParams(back));
      if (st.ok()) st = d_back.Get(gb.data());
      if (!st.ok()) {
        rep.convert.note = st.message();
      } else {
        std::vector<uint8_t> rm = mid_poison;
        LayoutConvertArguments h = cv;
        h.src = ref.data();
        h.src_block_table = perm.data();
        h.dst = rm.data();
        h.dst_block_table = dbt.data();
        RunRowCopyHost(MakeParams(h));
        const int64_t dm = CountDiff(gm, rm), db = CountDiff(gb, got);
        rep.convert.passed = dm == 0 && db == 0;
        if (!rep.convert.passed)
          rep.convert.note = Str(dm) + " bytes of the HND copy differ from the reference; " +
                             Str(db) + " bytes differ after the round trip";
      }
    }
  }

  // 4. Decode attention: the case's layout against the plain layout and fp64.
  {
    const int64_t nseq = std::min<int64_t>(4, m - 1);
    const int64_t per = (m - 1) / nseq;
    const int64_t qh = heads * c.q_per_kv;
    std::vector<int32_t> bt(static_cast<size_t>(nseq * per));
    std::vector<int32_t> lens(static_cast<size_t>(nseq));
    int64_t max_len = 0;
    for (int64_t s = 0; s < nseq; ++s) {
      for (int64_t j = 0; j < per; ++j)
        bt[static_cast<size_t>(s * per + j)] = perm[static_cast<size_t>(s * per + j)];
      int64_t len = per * mbt - (s % 2 == 1 ? (mbt + 1) / 2 : 0);
      len = std::max<int64_t>(1, len);
      lens[static_cast<size_t>(s)] = static_cast<int32_t>(len);
      max_len = std::max(max_len, len);
    }
    std::vector<uint8_t> q(static_cast<size_t>(nseq * qh * c.head_size * 2));
    FillRandom(q, c.dtype == DType::kFloat16 ? DType::kFloat16 : DType::kBFloat16, rng);
    DecodeAttentionArguments at;
    at.layout = L;
    at.layer = c.layer;
    at.dtype = c.dtype;
    at.batch = nseq;
    at.num_q_heads = qh;
    at.num_kv_heads = heads;
    at.head_size = c.head_size;
    at.max_blocks_per_seq = per;
    at.max_seq_len = max_len;
    at.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_size)));
    at.split_tokens = o.split_tokens;
    const int64_t out_n = nseq * qh * c.head_size;
    Buf d_q(ex, static_cast<int64_t>(q.size())), d_bt(ex, nseq * per * 4), d_len(ex, nseq * 4),
        d_out(ex, out_n * 4), d_out2(ex, out_n * 4), d_ws(ex, WorkspaceFloats(at) * 4);
    d_q.Put(q.data());
    d_bt.Put(bt.data());
    d_len.Put(lens.data());
    at.cache = d_cache.get();
    at.query = d_q.get();
    at.block_tables = d_bt.as<int32_t>();
    at.seq_lens = d_len.as<int32_t>();
    at.out = d_out.as<float>();
    at.workspace = d_ws.as<float>();
    st = CanImplement(at);
    if (!st.ok()) {
      rep.attention.note = st.message();
    } else {
      rep.attention.ran = true;
      DecodeAttentionArguments ap = at;
      ap.layout = plain;
      ap.layer = 0;
      ap.cache = d_plain.get();
      ap.out = d_out2.as<float>();
      std::vector<float> o1(static_cast<size_t>(out_n)), o2(o1.size());
      st = ex.DecodeAttention(MakeParams(at));
      if (st.ok()) st = ex.DecodeAttention(MakeParams(ap));
      if (st.ok()) st = d_out.Get(o1.data());
      if (st.ok()) st = d_out2.Get(o2.data());
      if (!st.ok()) {
        rep.attention.note = st.message();
      } else {
        DecodeAttentionArguments h = at;
        h.cache = ref.data();
        h.query = q.data();
        h.block_tables = bt.data();
        h.seq_lens = lens.data();
        const std::vector<double> r = DecodeAttentionReference(h);
        rep.attention_rel_err = RelativeError(o1.data(), r);
        rep.attention_tolerance = o.attention_tolerance;
        const bool identical = std::memcmp(o1.data(), o2.data(), o1.size() * 4) == 0;
        rep.attention.passed = identical && rep.attention_rel_err <= o.attention_tolerance;
        if (!rep.attention.passed)
          rep.attention.note = std::string(identical ? "" : "not bit-identical to the plain "
                                                            "layout; ") +
                               "rel. error " + std::to_string(rep.attention_rel_err) +
                               " vs fp64 (tolerance " + std::to_string(o.attention_tolerance) +
                               ")";
      }
    }
  }
  return rep;
}

}  // namespace kvsim::kernels
