#!/usr/bin/python3
"""Plot a kvsim sweep CSV (from `kvsim sweep` or `kvsim run -o DIR` → DIR/summary.csv).

    /usr/bin/python3 viz/plot_sweep.py out/sweep.csv -o sweep.png
    /usr/bin/python3 viz/plot_sweep.py out/sweep.csv --x cache.block_size \
        --group cache.kv_memory_bytes --metrics prefix_hit_rate,ttft_p90_ms -o hit.png

One panel per metric; the x axis is a sweep key (default: the first), and one line per value
of --group (default: the second sweep key, if any). Other sweep keys are averaged over.
Rows whose status is not "ok" are skipped (and counted on stderr). Needs only Debian's
python3-matplotlib; no other packages.
"""
import argparse
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

DEFAULT_METRICS = ["prefix_hit_rate", "ttft_mean_ms", "tpot_mean_ms", "output_tok_s"]
LABELS = {
    "prefix_hit_rate": "prefix hit rate (tokens)",
    "ttft_mean_ms": "TTFT mean (ms)",
    "ttft_p90_ms": "TTFT p90 (ms)",
    "ttft_p99_ms": "TTFT p99 (ms)",
    "tpot_mean_ms": "TPOT mean (ms)",
    "output_tok_s": "output tokens/s",
    "total_tok_s": "total tokens/s",
    "kv_usage_mean": "mean KV usage",
    "padding_gib_in_use": "padding in use (GiB)",
    "preemptions": "preemptions",
}
FIXED = ["point", "status", "sweep_id", "sweep_points"]


def as_number(s):
    """Sorts numeric sweep values numerically, keeps byte sizes like 16GiB readable."""
    units = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40,
             "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}
    for u, m in units.items():
        if s.endswith(u):
            try:
                return float(s[: -len(u)]) * m
            except ValueError:
                return None
    try:
        return float(s)
    except ValueError:
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("-o", "--out", default="sweep.png")
    ap.add_argument("--x", help="sweep key on the x axis (default: the first)")
    ap.add_argument("--group", help="sweep key for one line per value (default: the second)")
    ap.add_argument("--metrics", help="comma-separated metric columns", default=",".join(DEFAULT_METRICS))
    ap.add_argument("--title", default=None)
    a = ap.parse_args()

    with open(a.csv, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"{a.csv}: no rows")
    header = list(rows[0].keys())
    if "status" not in header:
        sys.exit(f"{a.csv}: not a kvsim sweep CSV (no status column)")
    keys = header[1 : header.index("status")]
    if not keys:
        sys.exit(f"{a.csv}: the sweep has no keys to plot against")
    x = a.x or keys[0]
    group = a.group if a.group is not None else (keys[1] if len(keys) > 1 and keys[1] != x else None)
    for k in [x] + ([group] if group else []):
        if k not in keys:
            sys.exit(f"{a.csv}: {k} is not a sweep key; keys: {', '.join(keys)}")
    metrics = [m for m in a.metrics.split(",") if m]
    for m in metrics:
        if m not in header:
            sys.exit(f"{a.csv}: no column {m}")

    ok = [r for r in rows if r["status"] == "ok"]
    if len(ok) < len(rows):
        print(f"plot_sweep: skipping {len(rows) - len(ok)} failed point(s)", file=sys.stderr)

    # (group value, x value) -> metric -> list of values (averaged over other keys)
    cells = defaultdict(lambda: defaultdict(list))
    for r in ok:
        for m in metrics:
            cells[(r[group] if group else "", r[x])][m].append(float(r[m]))

    def sort_key(v):
        n = as_number(v)
        return (0, n, v) if n is not None else (1, 0, v)

    xs = sorted({k[1] for k in cells}, key=sort_key)
    groups = sorted({k[0] for k in cells}, key=sort_key)
    numeric_x = all(as_number(v) is not None for v in xs)

    n = len(metrics)
    cols = 2 if n > 1 else 1
    rows_n = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows_n, cols, figsize=(5.2 * cols, 3.6 * rows_n), squeeze=False)
    for i, m in enumerate(metrics):
        ax = axes[i // cols][i % cols]
        for g in groups:
            pts = [(v, sum(cells[(g, v)][m]) / len(cells[(g, v)][m])) for v in xs if cells[(g, v)][m]]
            if not pts:
                continue
            px = [as_number(p[0]) if numeric_x else xs.index(p[0]) for p in pts]
            ax.plot(px, [p[1] for p in pts], marker="o", label=f"{group}={g}" if group else None)
        if numeric_x:
            vals = [as_number(v) for v in xs]
            if min(vals) > 0 and max(vals) / min(vals) >= 16:
                ax.set_xscale("log", base=2)
            ax.set_xticks(vals)
            ax.set_xticklabels(xs)
        else:
            ax.set_xticks(range(len(xs)))
            ax.set_xticklabels(xs)
        ax.set_xlabel(x)
        ax.set_ylabel(LABELS.get(m, m))
        ax.grid(True, alpha=0.3)
        if group and i == 0:
            ax.legend(fontsize=8)
    for j in range(n, rows_n * cols):
        axes[j // cols][j % cols].axis("off")
    fig.suptitle(a.title or a.csv, fontsize=10)
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)
    print(a.out)


if __name__ == "__main__":
    main()
