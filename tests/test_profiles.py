"""The SLURM and local-GPU profiles, as Snakemake and the SLURM executor read them.

The sbatch lines are rendered by the executor plugin's own functions
(``get_submit_command`` and ``set_gres_string``) from each job's resources and threads as
the dry run prints them.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from test_workflow import snakemake

REPO = Path(__file__).resolve().parents[1]
GPU_RULES = {
    "encode", "rerank_train", "rerank", "mdcr_score_dense", "mdcr_score_rerank",
    "train_encoder", "encode_local_queries", "local_rerank_train", "local_rerank",
    "local_rerank_oracle",
}  # fmt: skip


class Resources(dict):
    """What the plugin reads from ``job.resources``: ``.get`` and attributes."""

    __getattr__ = dict.get


def dry_run_jobs(stdout: str) -> dict[str, SimpleNamespace]:
    """The first job of every rule in a dry run: its resources and threads."""
    jobs: dict[str, SimpleNamespace] = {}
    current = None
    for line in stdout.splitlines():
        stripped = line.strip()
        if line.startswith(("rule ", "localrule ", "checkpoint ")) and line.endswith(":"):
            name = line.split()[1].rstrip(":")
            current = None if name in jobs else SimpleNamespace(name=name, threads=1)
            if current is not None:
                jobs[name] = current
        elif current is not None and stripped.startswith("threads:"):
            current.threads = int(stripped.split(":")[1])
        elif current is not None and stripped.startswith("resources:"):
            values = {}
            for item in stripped.removeprefix("resources:").split(","):
                key, _, value = item.strip().partition("=")
                values[key] = int(value) if value.isdigit() else value
            current.resources = Resources(values)
    return jobs


def sbatch(job: SimpleNamespace) -> str:
    from snakemake_executor_plugin_slurm.submit_string import get_submit_command
    from snakemake_executor_plugin_slurm.utils import set_gres_string

    params = {
        "run_uuid": "run", "slurm_logfile": "log", "comment_str": job.name, "account": "",
        "partition": f"-p {job.resources['slurm_partition']}", "workdir": "",
    }  # fmt: skip
    return get_submit_command(job, params) + set_gres_string(job)


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> Path:
    """A working directory where nothing has run: the dry run still plans every job."""
    workdir = tmp_path_factory.mktemp("profiles")
    (workdir / "config").symlink_to(REPO / "config")
    (workdir / "profiles").symlink_to(REPO / "profiles")
    return workdir


def test_slurm_renders_the_merge_encode_bm25_and_rerank_jobs(fresh):
    result = snakemake(fresh, "--profile", "profiles/slurm", "-n")
    assert result.returncode == 0, result.stderr[-3000:]
    jobs = dry_run_jobs(result.stdout)
    merge = sbatch(jobs["ingest_merge"])
    assert " -p cpu" in merge and " --mem 32000" in merge and " -t 720" in merge
    assert "--cpus-per-task=8" in merge and "--gpus" not in merge
    expected = {
        "encode": (" -p gpu", " --mem 32000", " -t 480", "--cpus-per-task=8", " --gpus=1"),
        "bm25_analyze": (" -p cpu", " --mem 32000", " -t 720", "--cpus-per-task=8"),
        "bm25_index": (" -p cpu", " --mem 16000", " -t 120", "--cpus-per-task=2"),
        "rerank": (" -p gpu", " --mem 16000", " -t 240", "--cpus-per-task=8", " --gpus=1"),
        "train_encoder": (" -p gpu", " --mem 32000", " -t 1440", " --gpus=1"),
    }
    for rule, parts in expected.items():
        line = sbatch(jobs[rule])
        assert all(part in line for part in parts), (rule, line)
    for rule, job in jobs.items():
        assert (job.resources.get("gpu") == 1) == (rule in GPU_RULES), rule
        assert "mem_mb" in job.resources and "runtime" in job.resources, rule


def test_local_gpu_profile_gives_every_gpu_job_the_one_gpu(fresh):
    profile = yaml.safe_load((REPO / "profiles" / "local-gpu" / "config.yaml").read_text())
    assert profile["resources"] == {"gpu": 1}
    assert set(profile["set-resources"]) == GPU_RULES
    slurm = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())
    assert {
        rule for rule, values in slurm["set-resources"].items() if values.get("gpu")
    } == GPU_RULES

    result = snakemake(fresh, "--profile", "profiles/local-gpu", "-n")
    assert result.returncode == 0, result.stderr[-3000:]
    jobs = dry_run_jobs(result.stdout)
    assert set(jobs) >= GPU_RULES - {"local_rerank_oracle"}  # the oracle is off by default
    for rule, job in jobs.items():
        assert (job.resources.get("gpu") == 1) == (rule in GPU_RULES), rule
