// The kvsim CLI as a user runs it, for the newcomer audit's findings about what the commands
// print and how they exit (shared reports/newcomer-audit.md): help and behaviour agree, and a
// message says what happened in a user's words. Runs the built binary (KVSIM_BIN).
#include <sys/wait.h>

#include <stdlib.h>

#include <array>
#include <catch2/catch_test_macros.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "kernels/device.h"

namespace kvsim {
namespace {

struct Ran {
  int rc = -1;
  std::string out;  // stdout and stderr together
};

Ran Run(const std::string& command) {
  Ran r;
  const std::string cmd = command + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = ::pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

Ran Kvsim(const std::string& args) { return Run(std::string(KVSIM_BIN) + " " + args); }

// A fresh directory for one test's files.
const char* testing_tmpdir() {
  static std::string dir;
  char tmpl[] = "/tmp/kvsim_cli_test.XXXXXX";
  dir = ::mkdtemp(tmpl) != nullptr ? tmpl : "/tmp";
  return dir.c_str();
}

bool Contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

// (a)#12, (b)#103: `kvsim sweep --help` says the scenario defaults to the built-in one, and the
// command said "sweep: give a scenario file" (exit 2).
TEST_CASE("cli: kvsim sweep without a scenario sweeps the built-in default", "[cli]") {
  const Ran help = Kvsim("sweep --help");
  REQUIRE(help.rc == 0);
  REQUIRE(Contains(help.out, "default: the built-in default scenario"));
  const Ran count = Kvsim("sweep --count");
  CHECK(count.rc == 0);
  CHECK(count.out == "4\n");  // scenarios/default.yaml's four pack sizes
}

// (a)#26: without a GPU the message read like a driver problem and did not mention --host.
TEST_CASE("cli: kvsim gpu-validate without a device says so and points at --host", "[cli]") {
  if (kernels::QueryDevice().available) SKIP("a CUDA device is present");
  const Ran r = Kvsim("gpu-validate");
  CHECK(r.rc == 3);
  CHECK(Contains(r.out, "--host runs the same checks on the host references"));
  if (kernels::BuiltWithCuda()) {
    CHECK(Contains(r.out, "no CUDA device found; --host runs the same checks"));
    // The CUDA error is the detail, not the headline.
    CHECK(Contains(r.out, "\n  (cudaGetDeviceCount"));
  } else {
    // A build without nvcc (the sanitizer build, a machine without the toolkit) says why.
    CHECK(Contains(r.out, "kvsim was built without CUDA"));
  }
}

// (b)#51: an empty trace: replay printed "0 requests ... hit rate 0.0000" (exit 0) where
// `kvsim run` says "no requests in the trace" (exit 2).
TEST_CASE("cli: kvsim replay of an empty trace is bad input, as for run", "[cli]") {
  const Ran r = Kvsim("replay /dev/null --block-size 16 --num-blocks 100");
  CHECK(r.rc == 2);
  CHECK(Contains(r.out, "/dev/null: no requests in the trace"));
}

// (a)#18: the replay transcript in the README has no wall-clock line (it cannot match).
TEST_CASE("cli: kvsim replay's text output is the README's, without a timing line", "[cli]") {
  const Ran r = Kvsim(std::string("replay ") + KVSIM_SOURCE_DIR +
                      "/scenarios/traces/sample_tokens.jsonl --block-size 16 --num-blocks 200");
  CHECK(r.rc == 0);
  CHECK(Contains(r.out, "  prompt tokens 38292  hit tokens 28944  hit rate 0.7559\n"));
  CHECK_FALSE(Contains(r.out, "blocks/s"));
}

// (b)#96: merge of a missing shard said "cannot read" without the reason.
TEST_CASE("cli: kvsim merge names why an input cannot be read", "[cli]") {
  const Ran r = Kvsim("merge /dev/null/out.csv /nonexistent/shard.csv");
  CHECK(r.rc == 2);
  CHECK(Contains(r.out, "/nonexistent/shard.csv: cannot read: No such file or directory"));
}

// (a)#10: --trace on a sweep writes FILE.NNNN.json per point, which neither --help nor the
// output said.
TEST_CASE("cli: kvsim run --trace on several points names the files it writes", "[cli]") {
  CHECK(Contains(Kvsim("run --help").out, "FILE.NNNN.json per point"));
  const std::string dir = testing_tmpdir();
  const Ran r = Kvsim("run --set workload.num_requests=5 --seeds 1 --trace " + dir + "/t.json");
  CHECK(r.rc == 0);
  CHECK(Contains(r.out, "kvsim: traces: " + dir + "/t.0000.json … " + dir +
                            "/t.0003.json (one per point)"));
  CHECK(std::filesystem::exists(dir + "/t.0003.json"));
  // With replicates (the default study's seeds 1 … 10): one file per point and seed.
  const Ran reps = Kvsim("run --set workload.num_requests=5 --trace " + dir + "/r.json");
  CHECK(reps.rc == 0);
  CHECK(Contains(reps.out, "kvsim: traces: " + dir + "/r.0000.seed-1.json … " + dir +
                               "/r.0003.seed-10.json (one per point and seed)"));
  CHECK(std::filesystem::exists(dir + "/r.0003.seed-10.json"));
  std::filesystem::remove_all(dir);
}

// (a)#2: a 4 MiB KV budget was printed as "KV memory 0.0 GiB" in the run's header.
TEST_CASE("cli: kvsim run prints a KV budget under 1 GiB in MiB", "[cli]") {
  const Ran r = Kvsim("run --set sweep={} --set workload.num_requests=5 "
                      "--set cache.kv_memory_bytes=22MiB");
  CHECK(Contains(r.out, "KV memory 22.0 MiB"));
  CHECK_FALSE(Contains(r.out, "KV memory 0.0 GiB"));
}

// A scenario sized by cache.num_gpu_blocks (every validation run) printed "KV memory 0.0 GiB",
// and DP/EP never showed in the header. Llama-2-7B's 16-token block is 16 tokens × 32 layers ×
// 2 (K, V) × 32 heads × 128 × 2 bytes = 8 MiB, so 1000 blocks take 7.8 GiB.
TEST_CASE("cli: kvsim run's header names the block count and the parallel layout", "[cli]") {
  const Ran blocks = Kvsim(
      "run --set sweep={} --set workload.num_requests=5 "
      "--set model.preset=llama-2-7b --set parallel.tp=1 "
      "--set cache.block_size=16 --set cache.num_gpu_blocks=1000");
  CHECK(blocks.rc == 0);
  CHECK(Contains(blocks.out, "KV cache 1000 blocks (7.8 GiB per rank)"));
  CHECK_FALSE(Contains(blocks.out, "KV memory 0.0 GiB"));
  const Ran dp = Kvsim(
      "run --set sweep={} --set workload.num_requests=5 --set parallel.dp=2 "
      "--set parallel.ep=2");
  CHECK(dp.rc == 0);
  CHECK(Contains(dp.out, "(TP 2, DP 2, EP 2)"));
}

// A leave-one-out refit that starts from the preset's serving keys starts from values fitted
// with the left-out run. --from-defaults starts from kvsim's built-in values instead
// (core/cost_model.h: step_overhead_us 1500, layer_overhead_us 4), where H100-SXM ships 1233
// and 4.05. With no iterations the written file is the starting point.
TEST_CASE("cli: kvsim calibrate --from-defaults starts a serving fit from the defaults", "[cli]") {
  const std::string dir = testing_tmpdir();
  {
    std::ofstream f(dir + "/run.yaml");
    f << "name: small\nmodel: {preset: llama-3.1-8b}\ncache: {num_gpu_blocks: 2000}\n"
         "workload: {kind: shared_prefix, num_requests: 20, arrival: constant, rate_per_s: 5,\n"
         "  prompt_tokens: {dist: fixed, mean: 100, min: 1, max: 100},\n"
         "  output_tokens: {dist: fixed, mean: 20, min: 1, max: 20}}\n"
         "reference: {summary: {tpot_mean_ms: 8.0}}\n";
  }
  auto fit = [&](const std::string& extra) {
    const Ran r = Kvsim("calibrate --runs " + dir + "/run.yaml --fit step_overhead_us," +
                        "layer_overhead_us --metrics tpot_mean_ms --iterations 0 -o " + dir +
                        "/hw.yaml" + extra);
    CHECK(r.rc == 0);
    std::ifstream f(dir + "/hw.yaml");
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  // Without --from-defaults the fit starts from the preset's values (read from the preset
  // file itself: every refit moves them).
  std::ifstream h100(std::string(KVSIM_SOURCE_DIR) + "/scenarios/hardware/h100-sxm.yaml");
  std::string line, step_line, layer_line;
  while (std::getline(h100, line)) {
    if (line.rfind("step_overhead_us: ", 0) == 0) step_line = line;
    if (line.rfind("layer_overhead_us: ", 0) == 0) layer_line = line;
  }
  REQUIRE_FALSE(step_line.empty());
  REQUIRE_FALSE(layer_line.empty());
  const std::string preset = fit("");
  CHECK(Contains(preset, step_line + "\n"));
  CHECK(Contains(preset, layer_line + "\n"));
  const std::string defaults = fit(" --from-defaults");
  CHECK(Contains(defaults, "step_overhead_us: 1500\n"));
  CHECK(Contains(defaults, "layer_overhead_us: 4\n"));
  std::filesystem::remove_all(dir);
}

// (a)#24, (b)#47: 500 GiB of KV per rank on an 80 GB H100 was accepted without a word.
TEST_CASE("cli: a KV budget above the GPU's memory gets a note", "[cli]") {
  const Ran big = Kvsim("layout --set cache.kv_memory_bytes=500GiB");
  CHECK(big.rc == 0);  // a what-if is legal (the Mooncake study uses 1 TiB on purpose)
  CHECK(Contains(big.out, "kvsim: note: --set cache.kv_memory_bytes: cache.kv_memory_bytes: "
                          "500.00 GiB per rank is more than the GPU's memory"));
  CHECK_FALSE(Contains(Kvsim("layout").out, "more than the GPU's memory"));
}

// (a)#15: plot_sweep.py on a P/D sweep CSV stopped with "no column prefix_hit_rate" (P/D rows
// name the hit rates and the output rate differently), without listing the columns.
TEST_CASE("cli: plot_sweep.py plots a P/D sweep CSV with its defaults", "[cli]") {
  if (std::system("/usr/bin/python3 -c 'import matplotlib' >/dev/null 2>&1") != 0) {
    SKIP("no /usr/bin/python3 with matplotlib");
  }
  const std::string dir = std::string(testing_tmpdir());
  const std::string csv = dir + "/pd_sweep.csv";
  {
    std::ofstream f(csv);
    f << "point,cluster.prefill.count,cluster.decode.count,cluster.topology.nic_gbytes_per_s,"
         "status,ttft_mean_ms,tpot_mean_ms,output_tok_per_s,prefill_hit_rate,decode_hit_rate,"
         "sweep_id,sweep_points\n";
    int point = 0;
    for (int p : {1, 3}) {
      for (int nic : {5, 25}) {
        f << point++ << "," << p << "," << 4 - p << "," << nic << ",ok,100,10,400,0,0.1,x,4\n";
      }
    }
  }
  const std::string plot = std::string("/usr/bin/python3 ") + KVSIM_SOURCE_DIR +
                           "/viz/plot_sweep.py " + csv + " -o " + dir + "/pd_sweep.png 2>&1";
  CHECK(std::system(plot.c_str()) == 0);
  CHECK(std::filesystem::exists(dir + "/pd_sweep.png"));
  // An unknown metric names the columns there are.
  const Ran bad = Run(std::string("/usr/bin/python3 ") + KVSIM_SOURCE_DIR +
                      "/viz/plot_sweep.py " + csv + " --metrics prefix_hit_rate -o /dev/null");
  CHECK(bad.rc == 1);
  CHECK(Contains(bad.out, "columns: ttft_mean_ms, tpot_mean_ms, output_tok_per_s"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kvsim
