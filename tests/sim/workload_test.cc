// Workload generators: determinism, caps, arrival rates, lengths, shared prompts, sessions,
// trees, and the Azure CSV reader.
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "sim/workload/synthetic_workload.h"
#include "sim/workload/trace_workload.h"
#include "sim/workload/workload_config.h"

namespace kvsim {
namespace {

// The prompt token ids of a request (specs carry recipes).
std::vector<TokenId> Ids(const IWorkload& w, const RequestSpec& r) {
  std::vector<TokenId> ids;
  w.BuildPrompt(r, ids);
  return ids;
}

std::vector<RequestSpec> Drain(IWorkload& w) {
  std::vector<RequestSpec> out;
  while (auto r = w.Next()) out.push_back(std::move(*r));
  return out;
}

TEST_CASE("rng: same seed, same stream; forks are independent") {
  Rng a(42), b(42);
  for (int i = 0; i < 100; ++i) CHECK(a.Next() == b.Next());
  Rng f1 = Rng(42).Fork(1), f2 = Rng(42).Fork(2);
  CHECK(f1.Next() != f2.Next());
  Rng u(1);
  double sum = 0;
  for (int i = 0; i < 100000; ++i) sum += u.Uniform();
  CHECK(sum / 100000 == Catch::Approx(0.5).margin(0.01));
  Rng g(2);
  double gs = 0;
  for (int i = 0; i < 100000; ++i) gs += g.Gamma(0.25, 4.0);  // mean k·θ = 1
  CHECK(gs / 100000 == Catch::Approx(1.0).margin(0.03));
}

TEST_CASE("lengths: fixed, uniform bounds, lognormal mean") {
  Rng rng(5);
  CHECK(DrawLength({"fixed", 300, 0.5, 1, 1000}, rng) == 300);
  for (int i = 0; i < 1000; ++i) {
    const int64_t v = DrawLength({"uniform", 0, 0, 10, 20}, rng);
    CHECK(v >= 10);
    CHECK(v <= 20);
  }
  double s = 0;
  for (int i = 0; i < 50000; ++i) s += static_cast<double>(DrawLength({"lognormal", 1000, 0.5, 1, 1 << 20}, rng));
  CHECK(s / 50000 == Catch::Approx(1000).epsilon(0.03));
}

TEST_CASE("shared_prefix: deterministic, capped, Poisson rate, shared system prompt") {
  WorkloadConfig c;
  c.num_requests = 5000;
  c.rate_per_s = 50;
  c.system_prompt.tokens = 100;
  c.system_prompt.count = 3;
  c.prompt_tokens = {"fixed", 20, 0, 1, 100};
  SyntheticWorkload a(c, 9), b(c, 9);
  auto ra = Drain(a), rb = Drain(b);
  REQUIRE(ra.size() == 5000);
  REQUIRE(rb.size() == 5000);
  std::map<std::vector<TokenId>, int> prefixes;
  for (size_t i = 0; i < ra.size(); ++i) {
    const std::vector<TokenId> ids = Ids(a, ra[i]);
    CHECK(ids == Ids(b, rb[i]));
    CHECK(ra[i].arrival == rb[i].arrival);
    CHECK(ra[i].id.value() == static_cast<int64_t>(i));
    CHECK(ra[i].num_prompt_tokens == 120);
    REQUIRE(ids.size() == 120);
    if (i) CHECK(ra[i].arrival >= ra[i - 1].arrival);
    prefixes[std::vector<TokenId>(ids.begin(), ids.begin() + 100)]++;
  }
  CHECK(prefixes.size() == 3);
  const double rate = 4999.0 / (static_cast<double>(ra.back().arrival) / 1e9);
  CHECK(rate == Catch::Approx(50).epsilon(0.05));
}

TEST_CASE("prompt recipes: the ids an eager generator draws; the stream moves past them") {
  // The token stream's contract, drawn here by hand: Rng(seed).Fork(3) gives each request
  // its output seed, then its user tokens scaled into [0, vocab) by multiply-shift.
  WorkloadConfig c;
  c.num_requests = 3;
  c.vocab_size = 1000;
  c.prompt_tokens = {"fixed", 5, 0, 1, 100};
  SyntheticWorkload w(c, 11);
  const auto reqs = Drain(w);
  REQUIRE(reqs.size() == 3);
  Rng t = Rng(11).Fork(3);
  for (const RequestSpec& r : reqs) {
    CHECK(r.output_seed == t.Next());
    std::vector<TokenId> want;
    for (int i = 0; i < 5; ++i)
      want.push_back(static_cast<TokenId>(((t.Next() >> 32) * 1000) >> 32));
    CHECK(Ids(w, r) == want);
    CHECK(Ids(w, r) == want);  // building again gives the same ids
  }
}

TEST_CASE("prompt recipes: a long conversation is a few parts, not its tokens") {
  WorkloadConfig c;
  c.kind = "multi_turn";
  c.num_requests = 10;
  c.system_prompt = {4000, 1, 0.0};
  c.prompt_tokens = {"fixed", 3000, 0, 1, 10000};
  c.output_tokens = {"fixed", 1000, 0, 1, 10000};
  c.multi_turn.turns = {"fixed", 4, 0, 1, 10};
  SyntheticWorkload w(c, 5);
  std::vector<RequestSpec> turn = {*w.Next()};
  for (int k = 1; k < 4; ++k) {
    std::vector<RequestSpec> next;
    w.OnFinish(turn.back(), 1000, 0, next);
    REQUIRE(next.size() == 1);
    turn.push_back(next[0]);
  }
  // Turn 3: 4000 + 3000 + 3 × (1000 reply + 3000 new) tokens, 64 KB as ids; the recipe is
  // the system prompt, the first user text and a reply + user text per earlier turn.
  const RequestSpec& last = turn.back();
  CHECK(last.num_prompt_tokens == 4000 + 3000 + 3 * 4000);
  CHECK(last.prompt.size() == 2 + 2 * 3);
  CHECK(last.bytes() < 1024);
  CHECK(Ids(w, last).size() == 19000);
}

TEST_CASE("duration cap ends the stream; burst puts everything at t = 0") {
  WorkloadConfig c;
  c.num_requests = 0;
  c.duration_s = 10;
  c.rate_per_s = 20;
  SyntheticWorkload w(c, 1);
  auto r = Drain(w);
  CHECK(r.size() > 150);
  CHECK(r.size() < 250);
  CHECK(r.back().arrival <= 10 * kTicksPerSecond);
  WorkloadConfig b;
  b.num_requests = 10;
  b.arrival = "burst";
  SyntheticWorkload wb(b, 1);
  for (const auto& x : Drain(wb)) CHECK(x.arrival == 0);
}

TEST_CASE("gamma arrivals keep the mean rate and raise the variance") {
  WorkloadConfig c;
  c.num_requests = 20000;
  c.rate_per_s = 10;
  c.arrival = "gamma";
  c.gamma_cv = 3.0;
  SyntheticWorkload w(c, 4);
  auto r = Drain(w);
  std::vector<double> gaps;
  for (size_t i = 1; i < r.size(); ++i) gaps.push_back((r[i].arrival - r[i - 1].arrival) / 1e9);
  double m = 0, v = 0;
  for (double g : gaps) m += g;
  m /= static_cast<double>(gaps.size());
  for (double g : gaps) v += (g - m) * (g - m);
  v /= static_cast<double>(gaps.size());
  CHECK(m == Catch::Approx(0.1).epsilon(0.1));
  CHECK(std::sqrt(v) / m == Catch::Approx(3.0).epsilon(0.15));
}

TEST_CASE("multi_turn: the next turn extends the conversation and arrives after think time") {
  WorkloadConfig c;
  c.kind = "multi_turn";
  c.num_requests = 100;
  c.prompt_tokens = {"fixed", 30, 0, 1, 100};
  c.output_tokens = {"fixed", 10, 0, 1, 100};
  c.multi_turn.turns = {"fixed", 3, 0, 1, 10};
  SyntheticWorkload w(c, 2);
  auto first = w.Next();
  REQUIRE(first);
  std::vector<RequestSpec> follow;
  w.OnFinish(*first, 10, 5 * kTicksPerSecond, follow);
  REQUIRE(follow.size() == 1);
  const RequestSpec& t1 = follow[0];
  CHECK(t1.turn == 1);
  CHECK(t1.group == first->group);
  CHECK(t1.arrival >= 5 * kTicksPerSecond);
  const std::vector<TokenId> p0 = Ids(w, *first), p1 = Ids(w, t1);
  CHECK(t1.num_prompt_tokens == 70);
  REQUIRE(p1.size() == 70);
  CHECK(std::equal(p0.begin(), p0.end(), p1.begin()));
  for (int k = 0; k < 10; ++k)
    CHECK(p1[30 + k] == OutputToken(first->output_seed, k, c.vocab_size));
  std::vector<RequestSpec> f2, f3;
  w.OnFinish(t1, 10, 6 * kTicksPerSecond, f2);
  REQUIRE(f2.size() == 1);
  w.OnFinish(f2[0], 10, 7 * kTicksPerSecond, f3);
  CHECK(f3.empty());  // 3 turns
}

TEST_CASE("agent_tree: branching children extend the parent, depth-limited") {
  WorkloadConfig c;
  c.kind = "agent_tree";
  c.num_requests = 1000;
  c.agent_tree.depth = 2;
  c.agent_tree.branching = 3;
  c.agent_tree.tool_tokens = {"fixed", 5, 0, 1, 100};
  SyntheticWorkload w(c, 3);
  auto root = w.Next();
  REQUIRE(root);
  std::vector<RequestSpec> kids;
  w.OnFinish(*root, 4, 0, kids);
  REQUIRE(kids.size() == 3);
  for (const auto& k : kids) {
    CHECK(k.turn == 1);
    CHECK(k.num_prompt_tokens == root->num_prompt_tokens + 4 + 5);
    const std::vector<TokenId> ids = Ids(w, k), parent = Ids(w, *root);
    REQUIRE(ids.size() == parent.size() + 9);
    CHECK(std::equal(parent.begin(), parent.end(), ids.begin()));
  }
  std::vector<RequestSpec> grandkids, none;
  w.OnFinish(kids[0], 4, 0, grandkids);
  CHECK(grandkids.size() == 3);
  w.OnFinish(grandkids[0], 4, 0, none);
  CHECK(none.empty());
}

TEST_CASE("azure csv: arrivals relative to the first, lengths, clear errors") {
  const std::string csv =
      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
      "2023-11-16 18:17:03.5000000,4808,10\n"
      "2023-11-16 18:17:04.0000000,3180,8\n"
      "2023-11-16 23:59:59.0000000,110,0\n"
      "2023-11-17 00:00:01.0000000,7,3\n";
  auto a = ParseAzureCsv(csv, "x.csv");
  REQUIRE(a.ok());
  REQUIRE(a->size() == 4);
  CHECK(a.value()[0].time_s == 0);
  CHECK(a.value()[1].time_s == Catch::Approx(0.5));
  CHECK(a.value()[1].prompt_tokens == 3180);
  CHECK(a.value()[2].output_tokens == 1);  // at least one token is generated
  CHECK(a.value()[3].time_s == Catch::Approx(5 * 3600 + 42 * 60 + 57.5));
  auto bad = ParseAzureCsv("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16,1\n", "y.csv");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("y.csv:2") != std::string::npos);
}

TEST_CASE("azure trace: the optional system prompt leads every prompt; JSONL traces refuse it") {
  const std::string dir = std::filesystem::temp_directory_path() / "kvsim_azure_sys";
  std::filesystem::create_directories(dir);
  const std::string csv = dir + "/a.csv";
  std::ofstream(csv) << "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                        "2023-11-16 18:17:03.5000000,40,10\n"
                        "2023-11-16 18:17:04.0000000,30,8\n"
                        "2023-11-16 18:17:05.0000000,20,3\n";
  WorkloadConfig c;
  c.kind = "trace";
  c.trace.path = csv;
  c.trace.required = true;
  c.system_prompt.tokens = 64;
  c.system_prompt.count = 1;
  auto w = MakeWorkload(c, 7, nullptr);
  REQUIRE(w.ok());
  const auto reqs = Drain(*w.value());
  REQUIRE(reqs.size() == 3);
  const std::vector<TokenId> first = Ids(*w.value(), reqs[0]);
  CHECK(first.size() == 64 + 40);
  CHECK(Ids(*w.value(), reqs[2]).size() == 64 + 20);
  for (const auto& r : reqs) {
    const std::vector<TokenId> ids = Ids(*w.value(), r);
    CHECK(std::equal(ids.begin(), ids.begin() + 64, first.begin()));
  }
  // Without a system prompt nothing is shared up front.
  c.system_prompt.tokens = 0;
  auto plain = MakeWorkload(c, 7, nullptr);
  REQUIRE(plain.ok());
  CHECK(Ids(*plain.value(), Drain(*plain.value())[0]).size() == 40);

  const std::string jsonl = dir + "/t.jsonl";
  std::ofstream(jsonl) << "{\"id\": 1, \"tokens\": [1, 2, 3], \"timestamp\": 0}\n";
  c.trace.path = jsonl;
  c.system_prompt.tokens = 64;
  auto refused = MakeWorkload(c, 7, nullptr);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("Azure CSV traces only") != std::string::npos);
}

TEST_CASE("missing trace: an error when required, a noted fallback otherwise") {
  WorkloadConfig c;
  c.kind = "trace";
  c.trace.path = "/nonexistent/trace.jsonl";
  c.trace.required = true;
  auto w = MakeWorkload(c, 1, nullptr);
  REQUIRE_FALSE(w.ok());
  CHECK(w.status().message().find("--set workload.trace.path") != std::string::npos);
  c.trace.required = false;
  std::string note;
  auto f = MakeWorkload(c, 1, &note);
  REQUIRE(f.ok());
  CHECK(note.find("not found") != std::string::npos);
}

}  // namespace
}  // namespace kvsim

namespace kvsim {
namespace {

TEST_CASE("staged constant load: evenly spaced arrivals, the rate changes by stage, then ends") {
  WorkloadConfig c;
  c.num_requests = 0;
  c.arrival = "constant";
  c.stages = {{2.0, 1.0}, {4.0, 1.0}};
  c.prompt_tokens = {"fixed", 10, 0, 1, 100};
  SyntheticWorkload w(c, 1);
  std::vector<Tick> got;
  while (auto r = w.Next()) got.push_back(r->arrival);
  // Stage 1 at 2/s: 0, 0.5 s; stage 2 from 1 s at 4/s: 1, 1.25, 1.5, 1.75 s.
  const std::vector<Tick> want = {0, 500000000, 1000000000, 1250000000, 1500000000, 1750000000};
  CHECK(got == want);
}

TEST_CASE("closed loop: N clients, each sends its next request when the last one finishes") {
  WorkloadConfig c;
  c.num_requests = 5;
  c.arrival = "burst";
  c.concurrency = 2;
  c.prompt_tokens = {"fixed", 10, 0, 1, 100};
  SyntheticWorkload w(c, 1);
  auto first = w.Next(), second = w.Next();
  REQUIRE(first);
  REQUIRE(second);
  CHECK_FALSE(w.Next());  // no third client
  std::vector<RequestSpec> follow;
  w.OnFinish(*first, 10, 7000, follow);
  REQUIRE(follow.size() == 1);
  CHECK(follow[0].arrival == 7000);
  CHECK(follow[0].num_prompt_tokens == 10);
  CHECK(follow[0].id == RequestId{2});
  // The cap holds: requests 3 and 4 are the last ones.
  std::vector<RequestSpec> more;
  w.OnFinish(*second, 10, 8000, more);
  w.OnFinish(follow[0], 10, 9000, more);
  w.OnFinish(*first, 10, 9500, more);
  CHECK(more.size() == 2);
}

TEST_CASE("shared_prefix prompt pool: count x users prompts, each sent once per pass, per stage") {
  // inference-perf's shared_prefix: 3 system prompts x 4 users = 12 fixed prompts; request k of
  // a stage sends pool[k mod 12], the pool shuffled once, and each stage starts at pool[0].
  WorkloadConfig c;
  c.num_requests = 0;
  c.arrival = "constant";
  c.stages = {{12, 3}, {6, 2}};  // 36 then 12 requests
  c.system_prompt = {50, 3, 0.0, 4};
  c.prompt_tokens = {"fixed", 30, 0, 1, 100};
  SyntheticWorkload w(c, 5);
  auto rs = Drain(w);
  REQUIRE(rs.size() == 48);
  std::vector<std::vector<TokenId>> ids;
  for (const auto& r : rs) {
    ids.push_back(Ids(w, r));
    REQUIRE(ids.back().size() == 80);
  }
  // Pass 1 of stage 1: 12 distinct prompts; 4 per system prompt (the first 50 ids).
  std::map<std::vector<TokenId>, int> whole, system;
  for (int k = 0; k < 12; ++k) {
    whole[ids[k]]++;
    system[std::vector<TokenId>(ids[k].begin(), ids[k].begin() + 50)]++;
  }
  CHECK(whole.size() == 12);
  REQUIRE(system.size() == 3);
  for (const auto& [prefix, n] : system) CHECK(n == 4);
  // Later passes repeat pass 1 in the same order, and stage 2 starts the pool over.
  for (int k = 12; k < 36; ++k) CHECK(ids[k] == ids[k % 12]);
  for (int k = 0; k < 12; ++k) CHECK(ids[36 + k] == ids[k]);
  // Shuffled once: the first pass is not grouped by system prompt (3 runs of 4).
  int changes = 0;
  for (int k = 1; k < 12; ++k)
    changes += std::equal(ids[k].begin(), ids[k].begin() + 50, ids[k - 1].begin()) ? 0 : 1;
  CHECK(changes > 2);
  // Another seed, another pool.
  SyntheticWorkload other(c, 6);
  CHECK(Ids(other, *other.Next()) != ids[0]);
}

TEST_CASE("inference_perf arrivals: floor(rate x duration) per stage, rescaled gaps, CV near 1") {
  // inference-perf's constant load: n = floor(rate * duration) exponential gaps, rescaled so
  // that they sum to the stage's duration; the last request lands on the stage's end.
  WorkloadConfig c;
  c.num_requests = 0;
  c.arrival = "inference_perf";
  c.stages = {{20.5, 100}, {5, 40}};  // 2050, then 200 requests
  c.prompt_tokens = {"fixed", 10, 0, 1, 100};
  SyntheticWorkload a(c, 3), b(c, 3);
  auto rs = Drain(a), again = Drain(b);
  REQUIRE(rs.size() == 2250);
  REQUIRE(again.size() == 2250);
  for (size_t i = 0; i < rs.size(); ++i) {
    CHECK(rs[i].arrival == again[i].arrival);
    if (i) CHECK(rs[i].arrival >= rs[i - 1].arrival);
  }
  CHECK(rs[2049].arrival == 100'000'000'000);   // end of stage 1
  CHECK(rs[2050].arrival > 100'000'000'000);    // stage 2 starts after it
  CHECK(rs.back().arrival == 140'000'000'000);  // end of stage 2
  // Gaps of stage 1: mean duration / n, coefficient of variation near 1 (exponential), not
  // the 0 of evenly spaced arrivals.
  double sum = 0, sq = 0;
  for (size_t i = 1; i < 2050; ++i) {
    const double g = static_cast<double>(rs[i].arrival - rs[i - 1].arrival) * 1e-9;
    sum += g;
    sq += g * g;
  }
  const double n = 2049, mean = sum / n, cv = std::sqrt(sq / n - mean * mean) / mean;
  CHECK(mean == Catch::Approx(100.0 / 2050).epsilon(0.01));
  CHECK(cv == Catch::Approx(1.0).margin(0.1));
  // Without stages: one stage of rate_per_s for duration_s.
  WorkloadConfig one = c;
  one.stages.clear();
  one.rate_per_s = 3;
  one.duration_s = 10;
  SyntheticWorkload w(one, 1);
  auto single = Drain(w);
  REQUIRE(single.size() == 30);
  CHECK(single.back().arrival == 10'000'000'000);
}

}  // namespace
}  // namespace kvsim
