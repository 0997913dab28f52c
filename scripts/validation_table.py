#!/usr/bin/env python3
"""The README's validation table: kvsim's error on the training split of real vLLM runs
(scenarios/validation/*.yaml, each with a `reference:` block of measured metrics).

Runs `kvsim calibrate --runs scenarios/validation/*.yaml --iterations 0`, which simulates each
run with the shipped coefficients (in-sample: they were fitted on these runs) and estimates
the leave-one-out error (each run predicted by refitting the shipped serving keys to the
other six, linearised at the shipped coefficients), then prints per metric the median and worst |error|, and per run the
signed errors, as Markdown. With --readme it rewrites the block between the markers
<!-- validation-table --> and <!-- /validation-table --> in README.md.

Usage: scripts/validation_table.py KVSIM [--readme]
"""
import glob
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
METRICS = [("ttft_mean_ms", "TTFT mean"), ("tpot_mean_ms", "TPOT mean"), ("e2e_mean_ms", "E2E mean")]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    kvsim = os.path.abspath(sys.argv[1])
    os.chdir(ROOT)
    runs = sorted(glob.glob("scenarios/validation/*.yaml"))
    # The keys the shipped H100 coefficients were fitted on (README: how the presets came).
    fit = ("mbu,moe_mbu,attention_kv_head_penalty,step_overhead_us,intake_us,intake_token_ns,"
           "output_token_us,layer_overhead_us")
    out = subprocess.run([kvsim, "calibrate", "--iterations", "0", "--fit", fit, "--runs"] + runs,
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(out.stdout + out.stderr)
    rows = {}  # (run, metric) -> (in-sample, loo)
    for line in out.stdout.splitlines():
        m = re.match(r"\s+(\S+) (\w+_ms|\w+_per_s)\s+([+-][\d.]+)%\s+([+-][\d.]+)%", line)
        if m:
            rows[(m.group(1), m.group(2))] = (float(m.group(3)), float(m.group(4)))
    names = sorted({r for r, _ in rows})
    lines = ["| metric | median \\|error\\| in-sample | worst in-sample | median leave-one-out | worst leave-one-out |",
             "|---|---|---|---|---|"]
    for key, label in METRICS:
        ins = [abs(rows[(n, key)][0]) for n in names if (n, key) in rows]
        loo = [abs(rows[(n, key)][1]) for n in names if (n, key) in rows]
        if not ins:
            continue
        lines.append(f"| {label} | {statistics.median(ins):.1f} % | {max(ins):.1f} % | "
                     f"{statistics.median(loo):.1f} % | {max(loo):.1f} % |")
    lines += ["", "| run | TTFT | TPOT | E2E | TTFT (LOO) | TPOT (LOO) | E2E (LOO) |",
              "|---|---|---|---|---|---|---|"]
    for n in names:
        cells = [f"{rows[(n, k)][0]:+.1f} %" for k, _ in METRICS]
        cells += [f"{rows[(n, k)][1]:+.1f} %" for k, _ in METRICS]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    table = "\n".join(lines)
    print(table)
    if "--readme" in sys.argv:
        path = os.path.join(ROOT, "README.md")
        text = open(path).read()
        start, end = "<!-- validation-table -->", "<!-- /validation-table -->"
        if start not in text or end not in text:
            sys.exit("README.md has no validation-table markers")
        head, rest = text.split(start, 1)
        _, tail = rest.split(end, 1)
        open(path, "w").write(head + start + "\n" + table + "\n" + end + tail)
        print("rewrote the table in README.md")


if __name__ == "__main__":
    main()
