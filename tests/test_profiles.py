"""The SLURM and local-GPU profiles, as Snakemake and the SLURM executor read them.

The sbatch lines are rendered by the executor plugin's own functions
(``get_submit_command`` and ``set_gres_string``) from each job's resources and threads as
the dry run prints them.
"""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from test_workflow import snakemake

from citeval.jobs import NEEDS

REPO = Path(__file__).resolve().parents[1]
GPU_RULES = {rule for rule, need in NEEDS.items() if need.model}


class Resources(dict):
    """What the plugin reads from ``job.resources``: ``.get`` and attributes."""

    __getattr__ = dict.get


def dry_run_jobs(stdout: str) -> dict[str, SimpleNamespace]:
    """The first job of every rule in a dry run: its resources and threads."""
    jobs: dict[str, SimpleNamespace] = {}
    current = None
    for line in stdout.splitlines():
        stripped = line.strip()
        # Jobs of a job group are listed indented under it.
        if stripped.startswith(("rule ", "localrule ", "checkpoint ")) and stripped.endswith(":"):
            name = stripped.split()[1].rstrip(":")
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
    """The job's sbatch line, its partition chosen by the plugin from the profile's file."""
    from snakemake_executor_plugin_slurm.partitions import get_best_partition, read_partition_file
    from snakemake_executor_plugin_slurm.submit_string import get_submit_command
    from snakemake_executor_plugin_slurm.utils import set_gres_string

    partitions = read_partition_file(REPO / "profiles" / "slurm" / "partitions.yaml")
    partition = get_best_partition(partitions, job, logging.getLogger("profiles-test"))
    params = {
        "run_uuid": "run", "slurm_logfile": "log", "comment_str": job.name, "account": "",
        "partition": f"-p {partition}", "workdir": "",
    }  # fmt: skip
    return get_submit_command(job, params) + set_gres_string(job)


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> Path:
    """A working directory where nothing has run: the dry run still plans every job."""
    workdir = tmp_path_factory.mktemp("profiles")
    (workdir / "config").symlink_to(REPO / "config")
    (workdir / "profiles").symlink_to(REPO / "profiles")
    return workdir


def test_slurm_requests_follow_from_the_config_and_go_to_the_partition_that_holds_them(fresh):
    # A dry run schedules like a local run, capping threads at --cores (1 by default);
    # submitted to SLURM they are not capped.
    result = snakemake(fresh, "--profile", "profiles/slurm", "-n", "--cores", "64")
    assert result.returncode == 0, result.stderr[-3000:]
    jobs = dry_run_jobs(result.stdout)
    # The demo: jobs.threads 2, jobs.memory_limit 2GB (so the merge asks 1000 + 1.5 x 2000).
    expected = {
        "ingest_merge": (" -p cpu", " --mem 4000", " -t 720", "--cpus-per-task=2"),
        "bm25_analyze": (" -p cpu", " --mem 4000", " -t 720", "--cpus-per-task=2"),
        "bm25_index": (" -p cpu", " --mem 4000", " -t 120", "--cpus-per-task=1"),
        "metrics": (" -p cpu", " --mem 1000", " -t 10", "--cpus-per-task=1"),
        "encode": (" -p gpu", " --mem 8000", " -t 480", "--cpus-per-task=2", " --gpus=1"),
        "rerank": (" -p gpu", " --mem 8000", " -t 240", "--cpus-per-task=2", " --gpus=1"),
        "train_encoder": (" -p gpu", " --mem 8000", " -t 1440", " --gpus=1"),
    }
    for rule, parts in expected.items():
        line = sbatch(jobs[rule])
        assert all(part in line for part in parts), (rule, line)
    assert "--gpus" not in sbatch(jobs["ingest_merge"])
    del jobs["all"]  # the target: nothing to submit
    for rule, job in jobs.items():
        assert (job.resources.get("gpu") == 1) == (rule in GPU_RULES), rule
        assert job.threads == (2 if NEEDS[rule].threaded else 1), rule
        assert "mem_mb" in job.resources and "runtime" in job.resources, rule
    # The dense retrieval's memory grows with its input: known once the input exists.
    assert jobs["dense_retrieve"].resources["mem_mb"] == "<TBD>"


def test_without_gpus_model_jobs_go_to_cpu_partitions(fresh, tmp_path):
    no_gpus = tmp_path / "no-gpus.yaml"
    no_gpus.write_text("jobs: {gpu: false, threads: 4}\n")
    result = snakemake(
        fresh,
        "--configfile",
        "config/config.yaml",
        str(no_gpus),
        "--profile",
        "profiles/slurm",
        "-n",
        "--cores",
        "64",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    jobs = dry_run_jobs(result.stdout)
    assert not any(job.resources.get("gpu") for job in jobs.values())
    line = sbatch(jobs["encode"])
    assert " -p cpu" in line and "--gpus" not in line and "--cpus-per-task=4" in line


def test_local_gpu_profile_gives_every_gpu_job_the_one_gpu(fresh):
    profile = yaml.safe_load((REPO / "profiles" / "local-gpu" / "config.yaml").read_text())
    assert profile["resources"] == {"gpu": 1}
    result = snakemake(fresh, "--profile", "profiles/local-gpu", "-n")
    assert result.returncode == 0, result.stderr[-3000:]
    jobs = dry_run_jobs(result.stdout)
    # The oracle is off by default; queries are embedded apart only where prompts differ.
    assert set(jobs) >= GPU_RULES - {"local_rerank_oracle", "encode_query_papers"}
    for rule, job in jobs.items():
        assert (job.resources.get("gpu") == 1) == (rule in GPU_RULES), rule


def group_jobs(stdout: str) -> list[tuple[str, list[str]]]:
    """Each group job of a dry run: its group and the rules of its jobs."""
    groups: list[tuple[str, list[str]]] = []
    for line in stdout.splitlines():
        stripped = line.strip()
        if "] Group job " in line:
            groups.append((line.split("] Group job ")[1].split()[0], []))
        elif groups and line.startswith("    rule ") and stripped.endswith(":"):
            groups[-1][1].append(stripped.split()[1].rstrip(":"))
    return groups


def test_each_collection_chain_goes_to_slurm_as_one_job(fresh):
    result = snakemake(fresh, "--profile", "profiles/slurm", "-n", "--cores", "64")
    assert result.returncode == 0, result.stderr[-3000:]
    groups = group_jobs(result.stdout)
    bm25 = [sorted(rules) for name, rules in groups if name == "bm25-collection"]
    dense = [sorted(rules) for name, rules in groups if name == "dense-collection"]
    # Collections whose run only feeds another job (the reranker's training) have no metrics.
    assert ["bm25_index", "bm25_search", "metrics"] in bm25
    assert all(
        rules in (["bm25_index", "bm25_search", "metrics"], ["bm25_index", "bm25_search"])
        for rules in bm25
    )
    assert ["dense_retrieve", "metrics"] in dense
    assert all(rules in (["dense_retrieve", "metrics"], ["dense_retrieve"]) for rules in dense)
    assert {name for name, _ in groups} == {"bm25-collection", "dense-collection"}
    # One chain per collection (and encoder): as many as the collections' BM25 searches.
    stats = result.stdout.split("Job stats:")[1]
    searches = int(
        next(line.split()[1] for line in stats.splitlines() if line.startswith("bm25_search "))
    )
    assert len(bm25) == searches
