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


def test_requests_and_steps_agree_with_the_points():
    r = kvsim.run(set={**SMALL, "cache.attn_pack_size": 4}, seeds=1, steps=True, progress=False)
    finished = int(r.points["finished"][0])
    assert (r.requests["status"] == "finished").sum() == finished
    assert r.steps["num_finished"].sum() == finished
    assert len(r.steps) == r.points["steps"][0]
    assert (r.steps["t_end_ms"] >= r.steps["t_start_ms"]).all()


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


def test_replay_matches_the_cli(cli):
    trace = SOURCE_DIR / "scenarios" / "traces" / "sample_tokens.jsonl"
    p = cli("replay", trace, "--num-blocks", "64", "--block-size", "16", "--json")
    want = json.loads(p.stdout)
    got = kvsim.replay(trace, num_blocks=64, block_size=16, per_request=True)
    assert got["hit_tokens"] == want["hit_tokens"]
    assert got["prompt_tokens"] == want["prompt_tokens"]
    assert got["requests"]["hit_tokens"].sum() == want["hit_tokens"]


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
