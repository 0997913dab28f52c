#!/usr/bin/env python3
"""Writes scenarios/validation/*.yaml from the training split of real vLLM runs
(../shared/data/fidelity/train_cases.json, or the path given): one scenario per run, with its
model, GPU, parallelism, scheduler limits, KV capacity, workload and a `reference:` block of
the measured metrics. Run once when the data changes; the scenarios are checked in.

Workload choices (the runs' generators, as far as the published configuration says):
  blis-*  inference-perf shared_prefix with constant load stages: num_system_prompts system
          prompts of system_prompt_tokens shared by their users, question_tokens new tokens per
          request, output = the mean output implied by the measured means (the base model
          Llama-2-7B often stops early at EOS), arrivals evenly spaced per stage.
  lss-*   the per-request trace (Azure CSV: arrival, prompt and output lengths), open loop.
Usage: scripts/validation_scenarios.py [train_cases.json]
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    ROOT, "..", "..", "shared", "data", "fidelity", "train_cases.json")

MODEL_PRESETS = {
    "RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic": "llama-4-scout-17b-16e-fp8",
    "meta-llama/Llama-2-7b-hf": "llama-2-7b",
    "meta-llama/Llama-3.1-70B-Instruct": "llama-3.1-70b",
    "mistralai/Mistral-Nemo-Instruct-2407": "mistral-nemo-12b",
    "Qwen/Qwen2.5-7B-Instruct": "qwen2.5-7b",
    "meta-llama/Llama-3.1-8B": "llama-3.1-8b",
}


def hardware_for(gpu):
    if "H100" in gpu:
        return "H100-SXM"
    if "4090" in gpu:
        return "RTX-4090"
    if "PRO 6000" in gpu:
        return "RTX-PRO-6000"
    raise SystemExit(f"no hardware preset for {gpu}")


def metrics_yaml(m, indent):
    keys = ["ttft_mean_ms", "ttft_p90_ms", "ttft_p99_ms", "tpot_mean_ms", "e2e_mean_ms",
            "e2e_p90_ms", "e2e_p99_ms", "output_tok_per_s"]
    return "".join(f"{indent}{k}: {m[k]:.6g}\n" for k in keys if k in m)


def scenario(c):
    w, s, kv = c["workload"], c["scheduler"], c["kv"]
    preset = MODEL_PRESETS[c["model"]]
    name = c["id"]
    out = [f"# {c['model']} on {c['gpu']}, TP {c['tp']}: {c['engine']}.",
           f"# Measured: {c['source_refs']['measured']}.",
           "# Written by scripts/validation_scenarios.py from the training split; do not edit.",
           f"name: {name}",
           f"description: {c['model']} TP {c['tp']} on {hardware_for(c['gpu'])}, "
           f"measured vLLM run ({c['experiment']})",
           "seed: 1",
           f"model:\n  preset: {preset}",
           f"parallel:\n  tp: {c['tp']}"]
    if c.get("dp", 1) > 1:
        out.append(f"  dp: {c['dp']}")
    out.append(f"hardware:\n  preset: {hardware_for(c['gpu'])}")
    cache = ["cache:", f"  block_size: {kv.get('block_size', 16)}"]
    if kv.get("num_gpu_blocks"):
        cache.append(f"  num_gpu_blocks: {kv['num_gpu_blocks']}")
    else:
        # Not published: what vLLM leaves at gpu_memory_utilization 0.9 on 96 GB after the
        # 16 GB of weights and ~3 GB of activations and graphs.
        cache.append("  kv_memory_bytes: 62GiB")
    if c["model_arch"].get("kv_dtype"):
        cache.append(f"  kv_dtype: {c['model_arch']['kv_dtype']}")
    cache.append(f"  enable_prefix_caching: {'true' if s['prefix_caching'] else 'false'}")
    if s.get("max_model_len"):
        cache.append(f"  max_model_len: {s['max_model_len']}")
    out += cache
    out.append("scheduler:")
    out.append(f"  max_num_batched_tokens: {s['max_num_batched_tokens']}")
    out.append(f"  max_num_seqs: {s['max_num_seqs']}")
    if "trace_csv" in w:
        trace = os.path.basename(w["trace_csv"])
        out.append("workload:\n  kind: trace\n  num_requests: 0")
        out.append(f"  trace: {{path: ../traces/{trace}, format: azure, required: true}}")
        out.append("  vocab_size: 128256")
    else:
        out_tokens = int(round(w["implied_mean_output_tokens"]))
        out.append("workload:\n  kind: shared_prefix\n  num_requests: 0\n  arrival: constant")
        out.append("  stages:")
        for st in w["stages"]:
            out.append(f"    - {{rate_per_s: {st['rate_per_s']}, duration_s: {st['duration_s']}}}")
        out.append(f"  system_prompt: {{tokens: {w['system_prompt_tokens']}, "
                   f"count: {w['num_system_prompts']}}}")
        out.append(f"  prompt_tokens: {{dist: fixed, mean: {w['question_tokens']}, "
                   f"min: 1, max: {w['question_tokens']}}}")
        out.append(f"  output_tokens: {{dist: fixed, mean: {out_tokens}, min: 1, "
                   f"max: {out_tokens}}}")
    meas = c["measured"]
    out.append("reference:")
    out.append(f"  source: \"{c['source_refs']['measured']}\"")
    out.append("  summary:")
    out.append(metrics_yaml(meas["summary"], "    ").rstrip("\n"))
    stages = [meas[k] for k in sorted(meas) if k.startswith("stage")]
    if len(stages) > 1:
        out.append("  stages:")
        for st in stages:
            body = metrics_yaml(st, "      ").strip("\n").split("\n")
            out.append("    - " + body[0].strip())
            out += body[1:]
    return name, "\n".join(out) + "\n"


def main():
    cases = json.load(open(DATA))["cases"]
    folder = os.path.join(ROOT, "scenarios", "validation")
    os.makedirs(folder, exist_ok=True)
    for c in cases:
        name, text = scenario(c)
        with open(os.path.join(folder, name + ".yaml"), "w") as f:
            f.write(text)
        print("wrote scenarios/validation/" + name + ".yaml")


if __name__ == "__main__":
    main()
