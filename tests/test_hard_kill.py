"""A local run killed hard (SIGKILL, as a node failure would) recovers with the README's
two steps, ``snakemake --unlock`` and a rerun with ``--rerun-incomplete``, and ends with
the results of an uninterrupted run, byte for byte. A plain rerun stops instead: on the
killed run's lock, or (Snakemake 9 here) on the outputs of the jobs killed mid-way."""

from __future__ import annotations

import filecmp
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from test_pipeline import prepare
from test_slurm import run, small_config, snakemake_command

pytestmark = pytest.mark.slow
# Compared between the two runs: everything but files that record time.
RESULTS = ("corpus", "filtered", "samples", "runs", "metrics", "tables", "embeddings")


def test_a_hard_killed_run_recovers_with_unlock_and_rerun(tmp_path: Path, tiny_bert_dir) -> None:
    config = small_config(tiny_bert_dir)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    reference = prepare(tmp_path / "reference", config)
    killed = prepare(tmp_path / "killed", config)
    command = ["--configfile", "config.yaml", "--cores", "2"]
    done = run(snakemake_command(reference, *command), reference, env)
    assert done.returncode == 0, done.stderr[-6000:]

    # Killed with its jobs while the first jobs after the prefilter run.
    process = subprocess.Popen(
        snakemake_command(killed, *command), cwd=killed, env=env, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    marker = killed / "results" / "e2e" / "filtered" / "papers.parquet"
    deadline = time.monotonic() + 600
    while not marker.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert process.poll() is None, "the run ended before it could be killed"
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=60)

    # A plain rerun stops (on the lock or on the killed jobs' incomplete outputs) and says
    # which flag it needs.
    again = run(snakemake_command(killed, *command), killed, env)
    said = again.stdout + again.stderr
    assert again.returncode != 0 and ("--unlock" in said or "--rerun-incomplete" in said)
    unlocked = run(snakemake_command(killed, *command, "--unlock"), killed, env)
    assert unlocked.returncode == 0, unlocked.stderr[-3000:]
    recovered = run(snakemake_command(killed, *command, "--rerun-incomplete"), killed, env)
    assert recovered.returncode == 0, recovered.stderr[-6000:]

    compared = 0
    for sub in RESULTS:
        for path in sorted((reference / "results" / "e2e" / sub).rglob("*")):
            if path.is_file() and not path.name.startswith("."):
                twin = killed / path.relative_to(reference)
                assert filecmp.cmp(path, twin, shallow=False), path
                compared += 1
    assert compared > 20
