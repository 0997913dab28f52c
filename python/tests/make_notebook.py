"""Writes docs/notebooks/attention_pack_study.ipynb (run from the repository root): the
notebook's cells live here as code, so a change to them is a reviewable diff."""
import nbformat as nbf
nb = nbf.v4.new_notebook()
md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell
nb.cells = [
md("""# Attention pack size: the default study with replicates

kvsim's built-in study (`scenarios/default.yaml`): a hybrid Qwen3.5-class model at TP 2 on
H100s serving a shared-prefix chat workload. Packing N attention layers into one page
(vLLM PR #35703) shrinks the hybrid attention block (1056 → 528 → 272 → 144 tokens), so the
2000-token shared system prompt is cached at a finer granularity. Each pack size runs over
several seeds; every point is the mean with its 95 % Student-t interval.

By hand: the system prompt is cached in whole blocks of B tokens, so a request hits
floor(2000 / B) · B of its ~2060 prompt tokens: 0.513, 0.769, 0.924, 0.909 for B = 1056, 528,
272, 144. The hit rate rises to pack 4 and falls back at pack 8 (13 · 144 = 1872 tokens
< 7 · 272 = 1904), while the padding grows.

Run from the repository root with `PYTHONPATH=build/python`. `KVSIM_STUDY_REQUESTS` and
`KVSIM_STUDY_SEEDS` shrink the study (CI runs it small); unset, it is the full default."""),
code("""import json, os
import matplotlib
import matplotlib.pyplot as plt
import kvsim

overrides = {}
if os.environ.get("KVSIM_STUDY_REQUESTS"):
    overrides["workload.num_requests"] = int(os.environ["KVSIM_STUDY_REQUESTS"])
seeds = int(os.environ.get("KVSIM_STUDY_SEEDS", "10"))
study = kvsim.run(set=overrides, seeds=seeds, jobs=os.cpu_count() or 1, progress=False)
study.points[["cache.attn_pack_size", "attn_block_size", "prefix_hit_rate", "prefix_hit_rate.ci95",
              "ttft_mean_ms", "ttft_mean_ms.ci95", "padding_fraction"]]"""),
md("## Hit rate and TTFT against pack size (95 % intervals)"),
code("""p = study.points
fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.6))
a.errorbar(p["cache.attn_pack_size"], p["prefix_hit_rate"], yerr=p["prefix_hit_rate.ci95"], marker="o", capsize=4)
a.set(xscale="log", xlabel="attention pack size", ylabel="prefix hit rate", title="hit rate")
a.set_xticks(list(p["cache.attn_pack_size"]), [str(v) for v in p["cache.attn_pack_size"]])
b.errorbar(p["cache.attn_pack_size"], p["ttft_mean_ms"], yerr=p["ttft_mean_ms.ci95"], marker="o", capsize=4, color="C1")
b.set(xscale="log", xlabel="attention pack size", ylabel="mean TTFT (ms)", title="TTFT")
b.set_xticks(list(p["cache.attn_pack_size"]), [str(v) for v in p["cache.attn_pack_size"]])
fig.tight_layout()
plt.show()
figure_data = {"overrides": overrides, "seeds": seeds,
               "pack_size": p["cache.attn_pack_size"].tolist(),
               "hit_rate": p["prefix_hit_rate"].tolist(), "hit_rate_ci95": p["prefix_hit_rate.ci95"].tolist(),
               "ttft_ms": p["ttft_mean_ms"].tolist(), "ttft_ms_ci95": p["ttft_mean_ms.ci95"].tolist()}"""),
md("""## Page map

One KV block's page per pack size, from `kvsim.layout`'s group table: the packed attention
layers' K/V, the Mamba states, and the padding that page-size unification adds."""),
code("""fig, ax = plt.subplots(figsize=(10, 3.2))
page_map = {}
for row, pack in enumerate([1, 2, 4, 8]):
    plan = kvsim.layout(set={"cache.attn_pack_size": pack})
    g = plan["groups"]
    attn = g[g["kind"] != "mamba"].iloc[0]
    member = attn["real_page_bytes"] / attn["pack_size"]
    segments = [(f"layer {i}", member) for i in range(int(attn["pack_size"]))]
    segments.append(("padding", attn["page_bytes"] - attn["real_page_bytes"]))
    left = 0
    for i, (name, size) in enumerate(segments):
        color = "lightgrey" if name == "padding" else f"C{i % 8}"
        ax.barh(row, size / 1024, left=left / 1024, color=color, edgecolor="black", height=0.6)
        left += size
    page_map[pack] = {"block_size": int(plan["attn_block_size"]), "page_bytes": int(attn["page_bytes"]),
                      "real_page_bytes": int(attn["real_page_bytes"])}
ax.set_yticks(range(4), [f"pack {k}: block {v['block_size']}" for k, v in page_map.items()])
ax.set(xlabel="KiB of one page", title="attention page: packed layers (colours) and padding (grey)")
fig.tight_layout()
plt.show()
figure_data["page_map"] = page_map"""),
md("""## Step log

The engine's step records for pack size 1 and 8 (seed 1): how many requests run and wait,
over simulated time."""),
code("""fig, axes = plt.subplots(1, 2, figsize=(10, 3.4), sharey=True)
step_stats = {}
for ax, pack in zip(axes, [1, 8]):
    one = kvsim.run(set={**overrides, "cache.attn_pack_size": pack}, seeds=1, steps=True, requests=False, progress=False)
    s = one.steps
    ax.plot(s["t_end_ms"] / 1000, s["running"], label="running")
    ax.plot(s["t_end_ms"] / 1000, s["waiting"], label="waiting")
    ax.set(title=f"pack {pack}", xlabel="simulated time (s)")
    step_stats[pack] = {"steps": len(s), "finished": int(s["num_finished"].sum()),
                        "max_waiting": int(s["waiting"].max())}
axes[0].set_ylabel("requests")
axes[0].legend()
fig.tight_layout()
plt.show()
figure_data["steps"] = step_stats"""),
md("The plotted arrays, for the notebook's test (`python/tests/run_notebook.py`):"),
code("""print("FIGURE_DATA " + json.dumps(figure_data))"""),
]
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
nbf.write(nb, "docs/notebooks/attention_pack_study.ipynb")
