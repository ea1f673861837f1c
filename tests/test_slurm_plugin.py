"""The adjustments to the SLURM executor plugin (citeval.slurm): job ends it misreads, and
requests no partition can hold. tests/test_slurm.py checks both on a real scheduler."""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from snakemake_interface_common.exceptions import WorkflowError

from citeval import slurm

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("reported", "state"),
    [
        ("CANCELLED by 0", "CANCELLED"),
        ("CANCELLED by 1000", "CANCELLED"),
        ("CANCELLED", "CANCELLED"),
        ("PREEMPTED", "CANCELLED"),
        ("COMPLETED", "COMPLETED"),
        ("OUT_OF_MEMORY", "OUT_OF_MEMORY"),
        ("TIMEOUT", "TIMEOUT"),
        ("REQUEUED", "REQUEUED"),
        ("", ""),
    ],
)
def test_state_word(reported, state):
    assert slurm.job_state(reported) == state


@pytest.fixture
def plugin(monkeypatch):
    """The real plugin, restored after the test."""
    import snakemake_executor_plugin_slurm as plugin

    monkeypatch.setattr(plugin, "query_job_status", plugin.query_job_status)
    monkeypatch.setattr(plugin.Executor, "get_partition_arg", plugin.Executor.get_partition_arg)
    return plugin


def test_the_installed_plugin_reads_cancelled_and_preempted_jobs_as_ended(tmp_path, plugin, caplog):
    """The real plugin's query parses a fake sacct's output; after install() its states
    are words the plugin's checks know, and a second install() wraps nothing twice."""
    sacct = tmp_path / "sacct"
    sacct.write_text(
        "#!/bin/sh\nprintf '101|CANCELLED by 0\\n102|COMPLETED\\n103|RUNNING\\n104|PREEMPTED\\n'\n"
    )
    sacct.chmod(0o755)
    logger = logging.getLogger("slurm-test")
    before, _ = asyncio.run(plugin.query_job_status(str(sacct), logger))
    assert before["101"] == "CANCELLED by 0"
    assert slurm.install() and slurm.install()
    wrapped = plugin.query_job_status
    assert wrapped.__wrapped__.__name__ == "query_job_status"
    assert not hasattr(wrapped.__wrapped__, slurm._MARK)
    with caplog.at_level(logging.WARNING, logger="slurm-test"):
        after, seconds = asyncio.run(plugin.query_job_status(str(sacct), logger))
    assert after == {"101": "CANCELLED", "102": "COMPLETED", "103": "RUNNING", "104": "CANCELLED"}
    assert "SLURM job 104 was preempted and not requeued" in caplog.text
    assert seconds >= 0
    # A failed query (None, None) passes through: the plugin retries it.
    failed, _ = asyncio.run(plugin.query_job_status("false", logger))
    assert failed is None


class Resources(dict):
    """What the plugin reads from ``job.resources``: ``.get`` and attributes."""

    __getattr__ = dict.get


def job(name: str, threads: int = 1, **resources) -> SimpleNamespace:
    return SimpleNamespace(name=name, threads=threads, resources=Resources(resources))


@pytest.fixture
def executor(plugin):
    """Just what the plugin's partition choice reads of its executor, with the shipped
    profile's partitions file."""
    from snakemake_executor_plugin_slurm.partitions import read_partition_file

    path = REPO / "profiles" / "slurm" / "partitions.yaml"
    slurm.install()
    return SimpleNamespace(
        _partitions=read_partition_file(path),
        _fallback_partition=None,
        logger=logging.getLogger("slurm-test"),
        workflow=SimpleNamespace(executor_settings=SimpleNamespace(partition_config=path)),
    )


def test_jobs_go_to_the_partition_that_holds_them(plugin, executor):
    choose = plugin.Executor.get_partition_arg
    assert choose(executor, job("prefilter", 8, mem_mb=4000, runtime=60)) == " -p cpu"
    assert choose(executor, job("encode", 8, mem_mb=8000, runtime=480, gpu=1)) == " -p gpu"
    # A partition the user names is theirs to choose.
    assert choose(executor, job("x", 64, slurm_partition="big")) == " -p big"


@pytest.mark.parametrize(
    ("request_", "reason"),
    [
        ({"threads": 64, "mem_mb": 1000, "runtime": 10}, "cpu: 64 CPUs > max_threads 32"),
        ({"mem_mb": 300000, "runtime": 10}, "cpu: 300000 MB of memory > max_mem_mb 190000"),
        ({"mem_mb": 1000, "runtime": 5000}, "gpu: 5000 minutes > max_runtime 2880"),
        (
            {"mem_mb": 1000, "runtime": 10, "gpu": 8},
            "cpu: 8 GPUs > max_gpu 0; gpu: 8 GPUs > max_gpu 4",
        ),
    ],
)
def test_a_job_no_partition_holds_is_refused_naming_the_rule_and_the_limit(
    plugin, executor, request_, reason
):
    threads = request_.pop("threads", 1)
    with pytest.raises(WorkflowError) as error:
        plugin.Executor.get_partition_arg(executor, job("ingest_merge", threads, **request_))
    message = str(error.value)
    assert message.startswith("rule ingest_merge: no partition in ")
    assert "partitions.yaml" in message and reason in message


def test_install_without_the_plugin_does_nothing(monkeypatch):
    monkeypatch.setitem(sys.modules, slurm.PLUGIN, None)
    assert slurm.install() is False
