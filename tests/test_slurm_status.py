"""The cancelled-job fix for the SLURM executor plugin (citeval.slurm_status)."""

from __future__ import annotations

import asyncio
import logging
import sys

import pytest

from citeval import slurm_status


@pytest.mark.parametrize(
    ("reported", "state"),
    [
        ("CANCELLED by 0", "CANCELLED"),
        ("CANCELLED by 1000", "CANCELLED"),
        ("CANCELLED", "CANCELLED"),
        ("COMPLETED", "COMPLETED"),
        ("OUT_OF_MEMORY", "OUT_OF_MEMORY"),
        ("", ""),
    ],
)
def test_state_word(reported, state):
    assert slurm_status.job_state(reported) == state


def test_the_installed_plugin_reports_a_cancelled_job_as_cancelled(tmp_path, monkeypatch):
    """The real plugin's query parses a fake sacct's output; after install() its states
    are words the plugin's checks know, and a second install() wraps nothing twice."""
    import snakemake_executor_plugin_slurm as plugin

    sacct = tmp_path / "sacct"
    sacct.write_text("#!/bin/sh\nprintf '101|CANCELLED by 0\\n102|COMPLETED\\n103|RUNNING\\n'\n")
    sacct.chmod(0o755)
    monkeypatch.setattr(plugin, "query_job_status", plugin.query_job_status)
    logger = logging.getLogger("slurm-test")
    before, _ = asyncio.run(plugin.query_job_status(str(sacct), logger))
    assert before["101"] == "CANCELLED by 0"
    assert slurm_status.install() and slurm_status.install()
    wrapped = plugin.query_job_status
    assert wrapped.__wrapped__.__name__ == "query_job_status"
    assert not hasattr(wrapped.__wrapped__, slurm_status._MARK)
    after, seconds = asyncio.run(plugin.query_job_status(str(sacct), logger))
    assert after == {"101": "CANCELLED", "102": "COMPLETED", "103": "RUNNING"}
    assert seconds >= 0
    # A failed query (None, None) passes through: the plugin retries it.
    failed, _ = asyncio.run(plugin.query_job_status("false", logger))
    assert failed is None


def test_install_without_the_plugin_does_nothing(monkeypatch):
    monkeypatch.setitem(sys.modules, slurm_status.PLUGIN, None)
    assert slurm_status.install() is False
