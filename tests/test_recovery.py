"""End to end: a run killed hard recovers, and the same config and seed give the same bytes.

The smallest config that still runs a model (tests/pipeline_runs.py) is run twice: once
uninterrupted, and once killed with its jobs (SIGKILL, as a node failure would) while the
first jobs after the prefilter run, then recovered with the README's two steps,
``snakemake --unlock`` and a rerun with ``--rerun-incomplete``. The two give byte-identical
corpora, samples, embeddings, runs, metrics and tables. A trained model's resumption and
bytes are the trainers' tests' (tests/test_rerank_train.py, tests/test_train_fit.py).
"""

from __future__ import annotations

import filecmp
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from pipeline_runs import prepare, small_config, snakemake, snakemake_command

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, tiny_bert_dir) -> Path:
    config = small_config(tiny_bert_dir)
    workdir = prepare(tmp_path_factory.mktemp("recovery") / "first", config)
    result = snakemake(workdir)
    assert result.returncode == 0, result.stderr[-6000:]
    return workdir


@pytest.fixture(scope="module")
def killed_run(tmp_path_factory, tiny_bert_dir) -> dict:
    """The same config killed with its jobs once the prefilter's output appears, then rerun
    plainly, unlocked and rerun with ``--rerun-incomplete``."""
    config = small_config(tiny_bert_dir)
    workdir = prepare(tmp_path_factory.mktemp("recovery") / "killed", config)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    process = subprocess.Popen(
        snakemake_command(workdir), env=env, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    marker = workdir / "results" / "e2e" / "filtered" / "papers.parquet"
    deadline = time.monotonic() + 600
    while not marker.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process.poll() is None, "the run ended before it could be killed"
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=60)
    plain = snakemake(workdir)
    unlocked = snakemake(workdir, "--unlock")
    recovered = snakemake(workdir, "--rerun-incomplete")
    return {"workdir": workdir, "plain": plain, "unlocked": unlocked, "recovered": recovered}


def test_a_hard_killed_run_recovers_with_unlock_and_rerun(killed_run):
    # A plain rerun stops (on the lock or on the killed jobs' incomplete outputs) and says
    # which flag it needs.
    plain = killed_run["plain"]
    said = plain.stdout + plain.stderr
    assert plain.returncode != 0 and ("--unlock" in said or "--rerun-incomplete" in said)
    assert killed_run["unlocked"].returncode == 0, killed_run["unlocked"].stderr[-3000:]
    assert killed_run["recovered"].returncode == 0, killed_run["recovered"].stderr[-6000:]


def test_two_runs_are_byte_identical(uninterrupted, killed_run):
    assert killed_run["recovered"].returncode == 0, "see the hard-kill test"
    first, second = (
        workdir / "results" / "e2e" for workdir in (uninterrupted, killed_run["workdir"])
    )
    compared = 0
    for sub in ("corpus", "filtered", "samples", "runs", "metrics", "tables", "embeddings"):
        for path in sorted((first / sub).rglob("*")):
            if path.is_file():
                twin = second / path.relative_to(first)
                assert filecmp.cmp(path, twin, shallow=False), f"{path} differs"
                compared += 1
    assert compared > 20
