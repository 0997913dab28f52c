"""Shared fixtures: the kvsim CLI (KVSIM_BIN, set by ctest) to compare the module against,
and a small version of the default study that runs in seconds."""
import os
import pathlib
import subprocess

import pytest

SOURCE_DIR = pathlib.Path(os.environ.get("KVSIM_SOURCE_DIR",
                                         pathlib.Path(__file__).resolve().parents[2]))
# The default study (4 pack sizes) with 80 requests instead of 1000.
SMALL = {"workload.num_requests": 80}
SMALL_SETS = ["--set", "workload.num_requests=80"]


@pytest.fixture(scope="session")
def kvsim_bin():
    path = os.environ.get("KVSIM_BIN")
    assert path and os.access(path, os.X_OK), "KVSIM_BIN must name the built kvsim CLI"
    return path


@pytest.fixture(scope="session")
def cli(kvsim_bin):
    def call(*args, check=True):
        p = subprocess.run([kvsim_bin, *map(str, args)], capture_output=True, text=True)
        if check:
            assert p.returncode == 0, p.stderr
        return p
    return call
