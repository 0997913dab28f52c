"""The Python module against the CLI (byte-identical CSVs and error text) and against
hand-worked values and invariants."""
import json
import math
import threading
import time

import pytest

import kvsim
from conftest import SMALL, SMALL_SETS, SOURCE_DIR


def test_run_csv_is_byte_identical_to_the_cli(cli, tmp_path):
    out = tmp_path / "cli"
    cli("run", *SMALL_SETS, "--seeds", "2", "-o", out)
    r = kvsim.run(set=SMALL, seeds=2, progress=False)
    assert r.csv == (out / "summary.csv").read_text()
    assert len(r.points) == 4
    # Every kept requests.csv is the file the CLI wrote for that point and seed.
    for (point, seed), rows in r.requests.groupby(["point", "seed"]):
        cli_csv = (out / "points" / f"{point:04d}" / f"seed-{seed}" / "requests.csv").read_text()
        assert len(rows) == cli_csv.count("\n") - 1
    raw = kvsim._kvsim.run("", ["workload.num_requests=80"], 2, 1, "", False, True, False, None)
    for point, seed, text in raw["requests"]:
        assert text == (out / "points" / f"{point:04d}" / f"seed-{seed}" / "requests.csv").read_text()


def test_run_out_dir_writes_what_the_cli_writes(cli, tmp_path):
    cli("run", *SMALL_SETS, "--seeds", "1", "-o", tmp_path / "cli")
    kvsim.run(set=SMALL, seeds=1, out=tmp_path / "py", progress=False)
    for f in ["summary.csv", "scenario.resolved.yaml", "points/0002/requests.csv",
              "points/0002/metrics.json"]:
        assert (tmp_path / "py" / f).read_bytes() == (tmp_path / "cli" / f).read_bytes(), f
    prov = json.loads((tmp_path / "py" / "provenance.json").read_text())
    assert prov["command"] == "run" and prov["points"] == 4


def test_sweep_csv_is_byte_identical_to_the_cli(cli, tmp_path):
    cli("sweep", *SMALL_SETS, "--seeds", "2", "-o", tmp_path / "cli")
    s = kvsim.sweep(set=SMALL, seeds=2, out=tmp_path / "py", jobs=2, progress=False)
    assert (tmp_path / "py" / "sweep.csv").read_bytes() == (tmp_path / "cli" / "sweep.csv").read_bytes()
    assert s.failed == [] and list(s.points["cache.attn_pack_size"]) == [1, 2, 4, 8]


def test_points_columns_are_documented():
    r = kvsim.run(set=SMALL, seeds=2, progress=False)
    doc = (SOURCE_DIR / "docs" / "columns.md").read_text()
    documented = set()
    for line in doc.splitlines():
        if line.startswith("| `"):
            documented.update(c.strip("`") for c in line.split("|")[1].strip().split(", "))
    for col in r.points.columns:
        base = col[: -len(".ci95")] if col.endswith(".ci95") else col
        if base in ("seeds", "cache.attn_pack_size"):  # the replicate count; the sweep key
            continue
        assert base in documented, col


def test_replicate_interval_is_student_t_over_single_seed_runs():
    # Seeds 1..3 run one at a time, combined by hand: mean ± t(0.975, 2) · s / √3.
    t975_2 = 4.302652729911275
    one = [kvsim.run(set={**SMALL, "seed": s, "cache.attn_pack_size": 2}, seeds=1, progress=False)
           .points["prefix_hit_rate"][0] for s in (1, 2, 3)]
    r = kvsim.run(set={**SMALL, "cache.attn_pack_size": 2}, seeds=3, progress=False)
    mean = sum(one) / 3
    s = math.sqrt(sum((x - mean) ** 2 for x in one) / 2)
    assert r.points["seeds"][0] == 3
    assert r.points["prefix_hit_rate"][0] == pytest.approx(mean, abs=1e-6)
    assert r.points["prefix_hit_rate.ci95"][0] == pytest.approx(t975_2 * s / math.sqrt(3), abs=1e-6)


def _as_cli_record(row):
    """A Result.steps row written back as `kvsim run --step-log` writes a record: request
    ids as strings, the CPU tier's evictions as "id#block"."""
    ids = lambda xs: [str(x) for x in xs]
    rec = {"step": row["step"]}
    if row["instance"]:
        rec["instance"] = row["instance"]
    rec.update({
        "scheduled": [[str(c[0]), c[1], c[2], c[3]] for c in row["scheduled"]],
        "preempted": ids(row["preempted"]), "finished": ids(row["finished"]),
        "num_free_blocks": row["num_free_blocks"], "new": ids(row["new"]),
        "resumed": ids(row["resumed"]), "running": row["running"], "waiting": row["waiting"],
        "num_scheduled_tokens": row["num_scheduled_tokens"],
        "t_start_ns": row["t_start_ns"], "t_end_ns": row["t_end_ns"]})
    if "cpu_blocks_used" in row and isinstance(row["kv_admitted"], list):
        rec.update({
            "kv_admitted": [[str(k[0]), k[1], k[2]] for k in row["kv_admitted"]],
            "loading": ids(row["loading"]),
            "cpu_loads": [[str(b[0]), list(b[1])] for b in row["cpu_loads"]],
            "cpu_stores": [[str(b[0]), list(b[1])] for b in row["cpu_stores"]],
            "cpu_evicted": [f"{e[0]}#{e[1]}" for e in row["cpu_evicted"]],
            "cpu_blocks_used": row["cpu_blocks_used"],
            "cpu_blocks_ready": row["cpu_blocks_ready"]})
    return rec


def _assert_steps_are_the_cli_log(steps, log_path):
    cli_records = [json.loads(line) for line in log_path.read_text().splitlines()]
    assert len(steps) == len(cli_records)
    for (i, row), want in zip(steps.iterrows(), cli_records):
        assert _as_cli_record(row.to_dict()) == want, i


def test_steps_are_the_step_log_and_agree_with_the_requests(cli, tmp_path):
    sets = {**SMALL, "cache.attn_pack_size": 4}
    r = kvsim.run(set=sets, seeds=1, steps=True, progress=False)
    s, req = r.steps, r.requests
    # Record for record what `kvsim run --step-log` writes.
    cli("run", "--set", "workload.num_requests=80", "--set", "cache.attn_pack_size=4",
        "--seeds", "1", "--step-log", tmp_path / "steps.jsonl")
    _assert_steps_are_the_cli_log(s, tmp_path / "steps.jsonl")
    # One row per step the points table counts; a single engine numbers them 0..n-1, one at a
    # time: each step starts after it is decided and ends before the next one starts.
    assert len(s) == r.points["steps"][0] > 0
    assert list(s["step"]) == list(range(len(s)))
    assert (s["instance"] == "").all() and (s["point"] == 0).all() and (s["seed"] == 1).all()
    assert (s["t_start_ns"] < s["t_end_ns"]).all()
    assert (s["t_start_ns"].values[1:] >= s["t_end_ns"].values[:-1]).all()
    assert (s["num_scheduled_tokens"] == s["scheduled"].map(lambda cs: sum(c[1] for c in cs))).all()
    # Every finished request of requests.csv finishes in exactly one step.
    finished = s["finished"].explode().dropna()
    assert sorted(finished) == sorted(req.loc[req["status"] == "finished", "id"])
    assert s["num_finished"].sum() == r.points["finished"][0]
    # A request's chunk in the step that admits it carries its prefix hit: requests.csv's
    # cached_tokens, and that step's start is its first_scheduled_ms.
    chunks = s[["t_start_ms", "scheduled"]].explode("scheduled").dropna()
    admitted = chunks[chunks["scheduled"].map(lambda c: c[3] >= 0)]
    first = {c[0]: (c[3], t) for c, t in zip(admitted["scheduled"], admitted["t_start_ms"])}
    assert len(first) == len(req)
    for _, q in req.iterrows():
        hit, t = first[q["id"]]
        assert hit == q["cached_tokens"], q["id"]
        assert t == pytest.approx(q["first_scheduled_ms"], abs=1e-3), q["id"]
    # Tokens computed: a request without preemption computes its prompt less its hit once and
    # then one token per output after the first; a recompute only adds.
    fin = req[req["status"] == "finished"]
    work = int((fin["prompt_tokens"] - fin["cached_tokens"] + fin["output_tokens"] - 1).sum())
    assert s["num_scheduled_tokens"].sum() >= work
    if r.points["preemptions"][0] == 0:
        assert s["num_scheduled_tokens"].sum() == work


def test_pd_steps_carry_their_instance(cli, tmp_path):
    scenario = SOURCE_DIR / "scenarios" / "pd_nhd64_tp4_hnd16_tp2.yaml"
    r = kvsim.run(scenario, set={"workload.num_requests": 40}, steps=True, progress=False)
    cli("run", scenario, "--set", "workload.num_requests=40", "--step-log", tmp_path / "pd.jsonl")
    _assert_steps_are_the_cli_log(r.steps, tmp_path / "pd.jsonl")
    s, req = r.steps, r.requests
    # The scenario's two prefill and two decode instances; each numbers its own steps from 0
    # and runs them one after another.
    assert set(s["instance"]) == {"prefill 0", "prefill 1", "decode 0", "decode 1"}
    for name, rows in s.groupby("instance"):
        assert list(rows["step"]) == list(range(len(rows))), name
        assert (rows["t_start_ns"] < rows["t_end_ns"]).all(), name
        assert (rows["t_start_ns"].values[1:] >= rows["t_end_ns"].values[:-1]).all(), name
    # A request is admitted by the prefill instance requests.csv names, and finishes on the
    # decode instance it names.
    new = s[s["instance"].str.startswith("prefill")][["instance", "new"]].explode("new").dropna()
    prefill_of = {rid: int(inst.split()[1]) for inst, rid in zip(new["instance"], new["new"])}
    done = s[s["instance"].str.startswith("decode")][["instance", "finished"]]
    done = done.explode("finished").dropna()
    decode_of = {rid: int(inst.split()[1]) for inst, rid in zip(done["instance"], done["finished"])}
    fin = req[req["status"] == "finished"]
    assert len(fin) == len(decode_of) == r.points["finished"][0] > 0
    for _, q in fin.iterrows():
        assert prefill_of[q["id"]] == q["prefill_instance"]
        assert decode_of[q["id"]] == q["decode_instance"]


def test_steps_of_a_sweep_with_and_without_a_cpu_tier(cli, tmp_path):
    # A sweep that turns the CPU tier on at one point: that point's rows carry the tier's
    # fields, the other's are empty (NaN), and each point's rows are its own step log.
    sc = tmp_path / "tier.yaml"
    sc.write_text("name: tier\nmodel: {preset: llama-3.1-8b}\nworkload: {num_requests: 30}\n"
                  "cache: {kv_memory_bytes: 1GiB}\nsweep:\n  cache.offload.cpu_bytes: [0, 4GiB]\n")
    r = kvsim.run(sc, steps=True, progress=False)
    s = r.steps
    assert list(s.groupby("point").size()) == list(r.points["steps"])
    assert s.loc[s["point"] == 0, "cpu_blocks_used"].isna().all()
    tier = s[s["point"] == 1]
    assert tier["cpu_blocks_used"].notna().all()
    # Blocks are stored before any is evicted or counted: the stores add up to the blocks held.
    stored = sum(len(b[1]) for stores in tier["cpu_stores"] for b in stores)
    evicted = sum(len(e) for e in tier["cpu_evicted"])
    assert stored > 0 and tier["cpu_blocks_used"].iloc[-1] == stored - evicted
    cli("run", sc, "--step-log", tmp_path / "steps.jsonl")  # steps.0000.jsonl, steps.0001.jsonl
    for point in (0, 1):
        _assert_steps_are_the_cli_log(s[s["point"] == point].reset_index(drop=True),
                                      tmp_path / f"steps.{point:04d}.jsonl")


def test_layout_block_sizes_follow_the_pack_size():
    # The default scenario's own account: packing shrinks the block 1056 → 528 → 272 → 144.
    for pack, block in [(1, 1056), (2, 528), (4, 272), (8, 144)]:
        plan = kvsim.layout(set={"cache.attn_pack_size": pack})
        assert plan["attn_block_size"] == block
        assert plan["attn_pack_size"] == pack
    assert len(plan["groups"]) >= 2 and "page_bytes" in plan["groups"].columns
    assert "144" in plan["text"]


def test_errors_carry_the_cli_text(cli, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ncache:\n  block_sise: 16\n")
    p = cli("run", bad, check=False)
    with pytest.raises(kvsim.Error) as e:
        kvsim.Scenario.load(bad)
    assert p.returncode == 2
    assert p.stderr.strip() == f"kvsim: error: {e.value}"
    assert f"{bad}:3" in str(e.value) and "block_sise" in str(e.value)
    with pytest.raises(kvsim.Error, match="cache.block_sise"):
        kvsim.Scenario.load().set("cache.block_sise", 16)


def test_scenario_object_runs_with_its_overrides():
    sc = kvsim.Scenario.load().set("workload.num_requests", 80).set("cache.attn_pack_size", 8)
    r = kvsim.run(sc, seeds=2, progress=False)
    assert len(r.points) == 1 and r.points["attn_block_size"][0] == 144


def test_schedule_hand_worked_and_identical_to_the_cli(cli, tmp_path):
    # One 8-token request, max_tokens 2, budget 8192: step 0 prefills its 8 tokens and
    # samples token 1; step 1 decodes 1 token and it finishes. Blocks of 4, 9 usable (block
    # 0 is the null block): 2 in use after step 0 (7 free), 3 after step 1 (the 9th token
    # needs a third block: 6 free).
    reqs = [{"id": "a", "tokens": list(range(1, 9)), "max_tokens": 2}]
    df = kvsim.schedule(reqs, num_gpu_blocks=10, block_size=4)
    assert list(df["step"]) == [0, 1]
    assert list(df["num_scheduled_tokens"]) == [8, 1]
    assert list(df["num_finished"]) == [0, 1]
    assert list(df["num_free_blocks"]) == [7, 6]
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(reqs[0]) + "\n")
    kvsim.schedule(path, step_log=tmp_path / "py.jsonl", num_gpu_blocks=10, block_size=4)
    cli("schedule", path, "--num-gpu-blocks", "10", "--block-size", "4",
        "--step-log", tmp_path / "cli.jsonl")
    assert (tmp_path / "py.jsonl").read_bytes() == (tmp_path / "cli.jsonl").read_bytes()


TRACES = SOURCE_DIR / "scenarios" / "traces"
# kvsim.replay's options and the `kvsim replay` flags that say the same, one per form the
# command takes: capacities in blocks or tokens, Mooncake traces, hybrid groups, retention,
# semantics, concurrency, a model's or a scenario's plan (with the note that it replaces the
# block), a CPU tier from flags or from the scenario, the curve (one pass, and sampled for a
# hybrid layout), bad lines skipped, and no request served (exit 1).
REPLAY_FORMS = [
    ("sample_tokens.jsonl", dict(num_blocks=200), []),
    ("mooncake_conversation_head60.jsonl", dict(block_size=512, cache_tokens=200000), []),
    ("sample_tokens.jsonl", dict(num_blocks=300, hybrid="swa:128",
                                 prefix_cache_retention_interval="null"), []),
    ("sample_tokens.jsonl", dict(num_blocks=300, hybrid="mamba-all",
                                 prefix_cache_retention_interval=64), []),
    ("sample_tokens.jsonl", dict(num_blocks=300, hybrid="mamba-align",
                                 vllm_semantics="classic"), []),
    ("sample_tokens.jsonl", dict(num_blocks=150, concurrency=4), []),
    ("sample_tokens.jsonl", dict(num_blocks=3000, model="qwen3.5-35b-a3b"), []),
    ("sample_tokens.jsonl", dict(num_blocks=200, scenario=SOURCE_DIR / "scenarios" /
                                 "default.yaml"), []),
    ("sample_tokens.jsonl", dict(num_blocks=200, scenario=SOURCE_DIR / "scenarios" /
                                 "offload_block_size.yaml"), []),
    ("sample_tokens.jsonl", dict(num_blocks=200, num_cpu_blocks=500, offload_block_size=64,
                                 eviction_policy="arc", store_threshold=2), []),
    ("sample_tokens.jsonl", dict(curve=True), []),
    ("sample_tokens.jsonl", dict(curve=True, hybrid="swa:128", num_blocks=400), []),
    ("bad.jsonl", dict(num_blocks=10, skip_bad_lines=True), []),
    ("mooncake_conversation_head60.jsonl", dict(num_blocks=1), []),
]


def _replay_flags(options):
    args = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            args.append(flag)
        else:
            args += [flag, str(value)]
    return args


@pytest.mark.parametrize("trace,options,_", REPLAY_FORMS,
                         ids=[" ".join(_replay_flags(o)) for _, o, _ in REPLAY_FORMS])
def test_replay_is_the_cli_in_every_form(cli, tmp_path, trace, options, _):
    if trace == "bad.jsonl":
        path = tmp_path / trace
        path.write_text('{"tokens":[1,2,3]}\n{"tokens":[1,\n{"tokens":[4]}\n')
    else:
        path = TRACES / trace
    options = {"block_size": 16, **options}
    flags = _replay_flags(options)
    curve = options.get("curve", False)
    text = cli("replay", path, *flags, check=False)
    js = cli("replay", path, *flags, "--json",
             *([] if curve else ["--per-request", tmp_path / "cli.jsonl"]), check=False)
    r = kvsim.replay(path, per_request=False if curve else tmp_path / "py.jsonl", **options)
    # What the command prints, byte for byte (the curve's CSV too), its exit code and notes.
    assert r.text == text.stdout
    assert r.exit_code == text.returncode == js.returncode
    assert "".join(f"kvsim: note: {n}\n" for n in r.notes) + (
        f"kvsim: error: {r.warnings}\n" if r.warnings else "") == text.stderr
    want = json.loads(js.stdout)
    for speed in ("blocks_per_s", "blocks_per_cpu_s"):  # wall-clock figures
        assert (speed in r.summary) == (speed in want)
        r.summary.pop(speed, None), want.pop(speed, None)
    if curve:
        assert r.csv == text.stdout and r.requests is None
        assert r.curve.to_dict("records") == want.pop("curve")
        assert r.summary == want
        return
    assert r.summary == want
    assert (tmp_path / "py.jsonl").read_bytes() == (tmp_path / "cli.jsonl").read_bytes()
    # The per-request table adds up to the totals (served requests only).
    served = r.requests[r.requests["served"]]
    assert len(r.requests) == want["requests"] and len(served) == want["served"]
    assert served["prompt_tokens"].sum() == want["prompt_tokens"]
    assert served["hit_tokens"].sum() == want["hit_tokens"]
    if "cpu_hit_tokens" in want:
        assert served["cpu_hit_tokens"].sum() == want["cpu_hit_tokens"]


def test_replay_hand_worked(tmp_path):
    # Two 40-token prompts that share all their tokens, blocks of 16: the second hits the two
    # full blocks (32 tokens; the third block is partial and never cached).
    t = tmp_path / "two.jsonl"
    t.write_text("".join(json.dumps({"id": i, "tokens": list(range(40))}) + "\n" for i in "ab"))
    r = kvsim.replay(t, num_blocks=10, per_request=True)
    assert list(r.requests["hit_tokens"]) == [0, 32]
    assert r.summary["prompt_tokens"] == 80 and r.summary["hit_rate"] == pytest.approx(32 / 80)
    # A three-block cache (4 blocks, the null block one of them) holds one prompt: r1 evicts
    # r0, and r0 again hits nothing on the GPU but its two full blocks (32 tokens) in a CPU tier
    # of 8 blocks, where its prefill stored them.
    tiny = tmp_path / "tiny.jsonl"
    tiny.write_text("".join(json.dumps({"tokens": list(range(f, f + 40))}) + "\n"
                            for f in (0, 1000, 0)))
    r = kvsim.replay(tiny, num_blocks=4, num_cpu_blocks=8, per_request=True)
    assert list(r.requests["hit_tokens"]) == [0, 0, 0]
    assert list(r.requests["cpu_hit_tokens"]) == [0, 0, 32]
    assert r.summary["cpu_blocks_stored"] == 4  # r0's two full blocks, then r1's


def test_replay_errors_carry_the_cli_text(cli):
    trace = TRACES / "sample_tokens.jsonl"
    for options in (dict(),                                       # no capacity
                    dict(num_blocks=10, hybrid="swa:x"),
                    dict(num_blocks=10, cache_tokens=100),
                    dict(curve=True, num_cpu_blocks=8),
                    dict(num_blocks=200, store_threshold=2),
                    dict(num_blocks=300, hybrid="mamba-all", prefix_cache_retention_interval=-3)):
        options = {"block_size": 16, **options}
        p = cli("replay", trace, *_replay_flags(options), check=False)
        with pytest.raises(kvsim.Error) as e:
            kvsim.replay(trace, **options)
        assert p.returncode == 2
        assert p.stderr == f"kvsim: error: {e.value}\n", options
    with pytest.raises(kvsim.Error) as e:
        kvsim.replay(TRACES / "nonexistent.jsonl", num_blocks=10)
    assert "nonexistent.jsonl" in str(e.value)
    with pytest.raises(kvsim.Error, match="unknown option 'num_block'"):
        kvsim.replay(trace, num_block=10)


def test_run_releases_the_gil():
    # While the simulation runs on another thread, this one keeps running: no gap between its
    # iterations comes near the run's length (a held GIL would stop it for all of it).
    done = threading.Event()
    gaps, last = [], time.monotonic()

    def work():
        kvsim.run(progress=False)
        done.set()

    t0 = time.monotonic()
    threading.Thread(target=work).start()
    while not done.is_set():
        now = time.monotonic()
        gaps.append(now - last)
        last = now
        time.sleep(0.001)
    wall = time.monotonic() - t0
    assert wall > 0.2, "the run is too short to tell"
    assert max(gaps) < wall / 2
