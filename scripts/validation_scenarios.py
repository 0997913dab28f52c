#!/usr/bin/env python3
"""Writes scenarios/validation/*.yaml from the training split of real vLLM runs
(../shared/data/fidelity/train_cases.json, or the path given): one scenario per run, with its
model, GPU, parallelism, scheduler limits, KV capacity, workload and a `reference:` block of
the measured metrics. Run once when the data changes; the scenarios are checked in.

Workload choices (the runs' generators, as inference-perf's own source builds them):
  blis-*  inference-perf shared_prefix with `constant` load stages. The generator makes a fixed
          pool of num_system_prompts x users_per_system_prompt prompts (system prompt of
          system_prompt_tokens, then that user's own question of question_tokens) once,
          shuffles it once and re-sends it in turn: request k of a stage sends pool[k mod N],
          so after the first pass every prompt is a whole prefix-cache hit (workload
          system_prompt.users). `constant` load sends floor(rate x duration) requests per
          stage with exponential gaps rescaled to fill the stage (arrival: inference_perf),
          not evenly spaced. Output = the mean output implied by the measured means (the base
          model Llama-2-7B often stops early at EOS). `multi_turn_chat` is not modelled: the
          inference-perf these runs installed predates multi-turn chat and ignored the flag,
          and the measured means fit fixed-length prompts (a history growing by ~700 tokens a
          turn would pass max_model_len 4096 within six turns of each user).
  lss-*   the per-request trace (Azure CSV: arrival, prompt and output lengths), open loop.
A shared-prefix case with `concurrency` (or `max_concurrency`) runs closed loop: that many
clients, all starting at once, until `num_requests`.
A case whose model has no preset here gets an inline model from its model_arch; a case with
`dp` > 1 gets parallel.dp, and one with `ep` (a size, or true / `expert_parallel` for vLLM's
--enable-expert-parallel, EP = TP x DP) gets parallel.ep.
Usage: scripts/validation_scenarios.py [train_cases.json] [--out DIR]
"""
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("--") else os.path.join(
    ROOT, "..", "..", "shared", "data", "fidelity", "train_cases.json")

# Checkpoints with a preset in scenarios/models/ (instruct/chat and base variants share one).
# Any other model is written inline from the case's model_arch (model_inline below).
MODEL_PRESETS = {
    "RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic": "llama-4-scout-17b-16e-fp8",
    "meta-llama/Llama-2-7b-hf": "llama-2-7b",
    "meta-llama/Llama-2-7b-chat-hf": "llama-2-7b",
    "meta-llama/Llama-2-70b-hf": "llama-2-70b",
    "meta-llama/Llama-2-70b-chat-hf": "llama-2-70b",
    "meta-llama/Llama-3.1-8B": "llama-3.1-8b",
    "meta-llama/Llama-3.1-8B-Instruct": "llama-3.1-8b",
    "meta-llama/Meta-Llama-3.1-8B-Instruct": "llama-3.1-8b",
    "meta-llama/Llama-3.1-70B": "llama-3.1-70b",
    "meta-llama/Llama-3.1-70B-Instruct": "llama-3.1-70b",
    "meta-llama/Meta-Llama-3.1-70B-Instruct": "llama-3.1-70b",
    "mistralai/Mistral-Nemo-Instruct-2407": "mistral-nemo-12b",
    "mistralai/Mixtral-8x7B-v0.1": "mixtral-8x7b",
    "mistralai/Mixtral-8x7B-Instruct-v0.1": "mixtral-8x7b",
    "Qwen/Qwen2.5-7B": "qwen2.5-7b",
    "Qwen/Qwen2.5-7B-Instruct": "qwen2.5-7b",
    "codellama/CodeLlama-34b-hf": "codellama-34b",
    "codellama/CodeLlama-34b-Instruct-hf": "codellama-34b",
    "01-ai/Yi-34B": "yi-34b",
    "01-ai/Yi-34B-Chat": "yi-34b",
}

# GPU names as the cases spell them → hardware presets (scenarios/hardware/).
HARDWARE = [("H100", "H100-SXM"), ("H200", "H200"), ("B200", "B200"), ("A100", "A100-80G"),
            ("L40S", "L40S"), ("4090", "RTX-4090"), ("PRO 6000", "RTX-PRO-6000")]


def hardware_for(gpu):
    for key, preset in HARDWARE:
        if key in gpu:
            return preset
    raise SystemExit(f"no hardware preset for {gpu}")


def model_inline(c):
    """The model from the case's model_arch when no preset matches: one full-attention layer
    kind and the compute numbers (the dense MLP width is derived from the parameter count
    unless the case gives it; MoE routing only if the case names experts and top-k)."""
    a = dict(c["model_arch"])
    name = c["model"].split("/")[-1]
    # MoE routing the case does not spell out, from the checkpoint's name: Mixtral NxSB routes
    # each token to 2 of N experts, Llama-4 ...-NE to 1 of N.
    m = re.search(r"mixtral-(\d+)x\d+b", name, re.IGNORECASE)
    if m and not a.get("experts"):
        a["experts"], a["experts_per_token"] = int(m.group(1)), 2
    m = re.search(r"llama-4-\w+-\d+b-(\d+)e", name, re.IGNORECASE)
    if m and not a.get("experts"):
        a["experts"], a["experts_per_token"] = int(m.group(1)), 1
    compute = {"hidden_size": a["hidden"], "num_attention_heads": a["heads"],
               "num_params": int(a["params"]),
               "num_active_params": int(a.get("active", a["params"])),
               "vocab_size": a["vocab"]}
    for src, dst in (("intermediate", "intermediate_size"), ("experts", "num_experts"),
                     ("experts_per_token", "num_experts_per_token"),
                     ("top_k", "num_experts_per_token")):
        if a.get(src):
            compute[dst] = int(a[src])
    # vLLM applies the checkpoint's generation_config.json sampling defaults to requests that
    # leave them unset; Mistral AI's checkpoints set no top_k or top_p, so vLLM samples them
    # without the top-k/top-p sort (every other checkpoint keeps kvsim's default, sorting).
    if c["model"].lower().startswith("mistralai/"):
        compute["sampling_sorts"] = "false"
    fields = ", ".join(f"{k}: {v}" for k, v in compute.items())
    return "\n".join([
        "model:",
        f"  name: {name}",
        f"  dtype: {a.get('dtype', 'bf16')}",
        "  layers:",
        f"    - {{type: full_attention, count: {a['layers']}, num_kv_heads: {a['kv_heads']}, "
        f"head_size: {a['head']}}}",
        f"  compute: {{{fields}}}"])


def async_scheduling(c):
    """vLLM's async scheduling: the case's `scheduler.async_scheduling` if given, else on for
    vLLM 0.14 and later (on by default since PR #27614, the last step of vLLM's 2025
    async-scheduling plan; the release notes of 0.14 name it), off for older or unknown
    versions."""
    given = c["scheduler"].get("async_scheduling")
    if given is not None:
        return bool(given)
    m = re.search(r"v?0\.(\d+)(?:\.\d+)?", c.get("engine", ""))
    return bool(m) and int(m.group(1)) >= 14


def metrics_yaml(m, indent):
    keys = ["ttft_mean_ms", "ttft_p90_ms", "ttft_p99_ms", "tpot_mean_ms", "e2e_mean_ms",
            "e2e_p90_ms", "e2e_p99_ms", "output_tok_per_s"]
    return "".join(f"{indent}{k}: {m[k]:.6g}\n" for k in keys if k in m)


def scenario(c):
    w, s, kv = c["workload"], c["scheduler"], c["kv"]
    # model_arch may name a kvsim preset itself ({"preset": NAME}).
    preset = c["model_arch"].get("preset") or MODEL_PRESETS.get(c["model"])
    name = c["id"]
    out = [f"# {c['model']} on {c['gpu']}, TP {c['tp']}: {c['engine']}.",
           f"# Measured: {c['source_refs']['measured']}.",
           "# Written by scripts/validation_scenarios.py from the training split; do not edit.",
           f"name: {name}",
           f"description: {c['model']} TP {c['tp']} on {hardware_for(c['gpu'])}, "
           f"measured vLLM run ({c['experiment']})",
           "seed: 1",
           f"model:\n  preset: {preset}" if preset else model_inline(c),
           f"parallel:\n  tp: {c['tp']}"]
    if c.get("dp", 1) > 1:
        out.append(f"  dp: {c['dp']}")
    # Expert parallelism: an explicit size, or vLLM's --enable-expert-parallel (EP = TP x DP).
    ep = c.get("ep", 1)
    if ep is True or c.get("expert_parallel") or c.get("enable_expert_parallel"):
        ep = c["tp"] * c.get("dp", 1)
    if ep is not False and ep > 1:
        out.append(f"  ep: {ep}")
    out.append(f"hardware:\n  preset: {hardware_for(c['gpu'])}")
    cache = ["cache:", f"  block_size: {kv.get('block_size', 16)}"]
    if kv.get("num_gpu_blocks"):
        cache.append(f"  num_gpu_blocks: {kv['num_gpu_blocks']}")
    else:
        # Not published: kvsim derives it as vLLM's worker does, from the share of the GPU's
        # memory vLLM may use (less weights per rank, profile-run activations, non-torch).
        cache.append(f"  gpu_memory_utilization: {kv.get('gpu_memory_utilization', 0.9)}")
    if c["model_arch"].get("kv_dtype"):
        cache.append(f"  kv_dtype: {c['model_arch']['kv_dtype']}")
    cache.append(f"  enable_prefix_caching: {'true' if s['prefix_caching'] else 'false'}")
    if kv.get("cpu_offload_blocks"):
        # The run had vLLM's CPU offloading tier (--kv-offloading-size), counted in GPU blocks.
        cache.append(f"  offload: {{num_cpu_blocks: {kv['cpu_offload_blocks']}}}")
    elif kv.get("cpu_offload_gib"):
        # The same tier given in GiB (--kv-offloading-size, for the whole server).
        cache.append(f"  offload: {{cpu_bytes: {kv['cpu_offload_gib']}GiB}}")
    if s.get("max_model_len"):
        cache.append(f"  max_model_len: {s['max_model_len']}")
    out += cache
    out.append("scheduler:")
    out.append(f"  max_num_batched_tokens: {s['max_num_batched_tokens']}")
    out.append(f"  max_num_seqs: {s['max_num_seqs']}")
    # vLLM schedules asynchronously by default since v0.14 (PR #27614); a case may say.
    if async_scheduling(c):
        out.append("  async_scheduling: true")
    if "trace_csv" in w:
        trace = os.path.basename(w["trace_csv"])
        out.append("workload:\n  kind: trace\n  num_requests: 0")
        out.append(f"  trace: {{path: ../traces/{trace}, format: azure, required: true}}")
        out.append("  vocab_size: 128256")
    else:
        out_tokens = int(round(w.get("implied_mean_output_tokens", w.get("output_tokens", 0))))
        clients = w.get("concurrency") or w.get("max_concurrency")
        if clients:
            # Closed loop: that many clients, each sending its next request when the last is
            # answered, all starting at once, until num_requests.
            out.append("workload:\n  kind: shared_prefix")
            out.append(f"  num_requests: {int(w.get('num_requests', 0))}\n  arrival: burst")
            out.append(f"  concurrency: {int(clients)}")
        else:
            out.append("workload:\n  kind: shared_prefix\n  num_requests: 0\n"
                       "  arrival: inference_perf")
            out.append("  stages:")
            for st in w["stages"]:
                out.append(f"    - {{rate_per_s: {st['rate_per_s']}, "
                           f"duration_s: {st['duration_s']}}}")
        # The prompt pool: each system prompt's users each have one fixed question.
        users = int(w.get("users_per_system_prompt") or w.get("num_prompts_per_group") or 1)
        groups = int(w.get("num_system_prompts") or w.get("num_groups") or 1)
        out.append(f"  system_prompt: {{tokens: {w['system_prompt_tokens']}, "
                   f"count: {groups}, users: {users}}}")
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
    if "--out" in sys.argv:
        folder = os.path.abspath(sys.argv[sys.argv.index("--out") + 1])
    os.makedirs(folder, exist_ok=True)
    for c in cases:
        name, text = scenario(c)
        with open(os.path.join(folder, name + ".yaml"), "w") as f:
            f.write(text)
        print("wrote " + os.path.relpath(os.path.join(folder, name + ".yaml"), ROOT))


if __name__ == "__main__":
    main()
