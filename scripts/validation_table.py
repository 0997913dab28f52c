#!/usr/bin/env python3
"""The README's validation table: kvsim's error on the training split of real vLLM runs
(scenarios/validation/*.yaml, each with a `reference:` block of measured metrics).

The step-time model's GPU efficiencies are measured (kernel timings, datasheets; see
scenarios/hardware/README.md); only the serving keys (FIT below: CPU work of the engine and the
API server, and the GPU's fixed per-step, per-layer and all-reduce costs) are fitted on runs.
A GPU no kernel timing has measured yet (PER_GPU below) has the efficiencies its runs decide
fitted on its own runs instead (the A100's and L40S's weight-streaming `mbu`; the RTX GPUs'
GEMM `mfu` and attention `attention_mbu`), after the serving keys, which are fitted on the runs
of the other GPUs only (so that an unmeasured GPU's efficiency is not absorbed by them). A key
whose fit ends on its bound is written with calibrate's "not a fit" note. In a
leave-one-model-out fold that holds none of a PER_GPU GPU's runs, that GPU's runs are
simulated with the H100's measured values of its keys: what a GPU nothing was fitted on gets.

In-sample: every run simulated with the shipped presets, whose serving keys are the fit on all
runs by the procedure below (--write-presets makes that fit and writes it into every preset).
Leave-one-model-out (the headline): for each model, the serving keys are refitted from kvsim's
built-in values on the runs of every other model (`kvsim calibrate --runs OTHERS --fit KEYS
--from-defaults --prior W --iterations N -o FILE`), and that model's runs are simulated with
the file (`kvsim run RUN --set hardware.file=FILE`): predictions of a model no fit behind them
saw. Prints per metric the median and worst |error| both ways, per model, and per run, as
Markdown. --readme rewrites the block between <!-- validation-table --> and
<!-- /validation-table --> in README.md; --plot PNG draws predicted against measured TTFT, TPOT
and E2E (docs/validation_scatter.png in the README). Takes about an hour on two cores (one fit
per model).

The presets are compiled into kvsim (sim/embedded_data.h): after --write-presets, rebuild and
run again for the in-sample columns. --loo-from OUT.json takes the leave-one-model-out columns
from an earlier --json instead of refitting every fold (they do not depend on the presets'
serving keys: each fold's fit replaces them), so the second run takes seconds:
  scripts/validation_table.py build/bin/kvsim --write-presets --json /tmp/v.json
  cmake --build build
  scripts/validation_table.py build/bin/kvsim --loo-from /tmp/v.json --readme --plot PNG

Usage: /usr/bin/python3 scripts/validation_table.py KVSIM [--readme] [--plot PNG] [--json OUT]
                                         [--write-presets] [--only-in-sample]
                                         [--loo-from OUT.json]
       /usr/bin/python3 scripts/validation_table.py --replot OUT.json PNG   (redraw from --json)
"""
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
METRICS = [("ttft_mean_ms", "TTFT mean"), ("tpot_mean_ms", "TPOT mean"), ("e2e_mean_ms", "E2E mean")]
# The serving keys: what the presets' fitted block holds, and how it was fitted.
FIT = ("step_overhead_us,seq_overhead_us,intake_us,intake_token_ns,output_token_us,"
       "step_gpu_us,sampler_sort_us,layer_overhead_us,allreduce_latency_us")
PRIOR = "1"
ITERATIONS = "6"
# GPUs without kernel timings and the keys fitted on their own runs (see the docstring).
PER_GPU = {"A100-80G": "mbu", "L40S": "mbu", "RTX-4090": "mfu,attention_mbu",
           "RTX-PRO-6000": "mfu,attention_mbu"}
# The preset whose measured values a GPU gets when none of its runs is in a fold, and the
# built-in values (core/cost_model.h) of the keys that preset leaves at kvsim's defaults.
MEASURED_GPU = "scenarios/hardware/h100-sxm.yaml"
BUILT_IN = {"attention_mbu": "0.75"}
PRESET_BEGIN = "# --- serving keys (scripts/validation_table.py --write-presets) ---"
PRESET_END = "# --- end of serving keys ---"


def run_errors(kvsim, run, sets=()):
    """{metric: (signed % error, simulated, measured)} of `kvsim run RUN` against its
    reference summary (the run's first table; per-stage tables are skipped)."""
    args = [kvsim, "run", run]
    for s in sets:
        args += ["--set", s]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(args)} failed:\n{out.stdout}{out.stderr}")
    errors = {}
    for line in out.stdout.splitlines():
        if re.match(r"  stage (\d+) \(", line):
            break
        m = re.match(r"\s+(\w+_ms)\s+(\S+)\s+(\S+)\s+([+-][\d.]+)%", line)
        if m:
            errors[m.group(1)] = (float(m.group(4)), float(m.group(2)), float(m.group(3)))
    return errors


def model_of(run):
    """The model a run serves: its preset, or the inline model's name, with the instruct/chat
    variant folded into its base (the same weights' shapes: leaving one out must leave both)."""
    text = open(run).read()
    m = re.search(r"^model:\n  (?:preset|name): (\S+)", text, re.MULTILINE)
    if not m:
        return os.path.basename(run)
    return re.sub(r"-(instruct|chat|hf)(?=-|$)", "", m.group(1), flags=re.IGNORECASE)


def gpu_of(run):
    m = re.search(r"^hardware:\n  preset: (\S+)", open(run).read(), re.MULTILINE)
    return m.group(1) if m else "H100-SXM"


def calibrate(kvsim, args):
    res = subprocess.run([kvsim, "calibrate"] + args, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"calibrate failed:\n{res.stdout}{res.stderr}")


def fitted_keys(path):
    """{key: (value, note)} of a calibrate output file; note is calibrate's comment on the key
    ("at its upper bound 0.9: not a fit") or ""."""
    keys, note = {}, ""
    for l in open(path).read().splitlines():
        m = re.match(r"^# (\w+): (.*)$", l)
        if m:
            note = m.group(2)
            continue
        if re.match(r"^\w+: ", l):
            key = l.split(":")[0]
            keys[key] = (l.split(":", 1)[1].split("#")[0].strip(),
                         note if note.startswith("at its") else "")
        note = ""
    return keys


def fit(kvsim, runs, tmp, tag):
    """The fit of one fold: the serving keys on the runs of measured GPUs, then each PER_GPU
    GPU's keys on its own runs with those serving keys. Returns (serving-keys file,
    {gpu: {key: (value, note)}})."""
    shared = os.path.join(tmp, tag + ".yaml")
    calibrate(kvsim, ["--iterations", ITERATIONS, "--fit", FIT, "--from-defaults", "--prior",
                      PRIOR, "-o", shared, "--runs"] +
              [r for r in runs if gpu_of(r) not in PER_GPU])
    per_gpu = {}
    for gpu, key in PER_GPU.items():
        mine = [r for r in runs if gpu_of(r) == gpu]
        if not mine:
            continue
        copies = []
        for r in mine:  # the run with the fold's serving keys merged over its preset
            text = open(r).read().replace(f"hardware:\n  preset: {gpu}\n",
                                          f"hardware:\n  preset: {gpu}\n  file: {shared}\n")
            copies.append(os.path.join(tmp, f"{tag}-{os.path.basename(r)}"))
            open(copies[-1], "w").write(text)
        out = os.path.join(tmp, f"{tag}-{gpu}.yaml")
        calibrate(kvsim, ["--hardware", gpu, "--iterations", "4", "--fit", key, "-o", out,
                          "--runs"] + copies)
        per_gpu[gpu] = {k: fitted_keys(out)[k] for k in key.split(",")}
    return shared, per_gpu


def sets_for(run, fitted):
    """--set arguments that simulate `run` with a fold's fit. A PER_GPU GPU none of whose runs
    the fold holds gets the H100's measured values of its keys, not its preset's (those were
    fitted on the very runs left out)."""
    shared, per_gpu = fitted
    sets = [f"hardware.file={shared}"]
    gpu = gpu_of(run)
    own = per_gpu.get(gpu)
    if own is None and gpu in PER_GPU:
        measured = fitted_keys(os.path.join(ROOT, MEASURED_GPU))
        own = {k: measured[k] if k in measured else (BUILT_IN[k], "")
               for k in PER_GPU[gpu].split(",")}
    for key, (value, _) in (own or {}).items():
        sets.append(f"hardware.{key}={value}")
    return sets


def write_presets(fitted):
    """Writes the fitted serving keys into every preset, between the markers, and a PER_GPU
    GPU's own fitted key into its preset."""
    shared, per_gpu = fitted
    keys = [l for l in open(shared).read().splitlines()
            if re.match(r"^\w+: ", l) and l.split(":")[0] in FIT.split(",")]
    for path in sorted(glob.glob(os.path.join(ROOT, "scenarios", "hardware", "*.yaml"))):
        name = re.search(r"^name: (\S+)", open(path).read(), re.MULTILINE).group(1)
        block = [PRESET_BEGIN,
                 "# Serving keys fitted on the training runs of GPUs with measured efficiencies",
                 "# (scenarios/validation/), the same for every GPU (the vLLM software is; the",
                 "# GPU's fixed costs are not measured per GPU yet): `kvsim calibrate --runs RUNS",
                 f"# --fit {FIT}",
                 f"# --from-defaults --prior {PRIOR} --iterations {ITERATIONS}`.",
                 *keys]
        own = per_gpu.get(name, {})
        if own:
            keys_fitted = ",".join(own)
            block += [f"# Not timed on this GPU yet: {' and '.join(own)} fitted on its own "
                      "training runs with",
                      f"# the keys above (`kvsim calibrate --hardware {name} --runs ... --fit "
                      f"{keys_fitted} --iterations 4`)."]
        for key, (value, note) in own.items():
            if note:
                block.append(f"# {key}: {note} (the runs pull it past the bound)")
            block.append(f"{key}: {value}")
        block.append(PRESET_END)
        text = open(path).read()
        if PRESET_BEGIN not in text:
            sys.exit(f"{path}: no serving-keys markers")
        head, rest = text.split(PRESET_BEGIN, 1)
        _, tail = rest.split(PRESET_END, 1)
        open(path, "w").write(head + "\n".join(block) + tail)
        print("wrote the serving keys into " + os.path.relpath(path, ROOT))


def summary_rows(rows, names):
    lines = []
    for key, label in METRICS:
        ins = [abs(rows[n]["in"][key][0]) for n in names if key in rows[n]["in"]]
        loo = [abs(rows[n]["loo"][key][0]) for n in names if key in rows[n].get("loo", {})]
        if not ins:
            continue
        cells = [f"{statistics.median(ins):.1f} %", f"{max(ins):.1f} %"]
        cells += [f"{statistics.median(loo):.1f} %", f"{max(loo):.1f} %"] if loo else ["", ""]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def plot(rows, path):
    try:
        import matplotlib
    except ImportError:
        sys.exit("--plot needs matplotlib: run with Debian's /usr/bin/python3 (python3-matplotlib)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.4))
    for ax, (key, label) in zip(axes, METRICS):
        for kind, marker, color, name in (("in", "o", "#4477aa", "in-sample"),
                                          ("loo", "^", "#cc6677", "model left out")):
            pts = [(r[kind][key][2], r[kind][key][1]) for r in rows.values()
                   if key in r.get(kind, {})]
            if pts:
                ax.scatter([p[0] for p in pts], [p[1] for p in pts], marker=marker, s=22,
                           color=color, label=name, alpha=0.85)
        lo = min(min(r["in"][key][1], r["in"][key][2]) for r in rows.values() if key in r["in"])
        hi = max(max(r["in"][key][1], r["in"][key][2]) for r in rows.values() if key in r["in"])
        ax.plot([lo, hi], [lo, hi], color="#888888", lw=1)
        for f in (0.9, 1.1):
            ax.plot([lo, hi], [lo * f, hi * f], color="#bbbbbb", lw=0.8, ls="--")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(f"measured {label} (ms)")
        ax.set_ylabel(f"kvsim {label} (ms)")
        ax.set_title(label + " (dashed: ±10 %)")
    axes[0].legend(loc="upper left", fontsize=8)
    fig.suptitle(f"kvsim against {len(rows)} measured vLLM runs (training split)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print("wrote " + os.path.relpath(path, ROOT))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--replot":
        plot(json.load(open(sys.argv[2])), os.path.abspath(sys.argv[3]))
        return
    if len(sys.argv) < 2 or sys.argv[1].startswith("--"):
        sys.exit(__doc__)
    kvsim = os.path.abspath(sys.argv[1])
    os.chdir(ROOT)
    runs = sorted(glob.glob("scenarios/validation/*.yaml"))
    with tempfile.TemporaryDirectory() as tmp:
        if "--write-presets" in sys.argv:
            write_presets(fit(kvsim, runs, tmp, "all"))
        rows = {}
        for r in runs:
            name = os.path.splitext(os.path.basename(r))[0]
            rows[name] = {"model": model_of(r), "in": run_errors(kvsim, r)}
        if "--loo-from" in sys.argv:
            earlier = json.load(open(sys.argv[sys.argv.index("--loo-from") + 1]))
            for name, row in rows.items():
                if name not in earlier or "loo" not in earlier[name]:
                    sys.exit(f"--loo-from: no leave-one-model-out row for {name}")
                row["loo"] = earlier[name]["loo"]
        elif "--only-in-sample" not in sys.argv:
            for model in sorted({v["model"] for v in rows.values()}):
                mine = [r for r in runs if model_of(r) == model]
                others = [r for r in runs if model_of(r) != model]
                fitted = fit(kvsim, others, tmp, model)
                for r in mine:
                    name = os.path.splitext(os.path.basename(r))[0]
                    rows[name]["loo"] = run_errors(kvsim, r, sets_for(r, fitted))
                print(f"  fitted without {model} ({len(mine)} runs)", file=sys.stderr)
    names = sorted(rows)
    lines = ["| metric | median \\|error\\| in-sample | worst in-sample | "
             "median leave-one-model-out | worst leave-one-model-out |",
             "|---|---|---|---|---|"] + summary_rows(rows, names)
    models = sorted({rows[n]["model"] for n in names})
    lines += ["", "Per model (median |error| over its runs, in-sample / model left out):", "",
              "| model | runs | TTFT | TPOT | E2E |", "|---|---|---|---|---|"]
    for m in models:
        mine = [n for n in names if rows[n]["model"] == m]
        cells = []
        for key, _ in METRICS:
            a = statistics.median(abs(rows[n]["in"][key][0]) for n in mine)
            loo = [abs(rows[n]["loo"][key][0]) for n in mine if key in rows[n].get("loo", {})]
            cells.append(f"{a:.1f} / {statistics.median(loo):.1f} %" if loo else f"{a:.1f} %")
        lines.append(f"| {m} | {len(mine)} | " + " | ".join(cells) + " |")
    lines += ["", "Per run (signed error, in-sample / model left out):", "",
              "| run | TTFT | TPOT | E2E |", "|---|---|---|---|"]
    for n in names:
        cells = []
        for key, _ in METRICS:
            a = rows[n]["in"][key][0]
            b = rows[n].get("loo", {}).get(key)
            cells.append(f"{a:+.1f} / {b[0]:+.1f} %" if b else f"{a:+.1f} %")
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    table = "\n".join(lines)
    print(table)
    if "--json" in sys.argv:
        json.dump(rows, open(sys.argv[sys.argv.index("--json") + 1], "w"), indent=1)
    if "--plot" in sys.argv:
        plot(rows, os.path.abspath(sys.argv[sys.argv.index("--plot") + 1]))
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
