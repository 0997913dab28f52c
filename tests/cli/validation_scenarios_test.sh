#!/usr/bin/env bash
# scripts/validation_scenarios.py on cases in the training split's schema that the shipped
# scenarios do not exercise: a model_arch that names a preset, a checkpoint with no preset
# (written inline from model_arch, MoE routing from a Mixtral name), data + expert parallelism
# (--enable-expert-parallel: EP = TP x DP), a run without num_gpu_blocks (KV memory from the
# GPU's), a run with vLLM's CPU offloading tier, a closed-loop case (`concurrency`), and a GPU
# with no preset (a clear error). The written scenarios must load and run in kvsim and print
# the comparison with `reference:`.
# Usage: validation_scenarios_test.sh KVSIM ROOT
set -u
kvsim=$1 root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cat > "$tmp/cases.json" <<'JSON'
{"cases": [
 {"id": "t-preset", "model": "someone/some-llama", "model_arch": {"preset": "llama-3.1-8b"},
  "gpu": "NVIDIA GeForce RTX 4090", "tp": 1, "dp": 1,
  "source_refs": {"measured": "synthetic"}, "experiment": "t1", "engine": "vLLM",
  "scheduler": {"max_num_batched_tokens": 2048, "max_num_seqs": 64, "max_model_len": 4096,
                "prefix_caching": true},
  "kv": {"num_gpu_blocks": 4000, "block_size": 16},
  "workload": {"system_prompt_tokens": 100, "question_tokens": 200, "implied_mean_output_tokens": 20,
               "num_system_prompts": 2, "stages": [{"rate_per_s": 2, "duration_s": 3}]},
  "measured": {"summary": {"ttft_mean_ms": 30, "tpot_mean_ms": 12, "e2e_mean_ms": 260}}},
 {"id": "t-inline", "model": "acme/Mixtral-8x7B-Experimental",
  "model_arch": {"layers": 32, "kv_heads": 8, "head": 128, "hidden": 4096, "heads": 32,
                 "params": 46700000000, "active": 12900000000, "vocab": 32000, "dtype": "bf16"},
  "gpu": "H100-80GB-HBM3 (SXM)", "tp": 2, "dp": 2, "expert_parallel": true,
  "source_refs": {"measured": "synthetic"}, "experiment": "t2", "engine": "vLLM",
  "scheduler": {"max_num_batched_tokens": 2048, "max_num_seqs": 64, "max_model_len": 4096,
                "prefix_caching": true},
  "kv": {"num_gpu_blocks": 4000, "block_size": 16},
  "workload": {"system_prompt_tokens": 100, "question_tokens": 200, "implied_mean_output_tokens": 20,
               "num_system_prompts": 2, "stages": [{"rate_per_s": 2, "duration_s": 2},
                                                    {"rate_per_s": 4, "duration_s": 2}]},
  "measured": {"summary": {"ttft_mean_ms": 40, "tpot_mean_ms": 15, "e2e_mean_ms": 330},
               "stage0": {"ttft_mean_ms": 38, "tpot_mean_ms": 14, "e2e_mean_ms": 310},
               "stage1": {"ttft_mean_ms": 42, "tpot_mean_ms": 16, "e2e_mean_ms": 350}}}
]}
JSON
# Without num_gpu_blocks: kvsim derives the KV memory from gpu_memory_utilization (0.9 when the
# case gives none), as vLLM's worker does.
python3 - "$tmp/cases.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
c = dict(d["cases"][0]); c["id"] = "t-nokv"; c["kv"] = {"block_size": 16}
d["cases"].append(c)
c = json.loads(json.dumps(d["cases"][0])); c["id"] = "t-offload"; c["kv"]["cpu_offload_blocks"] = 500
d["cases"].append(c)
c = json.loads(json.dumps(d["cases"][0])); c["id"] = "t-gib"
c["kv"] = {"num_gpu_blocks": None, "gpu_memory_utilization": 0.95, "block_size": 16,
           "cpu_offload_gib": 8}
c["engine"] = "vLLM v0.15.1"; c["workload"]["users_per_system_prompt"] = 5
d["cases"].append(c)
c = json.loads(json.dumps(d["cases"][0])); c["id"] = "t-closed"
c["workload"].update({"concurrency": 4, "num_requests": 40}); del c["workload"]["stages"]
d["cases"].append(c)
json.dump(d, open(sys.argv[1], "w"))
PY
python3 "$root/scripts/validation_scenarios.py" "$tmp/cases.json" --out "$tmp/out" > "$tmp/log" 2>&1 ||
  { cat "$tmp/log"; fail "the writer exited $?"; }
grep -q "^  preset: llama-3.1-8b$" "$tmp/out/t-preset.yaml" || fail "model_arch preset not used"
grep -q "^  preset: RTX-4090$" "$tmp/out/t-preset.yaml" || fail "RTX 4090 hardware preset"
grep -q "^  gpu_memory_utilization: 0.9$" "$tmp/out/t-nokv.yaml" || fail "KV memory from the GPU's"
f=$tmp/out/t-gib.yaml
grep -q "^  gpu_memory_utilization: 0.95$" "$f" || fail "the case's gpu_memory_utilization"
grep -q "^  offload: {cpu_bytes: 8GiB}$" "$f" || fail "CPU tier in GiB"
grep -q "^  async_scheduling: true$" "$f" || fail "vLLM 0.15 schedules asynchronously"
grep -q "async_scheduling" "$tmp/out/t-preset.yaml" && fail "async for an unknown vLLM version"
# inference-perf's shared_prefix: a fixed pool (system prompts x users) and its constant load.
grep -q "^  system_prompt: {tokens: 100, count: 2, users: 5}$" "$f" || fail "prompt pool"
grep -q "^  system_prompt: {tokens: 100, count: 2, users: 1}$" "$tmp/out/t-preset.yaml" ||
  fail "one user per system prompt by default"
grep -q "^  arrival: inference_perf$" "$f" || fail "inference-perf's constant load"
grep -q "^  offload: {num_cpu_blocks: 500}$" "$tmp/out/t-offload.yaml" || fail "CPU offload tier"
grep -q "offload" "$tmp/out/t-preset.yaml" && fail "a CPU tier the run did not have"
grep -q "^  concurrency: 4$" "$tmp/out/t-closed.yaml" || fail "closed loop"
grep -q "^  num_requests: 40$" "$tmp/out/t-closed.yaml" || fail "closed loop request count"
grep -q "stages" "$tmp/out/t-closed.yaml" && fail "closed loop with stages"
f=$tmp/out/t-inline.yaml
grep -q "^  name: Mixtral-8x7B-Experimental$" "$f" || fail "inline model name"
grep -q "count: 32, num_kv_heads: 8, head_size: 128" "$f" || fail "inline layers"
grep -q "num_experts: 8, num_experts_per_token: 2" "$f" || fail "Mixtral routing from the name"
grep -q "^  dp: 2$" "$f" || fail "dp"
grep -q "^  ep: 4$" "$f" || fail "expert parallel = TP x DP"
for n in t-preset t-inline t-nokv t-offload t-closed t-gib; do
  out=$("$kvsim" run "$tmp/out/$n.yaml" 2>&1) || { echo "$out"; fail "$n: kvsim run exited $?"; }
  grep -q "simulated vs measured" <<<"$out" || { echo "$out"; fail "$n: no comparison"; }
done
# The two-stage case prints one table per load stage with the measured values of its stages.
out=$("$kvsim" run "$tmp/out/t-inline.yaml" 2>&1)
grep -q "^  stage 1 (2/s for 2 s)$" <<<"$out" || { echo "$out"; fail "no stage 1 table"; }
grep -q "^  stage 2 (4/s for 2 s)$" <<<"$out" || { echo "$out"; fail "no stage 2 table"; }
grep -A2 "^  stage 2 " <<<"$out" | grep -Eq "^  ttft_mean_ms +[0-9.]+ +42\.00 " ||
  { echo "$out"; fail "stage 2 measured TTFT"; }
"$kvsim" run "$tmp/out/t-inline.yaml" --json 2>/dev/null | python3 -c '
import json, sys
p = json.load(sys.stdin)["points"][0]
st = p["reference_stages"]
assert [s["stage"] for s in st] == ["stage 1 (2/s for 2 s)", "stage 2 (4/s for 2 s)"], st
assert [r["measured"] for r in st[0]["rows"]] == [38, 14, 310], st[0]
' || fail "reference_stages in --json"
# A GPU without a preset: a clear error, non-zero exit.
sed 's/NVIDIA GeForce RTX 4090/Imaginary GPU 9000/' "$tmp/cases.json" > "$tmp/bad.json"
if python3 "$root/scripts/validation_scenarios.py" "$tmp/bad.json" --out "$tmp/bad" > "$tmp/log" 2>&1; then
  fail "an unknown GPU was accepted"
fi
grep -q "no hardware preset for Imaginary GPU 9000" "$tmp/log" || { cat "$tmp/log"; fail "message"; }
echo ok
