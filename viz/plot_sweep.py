#!/usr/bin/python3
"""Plot a kvsim sweep CSV (from `kvsim sweep` or `kvsim run -o DIR` → DIR/summary.csv).

    /usr/bin/python3 viz/plot_sweep.py out/sweep.csv -o sweep.png
    /usr/bin/python3 viz/plot_sweep.py out/sweep.csv --x cache.block_size \
        --group cache.kv_memory_bytes --metrics prefix_hit_rate,ttft_p90_ms -o hit.png

One panel per metric; the x axis is a sweep key (default: the first), and one line per value
of --group (default: the next sweep key that is not zipped with the x key, if any). Other
sweep keys are averaged over. The default metrics are those of the CSV's kind (single-engine
or P/D cluster rows name some columns differently). The title defaults to the scenario's
name and description from the scenario.resolved.yaml beside the CSV.
Rows whose status is not "ok" are skipped (and counted on stderr). A CSV of replicates
(`sweep.seeds`, `--seeds`) draws each point's 95 % interval (its METRIC.ci95 column) as an
error bar. A point flagged `overloaded` (the queue grew through the run: TTFT measures the
backlog; docs/columns.md) is ringed in red, labelled in the legend, and named on stderr.
Needs only Debian's python3-matplotlib; no other packages.
"""
import argparse
import csv
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# Each default metric with the columns that stand for it, single-engine name first (a P/D
# cluster row has prefill_/decode_hit_rate; docs/columns.md). output_tok_s is the engine's
# name for output_tok_per_s in CSVs written before the two were one column.
DEFAULT_METRICS = [["prefix_hit_rate", "decode_hit_rate", "prefill_hit_rate"],
                   ["ttft_mean_ms"], ["tpot_mean_ms"], ["output_tok_s", "output_tok_per_s"]]
LABELS = {
    "prefix_hit_rate": "prefix hit rate (tokens)",
    "ttft_mean_ms": "TTFT mean (ms)",
    "ttft_p90_ms": "TTFT p90 (ms)",
    "ttft_p99_ms": "TTFT p99 (ms)",
    "tpot_mean_ms": "TPOT mean (ms)",
    "output_tok_s": "output tokens/s",
    "output_tok_per_s": "output tokens/s",
    "prefill_hit_rate": "prefill prefix hit rate (tokens)",
    "decode_hit_rate": "decode prefix hit rate (tokens)",
    "total_tok_s": "total tokens/s",
    "kv_usage_mean": "mean KV usage",
    "padding_gib_in_use": "padding in use (GiB)",
    "preemptions": "preemptions",
}
FIXED = ["point", "status", "kind", "seeds", "sweep_id", "sweep_points"]


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


def scenario_title(csv_path):
    """'name — description' from the scenario.resolved.yaml that kvsim writes beside a CSV."""
    resolved = os.path.join(os.path.dirname(os.path.abspath(csv_path)), "scenario.resolved.yaml")
    fields = {}
    try:
        with open(resolved) as f:
            for line in f:
                for k in ("name", "description"):
                    if line.startswith(k + ":") and k not in fields:
                        fields[k] = line[len(k) + 1:].strip().strip('"')
    except OSError:
        return None
    if "name" not in fields:
        return None
    return fields["name"] + (" — " + fields["description"] if fields.get("description") else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("-o", "--out", default="sweep.png")
    ap.add_argument("--x", help="sweep key on the x axis (default: the first)")
    ap.add_argument("--group", help="sweep key for one line per value (default: the second)")
    ap.add_argument("--metrics", help="comma-separated metric columns (default: hit rate, TTFT, "
                    "TPOT and output tokens/s, under the CSV's names)")
    ap.add_argument("--title", default=None)
    a = ap.parse_args()

    with open(a.csv, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"{a.csv}: no rows")
    header = list(rows[0].keys())
    if "status" not in header:
        sys.exit(f"{a.csv}: not a kvsim sweep CSV (no status column)")
    # Sweep keys sit between point and status; a key written with units ("16GiB") is followed
    # by its numeric KEY.value column, which as_number already reads from the key itself.
    between = header[1 : header.index("status")]
    keys = [k for k in between if not (k.endswith(".value") and k[: -len(".value")] in between)]
    if not keys:
        sys.exit(f"{a.csv}: the sweep has no keys to plot against")
    x = a.x or keys[0]
    if x not in keys:
        sys.exit(f"{a.csv}: {x} is not a sweep key; keys: {', '.join(keys)}")

    def follows_x(k):
        """True when k's value is a function of x's: a zip partner, useless as a group."""
        seen = {}
        return all(seen.setdefault(r[x], r[k]) == r[k] for r in rows)

    if a.group is not None:
        group = a.group or None
    else:
        group = next((k for k in keys if k != x and not follows_x(k)), None)
    if group and group not in keys:
        sys.exit(f"{a.csv}: {group} is not a sweep key; keys: {', '.join(keys)}")
    metric_cols = [c for c in header if c not in FIXED and c not in between
                   and not c.endswith(".ci95")]
    if a.metrics:
        metrics = [m for m in a.metrics.split(",") if m]
        for m in metrics:
            if m not in header:
                sys.exit(f"{a.csv}: no column {m}; columns: {', '.join(metric_cols)}")
    else:
        metrics = [next(c for c in alts if c in header) for alts in DEFAULT_METRICS
                   if any(c in header for c in alts)]
        if not metrics:
            sys.exit(f"{a.csv}: none of the default metrics; give --metrics, from: "
                     f"{', '.join(metric_cols)}")

    ok = [r for r in rows if r["status"] == "ok"]
    if not ok:
        sys.exit(f"{a.csv}: every point failed (the status column says why); nothing to plot")
    if len(ok) < len(rows):
        print(f"plot_sweep: skipping {len(rows) - len(ok)} failed point(s)", file=sys.stderr)

    # (group value, x value) -> metric -> list of values (averaged over other keys), and the
    # rows' interval half-widths and overload flags.
    cells = defaultdict(lambda: defaultdict(list))
    cis = defaultdict(lambda: defaultdict(list))
    overloaded = defaultdict(bool)
    for r in ok:
        key = (r[group] if group else "", r[x])
        for m in metrics:
            cells[key][m].append(float(r[m]))
            if r.get(m + ".ci95"):
                cis[key][m].append(float(r[m + ".ci95"]))
        if r.get("overloaded") and float(r["overloaded"]) > 0:
            overloaded[key] = True
            print(f"plot_sweep: point {r['point']} is overloaded (in a share "
                  f"{float(r['overloaded']):g} of its seeds): the queue grew through the run, so "
                  f"its TTFT measures the backlog", file=sys.stderr)
    others = [k for k in keys if k not in (x, group) and not follows_x(k)]
    if others:
        print(f"plot_sweep: averaging over {', '.join(others)} (not on the x axis or a line)",
              file=sys.stderr)

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
    ax_has_hot = [False] * n
    styles = [("o", "-"), ("s", "--"), ("^", ":"), ("D", "-."), ("v", "-"), ("x", "--")]
    for i, m in enumerate(metrics):
        ax = axes[i // cols][i % cols]
        for gi, g in enumerate(groups):
            pts = [(v, sum(cells[(g, v)][m]) / len(cells[(g, v)][m])) for v in xs if cells[(g, v)][m]]
            if not pts:
                continue
            px = [as_number(p[0]) if numeric_x else xs.index(p[0]) for p in pts]
            # Markers and dashes differ per line so that lines that coincide stay visible.
            marker, dash = styles[gi % len(styles)]
            # An interval is drawn where one row makes the cell (an average of several rows
            # has no interval of its own).
            yerr = [cis[(g, v)][m][0] if len(cis[(g, v)][m]) == 1 and
                    len(cells[(g, v)][m]) == 1 else 0.0 for v, _ in pts]
            ax.errorbar(px, [p[1] for p in pts], yerr=yerr if any(yerr) else None,
                        marker=marker, linestyle=dash, capsize=3,
                        markersize=7 - 1.2 * (gi % 4), label=f"{group}={g}" if group else None)
            hot = [(qx, p[1]) for qx, p in zip(px, pts) if overloaded[(g, p[0])]]
            if hot:
                ax.scatter([h[0] for h in hot], [h[1] for h in hot], s=180, facecolors="none",
                           edgecolors="red", linewidths=1.5, zorder=5,
                           label="overloaded (TTFT = backlog)" if not ax_has_hot[i] else None)
                ax_has_hot[i] = True
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
        if (group and i == 0) or ax_has_hot[i]:
            ax.legend(fontsize=8)
    for j in range(n, rows_n * cols):
        axes[j // cols][j % cols].axis("off")
    fig.suptitle(a.title or scenario_title(a.csv) or a.csv, fontsize=10)
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)
    print(a.out)


if __name__ == "__main__":
    main()
