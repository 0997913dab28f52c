"""kvsim for Python: the simulator's library (not its CLI) with pandas results.

    import kvsim
    r = kvsim.run()                       # the built-in attention-pack study
    r.points                              # one row per sweep point (docs/columns.md)
    r.requests                            # one row per request, with point and seed
    kvsim.run("s.yaml", set={"cache.block_size": 32}, seeds=5, steps=True).steps
    kvsim.sweep("s.yaml", jobs=2, out="sweep_out").points
    kvsim.layout()["groups"]              # the KV cache plan, tables as DataFrames
    kvsim.schedule("requests.jsonl", num_gpu_blocks=64)   # the step log as a DataFrame
    kvsim.replay("trace.jsonl", num_blocks=200, curve=True).curve   # `kvsim replay` forms

Every function takes a scenario as a path, a ``Scenario`` or None (the built-in default),
and ``set={"key.path": value}`` as the CLI's ``--set``. Bad input raises ``kvsim.Error``
with the CLI's message (file, line and key). The CSV columns are byte for byte the CLI's.
"""

import io
import json
import os
import re
import sys

import pandas as pd

from ._errors import Error
from . import _kvsim

__version__ = _kvsim.__version__
__all__ = ["Error", "ReplayResult", "Result", "Scenario", "SweepResult", "layout", "replay",
           "run", "schedule", "sweep"]


def _value_text(value):
    """A --set value as the CLI's text: booleans as YAML's true/false."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class Scenario:
    """A scenario file (or the built-in default) and its --set overrides, checked as
    ``kvsim run`` checks them as soon as they are given."""

    def __init__(self, path=None, overrides=()):
        self.path = os.fspath(path) if path is not None else ""
        self.overrides = list(overrides)
        _kvsim.check_scenario(self.path, self.overrides)

    @classmethod
    def load(cls, path=None):
        return cls(path)

    def set(self, key, value):
        """Overrides one key (``--set key=value``); returns the scenario, for chaining."""
        overrides = self.overrides + [f"{key}={_value_text(value)}"]
        _kvsim.check_scenario(self.path, overrides)
        self.overrides = overrides
        return self

    def __repr__(self):
        return f"Scenario({self.path or '<built-in default>'!r}, overrides={self.overrides!r})"


def _scenario_args(scenario, overrides):
    if isinstance(scenario, Scenario):
        path, sets = scenario.path, list(scenario.overrides)
    elif scenario is None:
        path, sets = "", []
    else:
        path, sets = os.fspath(scenario), []
    for key, value in (overrides or {}).items():
        sets.append(f"{key}={_value_text(value)}")
    return path, sets


def _progress(enabled, unit):
    """A callback(done, total) showing progress: tqdm where installed, else a plain line on
    stderr. Returns (callback, close)."""
    if not enabled:
        return None, lambda: None
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    state = {}

    def update(done, total):
        if tqdm is not None:
            bar = state.get("bar")
            if bar is None:
                bar = state["bar"] = tqdm(total=total, unit=unit, file=sys.stderr)
            bar.update(done - bar.n)
        else:
            print(f"kvsim: {done}/{total} {unit}s", file=sys.stderr, flush=True)

    def close():
        if state.get("bar") is not None:
            state["bar"].close()

    return update, close


# The columns of Result.steps without a CPU tier (an empty table still has them).
_STEP_COLUMNS = ["point", "seed", "instance", "step", "t_start_ns", "t_end_ns", "t_start_ms",
                 "t_end_ms", "scheduled", "preempted", "finished", "num_free_blocks", "new",
                 "resumed", "running", "waiting", "num_scheduled_tokens", "num_scheduled",
                 "num_preempted", "num_finished", "num_admitted", "num_resumed"]


def _read_csv(text):
    return pd.read_csv(io.StringIO(text)) if text else pd.DataFrame()


class Result:
    """What ``kvsim.run`` returns.

    points      DataFrame, one row per sweep point: the columns of docs/columns.md's sweep
                CSV (the rows of ``kvsim run -o DIR``'s summary.csv and ``kvsim sweep``'s)
    requests    DataFrame, one row per request of every point and seed: ``point``, ``seed``
                and requests.csv's columns (None with requests=False)
    steps       DataFrame, one row per step of every point and seed (run(steps=True) only,
                else None): ``point``, ``seed``, then the fields of ``kvsim run --step-log``'s
                records (docs/step-log.md) by name — ``instance`` ("" for a single engine;
                "prefill 0", "decode 1" in P/D), ``step``, ``t_start_ns``/``t_end_ns`` (and
                ``_ms``), ``scheduled`` (tuples (id, n, before, hit)), ``preempted``,
                ``finished``, ``new``, ``resumed`` (lists of request ids, requests.csv's
                ``id``), ``num_free_blocks``, ``running``, ``waiting``,
                ``num_scheduled_tokens``, the CPU tier's fields where a point has one — and
                the lists' sizes (``num_scheduled``, ``num_preempted``, ``num_finished``,
                ``num_admitted``, ``num_resumed``)
    provenance  dict: provenance.json's fields
    report      the table ``kvsim run`` prints; warnings and notes its stderr lines
    exit_code   what ``kvsim run`` would exit with (1: some points failed or measured nothing)
    csv         the points as CSV text, byte-identical to the CLI's
    """

    def __init__(self, raw, steps=False):
        self.csv = raw["csv"]
        self.points = _read_csv(self.csv)
        self.provenance = json.loads(raw["provenance"])
        self.report = raw["report"]
        self.warnings = raw["warnings"]
        self.notes = list(raw["notes"])
        self.exit_code = raw["exit_code"]
        self.requests = None
        if raw["requests"]:
            frames = []
            for point, seed, text in raw["requests"]:
                df = _read_csv(text)
                df.insert(0, "seed", seed)
                df.insert(0, "point", point)
                frames.append(df)
            self.requests = pd.concat(frames, ignore_index=True)
        self.steps = None
        if steps:
            # One table per run; a sweep that turns the CPU tier on at some points only gives
            # those rows the tier's columns (NaN elsewhere).
            frames = [pd.DataFrame(dict(columns)) for columns in raw["steps"]]
            self.steps = (pd.concat(frames, ignore_index=True) if frames
                          else pd.DataFrame(columns=_STEP_COLUMNS))

    def __repr__(self):
        return self.report


def run(scenario=None, set=None, seeds=None, jobs=1, out=None, force=False, requests=True,
        steps=False, progress=True):
    """Runs a scenario as ``kvsim run`` does (every point of its ``sweep:``; ``seeds`` as
    ``--seeds``; ``out`` as ``-o``) and returns a ``Result``. ``steps=True`` keeps every
    step record (much memory for long runs). The simulation runs without the GIL."""
    path, sets = _scenario_args(scenario, set)
    callback, close = _progress(progress, "point")
    try:
        raw = _kvsim.run(path, sets, int(seeds or 0), int(jobs), os.fspath(out or ""),
                         bool(force), bool(requests), bool(steps), callback)
    finally:
        close()
    for note in raw["notes"]:
        print(f"kvsim: note: {note}", file=sys.stderr)
    return Result(raw, steps=steps)


class SweepResult:
    """What ``kvsim.sweep`` returns: ``points`` (the sweep CSV as a DataFrame; None when
    --max-points stopped it early), ``path`` (the CSV), ``failed`` (point indices) and
    ``provenance``."""

    def __init__(self, raw):
        self.path = raw["csv_path"]
        self.complete = raw["complete"]
        self.failed = list(raw["failed"])
        self.provenance = json.loads(raw["provenance"])
        self.points = pd.read_csv(self.path) if self.complete else None

    def __repr__(self):
        return f"SweepResult({self.path!r}, failed={self.failed})"


def sweep(scenario=None, set=None, seeds=None, jobs=1, out="sweep_out", shard=None,
          per_point=False, force=False, max_points=0, progress=True):
    """Runs a scenario's sweep into OUT/sweep.csv as ``kvsim sweep`` does (resumable; a rerun
    skips finished points). ``shard=(k, n)`` runs the points with index % n == k."""
    path, sets = _scenario_args(scenario, set)
    shard_k, shard_n = shard if shard is not None else (0, 1)
    update, close = _progress(progress, "point")
    done = re.compile(r"\((\d+)/(\d+)\)")

    def on_line(line):
        m = done.search(line)
        if m and update is not None:
            update(int(m.group(1)), int(m.group(2)))
        elif progress:
            print(line, file=sys.stderr, flush=True)

    try:
        raw = _kvsim.sweep(path, sets, int(seeds or 0), int(jobs), os.fspath(out),
                           int(shard_k), int(shard_n), bool(per_point), bool(force),
                           int(max_points), on_line)
    finally:
        close()
    return SweepResult(raw)


def layout(scenario=None, set=None):
    """The KV cache plan of a scenario's base point, as ``kvsim layout --json``: a dict whose
    ``groups``, ``tensors`` and ``layouts`` are DataFrames (one row per group, tensor,
    layer), with ``text`` the plan as ``kvsim layout`` prints it."""
    path, sets = _scenario_args(scenario, set)
    plan_json, text = _kvsim.layout(path, sets)
    plan = json.loads(plan_json)
    for table in ("groups", "tensors", "layouts"):
        if table in plan:
            plan[table] = pd.DataFrame(plan[table])
    plan["text"] = text
    return plan


def schedule(requests, step_log=None, **options):
    """vLLM's scheduler on a step clock, as ``kvsim schedule``: ``requests`` is a
    REQUESTS.jsonl path or a list of dicts (id, tokens, max_tokens, arrival_step, priority);
    ``options`` are the command's flags with underscores (num_gpu_blocks=64, block_size=16,
    policy="fcfs", semantics="latest", ...). Returns the step records as a DataFrame with
    the summary line (a dict) in ``.attrs["summary"]`` (the columns of ``Result.steps``
    without point, seed and times; request ids as given); ``step_log=PATH`` also writes the
    file ``--step-log PATH`` writes."""
    o = _kvsim.ScheduleOptions()
    for key, value in options.items():
        if not hasattr(o, key):
            raise Error(f"schedule: unknown option '{key}'", "bad_flags")
        setattr(o, key, value)
    text = ""
    if isinstance(requests, (str, os.PathLike)):
        o.requests = os.fspath(requests)
    else:
        o.requests = "<requests>"
        text = "".join(json.dumps(r) + "\n" for r in requests)
    columns, summary = _kvsim.schedule(o, text, os.fspath(step_log or ""))
    df = pd.DataFrame(dict(columns))
    df.attrs["summary"] = json.loads(summary)
    return df


class ReplayResult:
    """What ``kvsim.replay`` returns.

    summary     dict: ``kvsim replay --json``'s object (with ``curve=True`` less its
                ``curve`` list, which is ``.curve``)
    requests    DataFrame, one row per request of the trace (``per_request`` only, else
                None): ``id``, ``prompt_tokens``, ``hit_tokens``, ``cpu_hit_tokens`` (with a
                CPU tier), ``served``
    curve       DataFrame (``curve=True`` only, else None): ``capacity_blocks``,
                ``hit_tokens``, ``hit_rate`` at each capacity where the hit changes
    text        what ``kvsim replay`` prints without --json (with ``curve=True`` the CSV)
    csv         ``curve=True``: the curve as the CSV ``kvsim replay --curve`` prints, byte
                for byte (else None)
    notes       the CLI's ``kvsim: note:`` lines (a model's plan replaced the block size)
    exit_code   what ``kvsim replay`` exits with: 1 when no request could be served (then
                ``warnings`` is the CLI's error line and ``summary["hit_rate"]`` None)
    """

    def __init__(self, raw, curve):
        self.summary = json.loads(raw["json"])
        self.text = raw["text"]
        self.notes = [raw["note"]] if raw["note"] else []
        self.warnings = raw["none_served"]
        self.exit_code = 1 if raw["none_served"] else 0
        self.curve = None
        self.csv = None
        if curve:
            self.curve = pd.DataFrame(self.summary.pop("curve"),
                                      columns=["capacity_blocks", "hit_tokens", "hit_rate"])
            self.csv = self.text
        outcomes = dict(raw["outcomes"])
        self.requests = pd.DataFrame(outcomes) if outcomes else None

    def __repr__(self):
        return self.text


def replay(trace, num_blocks=None, block_size=16, per_request=False, curve=False,
           **options):
    """``kvsim replay TRACE``: the vLLM prefix-cache hit rate of a request trace, with no
    timing (token JSONL or Mooncake JSONL). Every flag of the command is an option, named
    without its dashes and with underscores: ``num_blocks`` or ``cache_tokens`` (the
    capacity), ``block_size``, ``concurrency``, ``hybrid`` ("mamba-align", "mamba-all",
    "swa:W"), ``model`` (a preset) or ``scenario`` (a path: the cache of its plan, and its
    ``cache.offload``), ``vllm_semantics``, ``prefix_cache_retention_interval`` (an int or
    "null"), ``skip_bad_lines``, and the CPU tier's ``num_cpu_blocks``,
    ``offload_block_size``, ``eviction_policy``, ``store_threshold``. ``curve=True`` gives
    the hit rate at every capacity (``.curve``); ``per_request=True`` each request's hit
    (``.requests``), and ``per_request=PATH`` also writes the file ``--per-request PATH``
    writes. Returns a ``ReplayResult``; bad flags or input raise ``kvsim.Error`` with the
    CLI's message. The replay runs without the GIL."""
    f = _kvsim.ReplayFlags()
    f.trace = os.fspath(trace)
    f.block_size = int(block_size)
    if num_blocks is not None:
        f.num_blocks = int(num_blocks)
    f.curve = bool(curve)
    per_request_path = None
    if isinstance(per_request, (str, os.PathLike)):
        per_request_path = os.fspath(per_request)
        per_request = True
    f.per_request = bool(per_request)
    if "semantics" in options:  # the name kvsim.schedule uses
        options["vllm_semantics"] = options.pop("semantics")
    for key, value in options.items():
        if key in ("trace", "per_request", "curve") or not hasattr(f, key):
            raise Error(f"replay: unknown option '{key}'", "bad_flags")
        if value is None:
            continue
        if isinstance(getattr(f, key), str):  # a path, a name, or the retention's int
            value = os.fspath(value) if isinstance(value, os.PathLike) else str(value)
        setattr(f, key, value)
    raw = _kvsim.replay(f)
    for note in [raw["note"]] if raw["note"] else []:
        print(f"kvsim: note: {note}", file=sys.stderr)
    if per_request_path is not None and not curve:
        with open(per_request_path, "w", encoding="utf-8", newline="") as out:
            out.write(raw["per_request"])
    return ReplayResult(raw, curve)
