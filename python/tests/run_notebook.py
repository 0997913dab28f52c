"""Runs docs/notebooks/attention_pack_study.ipynb headless (nbclient) on a small study and
checks its figures' data against kvsim.run: the notebook prints the plotted arrays as
"FIGURE_DATA {json}"; they must equal a fresh run of the same scenario and seeds (the
simulator is deterministic), the hit rate must rise with the pack size, every interval must
be finite, and the page map must show the default scenario's block sizes.
Usage: run_notebook.py NOTEBOOK OUT_DIR"""
import json
import math
import os
import pathlib
import sys

import nbformat
from nbclient import NotebookClient

import kvsim


def main(notebook, out_dir):
    os.environ.setdefault("KVSIM_STUDY_REQUESTS", "200")
    os.environ.setdefault("KVSIM_STUDY_SEEDS", "3")
    nb = nbformat.read(notebook, as_version=4)
    root = pathlib.Path(notebook).resolve().parents[2]
    NotebookClient(nb, timeout=1200, kernel_name="python3",
                   resources={"metadata": {"path": str(root)}}).execute()
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, out / "attention_pack_study.ipynb")

    data = None
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            for line in o.get("text", "").splitlines():
                if line.startswith("FIGURE_DATA "):
                    data = json.loads(line[len("FIGURE_DATA "):])
    assert data is not None, "the notebook printed no FIGURE_DATA line"
    images = sum(1 for c in nb.cells for o in c.get("outputs", [])
                 if "image/png" in o.get("data", {}))
    assert images == 3, f"expected 3 figures, found {images}"

    assert data["pack_size"] == [1, 2, 4, 8]
    hit = data["hit_rate"]
    # By hand: the 2000-token system prompt is cached in whole blocks of B tokens, so a
    # request hits floor(2000 / B) · B of its ~2060 prompt tokens (60 its own, on average):
    # B = 1056, 528, 272, 144 → 0.513, 0.769, 0.924, 0.909. It rises to pack 4 and falls at
    # pack 8 (13 · 144 = 1872 < 7 · 272 = 1904); the first request of a run hits nothing.
    want = [(2000 // b) * b / 2060 for b in (1056, 528, 272, 144)]
    assert all(abs(h - w) < 0.02 for h, w in zip(hit, want)), (hit, want)
    assert hit[0] < hit[1] < hit[2] and hit[3] < hit[2], hit
    for key in ("hit_rate_ci95", "ttft_ms_ci95", "ttft_ms", "hit_rate"):
        assert all(math.isfinite(v) and v >= 0 for v in data[key]), (key, data[key])

    ref = kvsim.run(set=data["overrides"], seeds=data["seeds"], progress=False).points
    assert ref["prefix_hit_rate"].tolist() == hit
    assert ref["prefix_hit_rate.ci95"].tolist() == data["hit_rate_ci95"]
    assert ref["ttft_mean_ms"].tolist() == data["ttft_ms"]
    assert ref["ttft_mean_ms.ci95"].tolist() == data["ttft_ms_ci95"]

    # The scenario's own account of the blocks (scenarios/default.yaml).
    blocks = {int(k): v["block_size"] for k, v in data["page_map"].items()}
    assert blocks == {1: 1056, 2: 528, 4: 272, 8: 144}, blocks
    for v in data["page_map"].values():
        assert 0 < v["real_page_bytes"] <= v["page_bytes"]

    for pack, s in data["steps"].items():
        one = kvsim.run(set={**data["overrides"], "cache.attn_pack_size": int(pack)}, seeds=1,
                        progress=False).points
        assert s["finished"] == int(one["finished"][0]) and s["steps"] == int(one["steps"][0])
    print("notebook: ok", json.dumps({"hit_rate": hit}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
