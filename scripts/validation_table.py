#!/usr/bin/env python3
"""The README's validation table: kvsim's error on the training split of real vLLM runs
(scenarios/validation/*.yaml, each with a `reference:` block of measured metrics).

In-sample: every run simulated with the shipped coefficients, which are the fit of the serving
keys on all seven runs by the procedure below.
Leave-one-out: for each run, the serving keys are refitted on the other six from kvsim's
built-in values, with the same pull towards them as the shipped fit (`kvsim calibrate --runs
OTHERS --fit KEYS --from-defaults --prior 15 --iterations 12 -o FILE`), and the run is
simulated with that file (`kvsim run RUN --set hardware.file=FILE`): a prediction of a run
that no fit behind it saw. Prints per metric the median and worst |error| and per run the
signed errors, as Markdown. With --readme it rewrites the block between the markers
<!-- validation-table --> and <!-- /validation-table --> in README.md. Takes about twenty
minutes (two fits at a time).

With --refit the in-sample column is a fresh fit on all seven runs by the same command
instead of the shipped presets (what the presets should hold; not with --readme), and
--prior W (with --refit) measures the whole procedure at another prior weight: how the
shipped weight was chosen.

Usage: scripts/validation_table.py KVSIM [--readme | --refit [--prior W]]
"""
import concurrent.futures
import glob
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
METRICS = [("ttft_mean_ms", "TTFT mean"), ("tpot_mean_ms", "TPOT mean"), ("e2e_mean_ms", "E2E mean")]
# The keys the shipped coefficients were fitted on and how (README: how the presets came).
FIT = ("mbu,moe_mbu,attention_kv_head_penalty,step_overhead_us,intake_us,intake_token_ns,"
       "output_token_us,layer_overhead_us")
PRIOR = "15"
ITERATIONS = "12"


def run_errors(kvsim, run, sets=()):
    """{metric: signed % error} of `kvsim run RUN` against its reference block; the per-stage
    tables that follow the run's (`  stage K (...)`) give keys `stageK.metric`."""
    args = [kvsim, "run", run]
    for s in sets:
        args += ["--set", s]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(args)} failed:\n{out.stdout}{out.stderr}")
    errors = {}
    prefix = ""
    for line in out.stdout.splitlines():
        s = re.match(r"  stage (\d+) \(", line)
        if s:
            prefix = f"stage{s.group(1)}."
            continue
        m = re.match(r"\s+(\w+_ms)\s+\S+\s+\S+\s+([+-][\d.]+)%", line)
        if m:
            errors[prefix + m.group(1)] = float(m.group(2))
    return errors


REFIT = "--refit" in sys.argv
if "--prior" in sys.argv:
    i = sys.argv.index("--prior")
    if not REFIT or i + 1 >= len(sys.argv):
        sys.exit("--prior W needs a weight and --refit (the shipped presets were fitted at " +
                 PRIOR + ")")
    PRIOR = sys.argv[i + 1]


def fit_file(kvsim, runs, hw, label):
    """Fits the serving keys on `runs` into the hardware file `hw`; returns `hw`."""
    args = [kvsim, "calibrate", "--iterations", ITERATIONS, "--fit", FIT, "--from-defaults",
            "--prior", PRIOR, "-o", hw]
    out = subprocess.run(args + ["--runs"] + runs, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"calibrate {label} failed:\n{out.stdout}{out.stderr}")
    return hw


def leave_one_out(kvsim, runs, run, tmp):
    hw = fit_file(kvsim, [r for r in runs if r != run], os.path.join(tmp, os.path.basename(run)),
                  f"without {run}")
    return run_errors(kvsim, run, [f"hardware.file={hw}"])


def in_sample(kvsim, run, all_fit):
    """The run with the shipped coefficients, or (--refit) with a fresh fit on all runs."""
    return run_errors(kvsim, run, [f"hardware.file={all_fit.result()}"] if all_fit else [])


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    kvsim = os.path.abspath(sys.argv[1])
    os.chdir(ROOT)
    runs = sorted(glob.glob("scenarios/validation/*.yaml"))
    rows = {}  # (run, metric) -> (in-sample, loo)
    in_results = {}  # run -> its in-sample errors, stages included
    if REFIT and "--readme" in sys.argv:
        sys.exit("--refit does not describe the shipped presets, the README's table")
    with tempfile.TemporaryDirectory() as tmp, concurrent.futures.ThreadPoolExecutor(2) as pool:
        all_fit = None
        if REFIT:
            all_hw = os.path.join(tmp, "all.yaml")
            all_fit = pool.submit(fit_file, kvsim, runs, all_hw, "on all runs")
        # The refits first: an in-sample run waits for the fit on all runs.
        loo = {r: pool.submit(leave_one_out, kvsim, runs, r, tmp) for r in runs}
        in_futures = {r: pool.submit(in_sample, kvsim, r, all_fit) for r in runs}
        for r in runs:
            name = os.path.splitext(os.path.basename(r))[0]
            a, b = in_futures[r].result(), loo[r].result()
            in_results[r] = a
            for key, _ in METRICS:
                if key in a and key in b:
                    rows[(name, key)] = (a[key], b[key])
        fitted = open(all_fit.result()).read() if REFIT else ""
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
    stage_rows = []
    for r in runs:
        name = os.path.splitext(os.path.basename(r))[0]
        a = in_results[r]
        k = 1
        while f"stage{k}.tpot_mean_ms" in a:
            cells = [f"{a.get(f'stage{k}.{key}', float('nan')):+.1f} %" for key, _ in METRICS]
            stage_rows.append(f"| {name} | {k} | " + " | ".join(cells) + " |")
            k += 1
    if stage_rows:
        lines += ["", "In-sample error per load stage (the load slope of the error):", "",
                  "| run | stage | TTFT | TPOT | E2E |", "|---|---|---|---|---|"] + stage_rows
    table = "\n".join(lines)
    print(table)
    if fitted:
        print(f"\nThe fit on all runs (--prior {PRIOR}):\n\n```yaml\n{fitted.rstrip()}\n```")
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
