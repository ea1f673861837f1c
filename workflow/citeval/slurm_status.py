"""Let the SLURM executor plugin see a cancelled job as failed.

``sacct --parsable2`` reports a job cancelled by a user, an administrator or the
scheduler as ``CANCELLED by <uid>``. The pinned ``snakemake-executor-plugin-slurm``
compares the state with the bare word ``CANCELLED``, so it takes such a job for a running
one and Snakemake waits for it forever (tests/slurm reproduces it on a real scheduler).
The old Snakemake SLURM profiles had the same bug and fixed it by keeping the state's
first word; :func:`install` does that to the plugin's status query, once, from the
workflow (``rules/common.smk``), so the job is reported failed and retried per the
profile's ``retries``.

Nothing else changes: the plugin's own states (``COMPLETED``, ``FAILED``, ``TIMEOUT``,
``OUT_OF_MEMORY``, ``NODE_FAIL``, ...) are single words already. Where the plugin is not
installed (local runs), :func:`install` does nothing.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Awaitable, Callable
from typing import Any

PLUGIN = "snakemake_executor_plugin_slurm"
_MARK = "_citeval_state_fix"


def job_state(reported: str) -> str:
    """The state word of a ``sacct``/``squeue`` state: ``CANCELLED by 0`` -> ``CANCELLED``."""
    words = reported.split()
    return words[0] if words else reported


def _normalised(query: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(query)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        states, seconds = await query(*args, **kwargs)
        if states is not None:
            states = {job: job_state(state) for job, state in states.items()}
        return states, seconds

    setattr(wrapper, _MARK, True)
    return wrapper


def install() -> bool:
    """Wrap the plugin's status query so it returns state words; True once it is wrapped."""
    try:
        plugin = importlib.import_module(PLUGIN)
    except ImportError:
        return False
    query = getattr(plugin, "query_job_status", None)
    if query is None:
        raise RuntimeError(
            f"{PLUGIN} has no query_job_status: the cancelled-job fix in "
            "citeval.slurm_status needs updating for this plugin version"
        )
    if not getattr(query, _MARK, False):
        plugin.query_job_status = _normalised(query)
    return True
