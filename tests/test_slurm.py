"""The pipeline through a real SLURM scheduler (tests/slurm/cluster.sh: one node, slurmdbd).

A small config runs through ``profiles/slurm`` with the executor plugin and the node's
facts in the profile's partitions file: every job goes through ``sbatch`` (``sacct``
lists it), GPU rules land on the ``gpu`` partition with ``--gpus=1`` and run on the CPU
inside the job, each collection's chain is one job, the results equal a local run of the
same config byte for byte, and a second run has nothing to do. A small workflow then
checks how jobs end badly: cancelled while running (``CANCELLED by 0``), past their time
(``TIMEOUT``), past their memory (killed by SLURM), preempted by a higher-tier partition
(``PREEMPTED``) and exiting non-zero all fail and are retried per the profile's
``retries``, a rerun recovers, and a job no partition holds is refused before submission.

Needs root (CI runs as root); the cluster script installs SLURM with apt-get when missing."""

from __future__ import annotations

import filecmp
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from pipeline_runs import REPO, prepare, small_config

pytestmark = pytest.mark.slow
CLUSTER = REPO / "tests" / "slurm" / "cluster.sh"
# Seconds between the plugin's status checks (its default, 40, is for busy clusters).
STATUS_SECONDS = 2


def node_facts(env: dict) -> dict[str, int]:
    """The test node's CPUs and memory, as SLURM reports them."""
    line = subprocess.run(
        ["scontrol", "show", "node", "-o"], capture_output=True, text=True, env=env, check=True
    ).stdout
    fields = dict(item.split("=", 1) for item in line.split() if "=" in item)
    return {"cpus": int(fields["CPUTot"]), "mem_mb": int(fields["RealMemory"])}


def slurm_profile(directory: Path, env: dict) -> Path:
    """profiles/slurm with the test node's partitions: the shipped profile's settings, the
    node's facts in partitions.yaml, and status checks every few seconds."""
    profile = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())
    profile.update({"jobs": 4, "latency-wait": 5})
    profile["slurm-init-seconds-before-status-checks"] = STATUS_SECONDS
    node = node_facts(env)
    limits = {"max_threads": node["cpus"], "max_mem_mb": node["mem_mb"]}
    partitions = {"cpu": limits, "gpu": {**limits, "max_gpu": 1}}
    directory.mkdir(parents=True)
    (directory / "config.yaml").write_text(yaml.safe_dump(profile))
    (directory / "partitions.yaml").write_text(yaml.safe_dump({"partitions": partitions}))
    return directory


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.fail("the SLURM test starts SLURM's daemons: run the tests as root, as CI does")
    # Outside pytest's private temporary folder: munge and MariaDB run as their own users.
    state = Path(tempfile.mkdtemp(prefix="citeval-slurm-"))
    state.chmod(0o755)
    started = subprocess.run(
        ["bash", str(CLUSTER), "start", str(state)], capture_output=True, text=True, check=False
    )
    try:
        assert started.returncode == 0, started.stderr[-4000:]
        env = {**os.environ, "SLURM_CONF": str(state / "slurm.conf"), "HF_HUB_OFFLINE": "1"}
        yield env
    finally:
        subprocess.run(["bash", str(CLUSTER), "stop", str(state)], check=False)
        shutil.rmtree(state, ignore_errors=True)


def run(command: list[str], workdir: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        command, cwd=workdir, capture_output=True, text=True, env=env, check=False, timeout=900
    )


def snakemake_command(workdir: Path, *args: str, snakefile: Path = REPO / "Snakefile") -> list:
    return [
        sys.executable, "-m", "snakemake", "--snakefile", str(snakefile),
        "--directory", str(workdir), *args,
    ]  # fmt: skip


SACCT_FIELDS = ("JobIdRaw", "Comment", "Partition", "State", "AllocTRES")


def sacct_jobs(env: dict) -> dict[str, dict[str, str]]:
    """Every job the scheduler has accounted for: job id -> sacct's fields."""
    out = subprocess.run(
        ["sacct", "-X", "--parsable2", "--noheader", f"--format={','.join(SACCT_FIELDS)}",
         "--starttime", "now-1day"],
        capture_output=True, text=True, env=env, check=True,
    ).stdout  # fmt: skip
    rows = [dict(zip(SACCT_FIELDS, line.split("|"), strict=True)) for line in out.splitlines()]
    return {row["JobIdRaw"]: row for row in rows}


def failures_workflow(root: Path, env: dict) -> tuple[Path, Callable[..., list[str]]]:
    """A workflow of jobs that end badly, and the profile command that runs its targets."""
    workdir = root / "failures"
    workdir.mkdir(parents=True)
    snakefile = workdir / "Snakefile"
    snakefile.write_text(FAILURES_SNAKEFILE.format(package=str(REPO / "workflow")))
    profile = slurm_profile(root / "failures-profile", env)

    def command(*targets: str) -> list[str]:
        return snakemake_command(workdir, "--profile", str(profile), *targets, snakefile=snakefile)

    return workdir, command


def cancel_once_running(workdir: Path, env: dict, rule: str, process: subprocess.Popen) -> str:
    """Cancel ``rule``'s first attempt once it runs, as an administrator would; its job id."""
    wait_for(workdir / f"{rule}.started", process)
    job = squeue_job(env, rule)
    subprocess.run(["scancel", job], env=env, check=True)
    return job


@pytest.fixture(scope="module")
def slurm_and_local(cluster, tmp_path_factory, tiny_bert_dir):
    """The pipeline through SLURM and locally, and beside them the workflow of failing jobs
    (they mostly sleep, so the three share the node)."""
    root = tmp_path_factory.mktemp("slurm-run")
    failures, failures_command = failures_workflow(root, cluster)
    (failures / "fail.flag").touch()
    failing = subprocess.Popen(
        failures_command(), cwd=failures, env=cluster,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    cancelled: list[str] = []
    canceller = threading.Thread(
        target=lambda: cancelled.append(cancel_once_running(failures, cluster, "slow", failing))
    )
    canceller.start()
    profile = slurm_profile(root / "profile", cluster)
    config = small_config(tiny_bert_dir)
    on_slurm = prepare(root / "slurm", config)
    local = prepare(root / "local", config)
    # The local run uses the CPU time the SLURM run spends waiting on the scheduler.
    local_log = (root / "local.log").open("w")
    local_run = subprocess.Popen(
        snakemake_command(local, "--configfile", "config.yaml", "--cores", "1"),
        cwd=local, env=cluster, stdout=local_log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    result = run(
        snakemake_command(on_slurm, "--configfile", "config.yaml", "--profile", str(profile)),
        on_slurm,
        cluster,
    )
    local_run.wait(timeout=900)
    local_log.close()
    try:
        _, failing_stderr = failing.communicate(timeout=400)
    finally:
        failing.kill()  # a hung workflow (the plugin missing a job's end) ends here
    canceller.join(timeout=10)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    assert local_run.returncode == 0, (root / "local.log").read_text()[-6000:]
    log = result.stdout + result.stderr
    return {
        "slurm": on_slurm, "local": local, "log": log, "profile": profile,
        "failures": (failures, failures_command, failing.returncode, failing_stderr, cancelled),
    }  # fmt: skip


def test_every_job_went_through_sbatch(slurm_and_local, cluster):
    submitted = set(re.findall(r"submitted with SLURM jobid (\d+)", slurm_and_local["log"]))
    assert len(submitted) >= 10
    accounted = sacct_jobs(cluster)
    assert submitted <= set(accounted)
    assert all(accounted[job]["State"] == "COMPLETED" for job in submitted)
    # The encoder is a GPU rule: the gpu partition gave it the node's one GPU.
    [encode] = [job for job in submitted if accounted[job]["Comment"].startswith("rule_encode_")]
    assert accounted[encode]["Partition"] == "gpu"
    assert "gres/gpu=1" in accounted[encode]["AllocTRES"]
    # Each collection's chains went as one job each: BM25's index, search and metrics,
    # and the encoder's retrieval and metrics.
    comments = [accounted[job]["Comment"] for job in submitted]
    assert (
        sum(c.startswith("rule_bm25-collection_bm25_index_bm25_search_metrics") for c in comments)
        == 1
    )
    assert sum(c.startswith("rule_dense-collection_dense_retrieve_metrics") for c in comments) == 1
    assert not any(c.startswith(("rule_bm25_search", "rule_metrics")) for c in comments)


def test_results_equal_a_local_run_and_a_rerun_has_nothing_to_do(slurm_and_local, cluster):
    first = slurm_and_local["slurm"] / "results" / "e2e"
    second = slurm_and_local["local"] / "results" / "e2e"
    compared = 0
    for sub in ("corpus", "filtered", "samples", "runs", "metrics", "tables", "embeddings"):
        for path in sorted((first / sub).rglob("*")):
            if path.is_file() and not path.name.startswith("."):
                assert filecmp.cmp(path, second / path.relative_to(first), shallow=False), path
                compared += 1
    assert compared > 20
    workdir = slurm_and_local["slurm"]
    again = run(
        snakemake_command(
            workdir,
            "-n",
            "--configfile",
            "config.yaml",
            "--profile",
            str(slurm_and_local["profile"]),
        ),
        workdir,
        cluster,
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert "Nothing to be done" in again.stdout + again.stderr


FAILURES_SNAKEFILE = """
import sys
sys.path.insert(0, {package!r})
from citeval.slurm import install
install()

rule all:
    input: "slow.done", "flaky.done", "overtime.done", "hungry.done"

rule slow:
    output: "slow.done"
    resources: runtime=5, mem_mb=500
    shell: "echo started > slow.started; sleep 10; touch {{output}}"

rule flaky:
    output: "flaky.done"
    resources: runtime=5, mem_mb=500
    shell: "if [ -e fail.flag ]; then echo failing >&2; exit 3; fi; touch {{output}}"

# The first attempt passes its one-minute limit (TIMEOUT); the retry gets two.
rule overtime:
    output: "overtime.done"
    resources: runtime=lambda wildcards, attempt: attempt, mem_mb=500
    shell: "if [ {{resources.runtime}} -eq 1 ]; then sleep 300; fi; touch {{output}}"

# The first attempt holds 600 MB in a 400 MB job (killed by SLURM); the retry holds none.
rule hungry:
    output: "hungry.done"
    resources: runtime=5, mem_mb=lambda wildcards, attempt: 400 * attempt
    shell:
        "if [ {{resources.mem_mb}} -eq 400 ]; then "
        "python -c 'import time; x = bytearray(600 * 2**20); x[::4096] = bytes(len(x[::4096])); "
        "time.sleep(30)'; fi; touch {{output}}"

# The first attempt runs until it is preempted; the retry finishes at once.
rule victim:
    output: "victim.done"
    resources:
        runtime=lambda wildcards, attempt: 4 + attempt, mem_mb=500, slurm_partition="preemptible"
    shell:
        "if [ {{resources.runtime}} -eq 5 ]; then echo started > victim.started; sleep 300; fi; "
        "touch {{output}}"

rule huge:
    output: "huge.done"
    resources: runtime=5, mem_mb=10**8
    shell: "touch {{output}}"
"""


def squeue_job(env: dict, rule: str, state: str = "RUNNING") -> str:
    """The SLURM job id of ``rule``'s job in ``state``."""
    queue = subprocess.run(
        ["squeue", "-h", "-o", "%i|%k|%T"], capture_output=True, text=True, env=env, check=True
    ).stdout
    [job] = [
        job
        for job, comment, job_state in (line.split("|") for line in queue.splitlines())
        if comment == f"rule_{rule}" and job_state == state
    ]
    return job


def wait_for(path: Path, process: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline and process.poll() is None, f"{path.name} never appeared"
        time.sleep(0.5)


@pytest.fixture
def failures(cluster, tmp_path):
    return failures_workflow(tmp_path, cluster)


def test_cancelled_timed_out_oom_and_failing_jobs_fail_are_retried_and_recover(
    slurm_and_local, cluster
):
    workdir, command, returncode, stderr, cancelled = slurm_and_local["failures"]
    # Snakemake saw each end: the cancelled, timed-out and killed jobs failed, were
    # resubmitted and then finished; flaky failed twice (first try and retry), so the
    # workflow failed cleanly.
    [slow] = cancelled
    assert returncode != 0
    assert f"SLURM-job '{slow}' failed, SLURM status is: 'CANCELLED'" in stderr
    assert "SLURM status is: 'TIMEOUT'" in stderr
    for name in ("slow", "overtime", "hungry"):
        assert (workdir / f"{name}.done").exists(), name
    assert "Error in rule flaky" in stderr
    jobs = sacct_jobs(cluster)
    states = {
        rule: [row["State"] for row in jobs.values() if row["Comment"] == f"rule_{rule}"]
        for rule in ("slow", "flaky", "overtime", "hungry")
    }
    assert states == {
        "slow": ["CANCELLED by 0", "COMPLETED"],
        "flaky": ["FAILED", "FAILED"],  # the first try and the profile's one retry
        "overtime": ["TIMEOUT", "COMPLETED"],
        # Without cgroups SLURM kills the job past its memory and calls it FAILED (with
        # cgroups OUT_OF_MEMORY, which the plugin reads as a failure too).
        "hungry": ["FAILED", "COMPLETED"],
    }
    # The user fixes the cause and reruns: only the failed job runs again.
    (workdir / "fail.flag").unlink()
    rerun = run(command(), workdir, cluster)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert (workdir / "flaky.done").exists()
    assert "rule slow" not in rerun.stdout + rerun.stderr


def test_a_preempted_job_fails_and_is_retried(cluster, failures):
    workdir, command = failures
    process = subprocess.Popen(
        command("victim.done"),
        cwd=workdir, env=cluster, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    wait_for(workdir / "victim.started", process)
    victim = squeue_job(cluster, "victim")
    # A job of a higher-tier partition that needs the whole node cancels the victim.
    cpus = node_facts(cluster)["cpus"]
    subprocess.run(
        ["sbatch", "-p", "cpu", f"--cpus-per-task={cpus}", "--mem=100", "--wrap", "sleep 2"],
        env=cluster, check=True, capture_output=True,
    )  # fmt: skip
    try:
        _, stderr = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 0, stderr[-3000:]
    assert f"SLURM job {victim} was preempted and not requeued" in stderr
    assert sacct_jobs(cluster)[victim]["State"] == "PREEMPTED"
    assert (workdir / "victim.done").exists()


def test_a_job_no_partition_holds_is_refused_before_submission(cluster, failures):
    workdir, command = failures
    started = time.monotonic()
    result = run(command("huge.done"), workdir, cluster)
    assert result.returncode != 0
    assert "rule huge: no partition in" in result.stderr
    assert "100000000 MB of memory > max_mem_mb" in result.stderr
    assert time.monotonic() - started < 60
    assert not any(row["Comment"] == "rule_huge" for row in sacct_jobs(cluster).values())
