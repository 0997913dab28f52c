#!/usr/bin/python3
"""The figures under docs/ and the commands that make them (docs/figures.json).

    /usr/bin/python3 scripts/figures.py check --build build [--listed|--data|--screenshots] [NAME...]
    /usr/bin/python3 scripts/figures.py make --build build [--data-only] [--slow] [NAME...]

check: every docs/*.png is listed in docs/figures.json and every figure listed exists (when
no NAME is given; --listed checks only that); with --data (the default) each figure's data
command is re-run and its output compared with the committed data file (docs/figures/...).
A difference means the code changed the numbers a figure shows: the figure is stale, and the
message names it and the command that regenerates it. With --screenshots each screenshot is re-rendered to a
temporary file (the README's command, under xvfb-run): it must succeed and give the committed
PNG's size. A figure's README command (`readme`) must still be in README.md, word for word.
Exit 0 all fresh, 1 stale or failing, 2 bad input, 77 everything asked for was skipped (a
figure whose trace is absent).

make: regenerates each data file, then draws each figure (from the committed data where its
draw command reads it). A data file marked `slow` (the validation scatter's, ~40 minutes) is
remade only with --slow; its `check` command is the quick one check runs.
--data-only writes the data files and draws nothing.

Needs only the Python standard library (the plot commands need Debian's python3-matplotlib).
"""
import argparse
import csv
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPEC = os.path.join(ROOT, "docs", "figures.json")
SHARED_TRACES = "/work/shared/data/traces"


def load_spec():
    with open(SPEC) as f:
        return json.load(f)["figures"]


def env_for(build, out):
    env = dict(os.environ)
    env["KVSIM"] = os.path.join(build, "bin", "kvsim")
    env["KVSIM_VIZ"] = os.path.join(build, "bin", "kvsim-viz")
    env["PYTHON"] = "/usr/bin/python3"
    env["OUT"] = out
    return env


def run(command, env):
    """Runs one command line under bash in the repository root; (exit code, stdout, stderr)."""
    p = subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True,
                       text=True)
    return p.returncode, p.stdout, p.stderr


def expand(path, env):
    return os.path.join(ROOT, path.replace("$OUT", env["OUT"]))


def trace_present(name):
    dirs = [d for d in (os.environ.get("KVSIM_TRACE_DIR"), SHARED_TRACES) if d]
    return any(os.path.exists(os.path.join(d, name)) for d in dirs)


def fresh_data(entry, env):
    """A data command's output (text), or raises RuntimeError naming the command. `entry` is a
    data entry, or its `check` part (a quicker command that makes part of the data)."""
    rc, stdout, stderr = run(entry["command"], env)
    if rc != 0:
        raise RuntimeError(f"`{entry['command']}` exited {rc}:\n{stdout}{stderr}")
    if "output" in entry:
        with open(expand(entry["output"], env)) as f:
            return f.read()
    return stdout


def first_difference(kind, committed, fresh):
    """None when equal under `kind`, else a one-line description of the first difference."""
    if kind == "text":
        if committed == fresh:
            return None
        a, b = committed.splitlines(), fresh.splitlines()
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return f"line {i + 1}: committed {x[:160]!r}, fresh {y[:160]!r}"
        return f"committed has {len(a)} lines, fresh {len(b)}"
    if kind == "csv":
        a = list(csv.reader(io.StringIO(committed)))
        b = list(csv.reader(io.StringIO(fresh)))
        if a[:1] != b[:1]:
            return f"header: committed {a[:1]}, fresh {b[:1]}"
        header = a[0] if a else []
        if len(a) != len(b):
            return f"committed has {len(a) - 1} rows, fresh {len(b) - 1}"
        for r, (x, y) in enumerate(zip(a[1:], b[1:])):
            for c, (u, v) in enumerate(zip(x, y)):
                if u != v:
                    return f"row {r + 1} ({x[0]}), column {header[c]}: committed {u}, fresh {v}"
        return None
    if kind in ("json", "json-subset"):
        return json_difference(json.loads(committed), json.loads(fresh), "",
                               subset=kind == "json-subset")
    raise ValueError(f"unknown compare kind {kind!r}")


def json_difference(a, b, where, subset=False):
    """First difference of committed `a` and fresh `b`; with `subset`, keys of an object only
    in `a` are allowed (the committed file holds more than the quick command makes)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in b and subset:
                continue
            if k not in a or k not in b:
                return f"{where}/{k}: only in {'fresh' if k not in a else 'committed'}"
            d = json_difference(a[k], b[k], f"{where}/{k}", subset)
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{where}: committed has {len(a)} items, fresh {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = json_difference(x, y, f"{where}[{i}]", subset)
            if d:
                return d
        return None
    return None if a == b else f"{where or '/'}: committed {a!r}, fresh {b!r}"


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        raise ValueError(f"{path} is not a PNG")
    return struct.unpack(">II", head[16:24])


def regen_hint(name, slow=False):
    return (f"/usr/bin/python3 scripts/figures.py make --build build "
            f"{'--slow ' if slow else ''}{name}")


def check(args, figures):
    build = os.path.abspath(args.build)
    failures, skipped = [], []
    checked = 0
    listed = {f["png"] for f in figures}
    if not args.names:
        for png in sorted(os.listdir(os.path.join(ROOT, "docs"))):
            if png.endswith(".png") and f"docs/{png}" not in listed:
                failures.append(f"docs/{png} is not in docs/figures.json: list it with the "
                                f"commands that make it")
        for fig in figures:
            if not os.path.exists(os.path.join(ROOT, fig["png"])):
                failures.append(f"{fig['name']}: {fig['png']} is missing; make it with "
                                f"{regen_hint(fig['name'])}")
        print(f"ok   docs/figures.json lists {len(listed)} figures")
        checked += 1
    if args.listed:
        figures = []
    readme = open(os.path.join(ROOT, "README.md")).read()
    for fig in figures:
        if args.names and fig["name"] not in args.names:
            continue
        name = fig["name"]
        if args.data and "readme" in fig:
            checked += 1
            if fig["readme"] not in readme:
                failures.append(f"{name}: README.md no longer shows its command "
                                f"`{fig['readme']}`; update the README or docs/figures.json")
        for entry in fig.get("data", []) if args.data else []:
            trace = entry.get("needs_trace")
            if trace and not trace_present(trace):
                skipped.append(f"{name}: {entry['file']} (needs {trace}: set KVSIM_TRACE_DIR)")
                continue
            with tempfile.TemporaryDirectory() as out:
                env = env_for(build, out)
                quick = entry.get("check", entry)
                try:
                    fresh = fresh_data(quick, env)
                except RuntimeError as e:
                    failures.append(f"{name}: the data command failed: {e}")
                    continue
            with open(os.path.join(ROOT, entry["file"])) as f:
                committed = f.read()
            diff = first_difference(entry["compare"], committed, fresh)
            checked += 1
            if diff:
                failures.append(
                    f"{name}: {fig['png']} is stale: {entry['file']} differs from a fresh "
                    f"`{quick['command']}` ({diff}). The code changed the numbers this figure "
                    f"shows; regenerate the data and the figure with "
                    f"{regen_hint(name, entry.get('slow', False))} "
                    f"(and update any README numbers taken from it)")
            else:
                print(f"ok   {name}: {entry['file']} matches a fresh run")
        if args.screenshots and fig["kind"] == "screenshot":
            with tempfile.TemporaryDirectory() as out:
                env = env_for(build, out)
                shot = os.path.join(out, os.path.basename(fig["png"]))
                cmd = fig["draw"].replace(fig["png"], shot)
                rc, stdout, stderr = 5, "", ""
                for _ in range(2):  # xvfb-run exits 5 on a race in its own cleanup
                    rc, stdout, stderr = run(cmd, env)
                    if rc != 5 or "cleaning up" not in stderr:
                        break
                if rc != 0 or not os.path.exists(shot):
                    failures.append(f"{name}: the screenshot command failed (exit {rc}): "
                                    f"`{fig['draw']}`\n{stdout}{stderr}")
                    continue
                want = tuple(int(v) for v in fig["size"].split("x"))
                got, committed = png_size(shot), png_size(os.path.join(ROOT, fig["png"]))
                checked += 1
                if got != want or committed != want:
                    failures.append(f"{name}: size {fig['size']} expected; the fresh render is "
                                    f"{got[0]}x{got[1]}, {fig['png']} {committed[0]}x"
                                    f"{committed[1]}; regenerate with {regen_hint(name)}")
                else:
                    print(f"ok   {name}: the screenshot command renders {fig['size']}")
    for s in skipped:
        print(f"skip {s}")
    for f in failures:
        print(f"FAIL {f}")
    print(f"figures: {checked} checks, {len(failures)} failed, {len(skipped)} skipped")
    if failures:
        return 1
    if not checked:  # nothing was compared: say so rather than pass
        return 77  # CTest's SKIP_RETURN_CODE
    return 0


def make(args, figures):
    build = os.path.abspath(args.build)
    rc_all = 0
    for fig in figures:
        if args.names and fig["name"] not in args.names:
            continue
        with tempfile.TemporaryDirectory() as out:
            env = env_for(build, out)
            for entry in fig.get("data", []):
                if entry.get("slow") and not args.slow:
                    print(f"skip {entry['file']}: slow (`{entry['command']}`); --slow "
                          f"remakes it")
                    continue
                trace = entry.get("needs_trace")
                if trace and not trace_present(trace):
                    sys.exit(f"{fig['name']}: needs {trace} (set KVSIM_TRACE_DIR)")
                try:
                    data = fresh_data(entry, env)
                except RuntimeError as e:
                    sys.exit(f"{fig['name']}: {e}")
                path = os.path.join(ROOT, entry["file"])
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w") as f:
                    f.write(data)
                print(f"wrote {entry['file']}")
            if args.data_only:
                continue
            rc, stdout, stderr = run(fig["draw"], env)
            sys.stdout.write(stdout)
            if rc != 0:
                print(f"FAIL {fig['name']}: `{fig['draw']}` exited {rc}\n{stderr}")
                rc_all = 1
    return rc_all


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("action", choices=["check", "make"])
    ap.add_argument("names", nargs="*", help="figures to check or make (default: all)")
    ap.add_argument("--build", default="build", help="the build folder (bin/kvsim, bin/kvsim-viz)")
    ap.add_argument("--listed", action="store_true",
                    help="check: only that docs/figures.json lists every docs/*.png")
    ap.add_argument("--data", action="store_true",
                    help="check: re-run the data commands (the default when --screenshots is "
                         "not given) and the README commands")
    ap.add_argument("--screenshots", action="store_true",
                    help="check: re-render each screenshot (needs xvfb-run and kvsim-viz)")
    ap.add_argument("--slow", action="store_true",
                    help="make: also remake the data files marked slow")
    ap.add_argument("--data-only", action="store_true",
                    help="make: write the data files only, draw nothing")
    args = ap.parse_intermixed_args()
    if not args.screenshots:
        args.data = True
    figures = load_spec()
    unknown = set(args.names) - {f["name"] for f in figures}
    if unknown:
        print(f"unknown figure(s): {', '.join(sorted(unknown))}; known: "
              f"{', '.join(f['name'] for f in figures)}", file=sys.stderr)
        return 2
    if not os.path.exists(os.path.join(args.build, "bin", "kvsim")):
        print(f"{args.build}/bin/kvsim is not built", file=sys.stderr)
        return 2
    if args.screenshots and not shutil.which("xvfb-run"):
        print("--screenshots needs xvfb-run", file=sys.stderr)
        return 2
    return check(args, figures) if args.action == "check" else make(args, figures)


if __name__ == "__main__":
    sys.exit(main())
