"""Two adjustments to the SLURM executor plugin: job ends it misreads, and requests no
partition can hold.

**Job ends.** ``sacct --parsable2`` reports a job cancelled by a user, an administrator or
the scheduler as ``CANCELLED by <uid>``; the pinned ``snakemake-executor-plugin-slurm``
compares states with bare words, so it took such a job for a running one and Snakemake
waited for it forever (tests/slurm reproduced it on a real scheduler). It also keeps a
``PREEMPTED`` job waiting, leaving SLURM to requeue it; but a requeued job shows up as
``REQUEUED`` or ``PENDING``, so a job ``sacct`` still calls ``PREEMPTED`` was cancelled by
the preemption and will never run again. :func:`install` wraps the plugin's status query
so it returns the state's first word, and ``CANCELLED`` for a preempted job (logged as a
preemption), so both fail and are retried per the profile's ``retries``. The plugin's own
``TIMEOUT``, ``OUT_OF_MEMORY``, ``NODE_FAIL``, ... are failures already.

**Requests no partition holds.** Given a partitions file (the profile's
``slurm-partition-config``), the plugin sends each job to the partition that fits it best,
but a job that fits none is submitted anyway and stays ``PENDING`` for good. The wrapped
partition choice refuses such a job instead: its submission fails with an error that
names the rule, its request and each partition's limit it exceeds.

:func:`install` runs once, from the workflow (``rules/common.smk``). Where the plugin is
not installed (local runs) it does nothing.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Awaitable, Callable, Iterable
from math import isinf
from typing import Any

PLUGIN = "snakemake_executor_plugin_slurm"
_MARK = "_citeval_adjusted"
# sacct states the plugin does not take for an end, that are one (see the docstring).
_ENDED_AS = {"PREEMPTED": "CANCELLED"}


def _state_word(reported: str) -> str:
    words = reported.split()
    return words[0] if words else reported


def job_state(reported: str) -> str:
    """The state word the plugin understands: ``CANCELLED by 0`` -> ``CANCELLED``,
    ``PREEMPTED`` -> ``CANCELLED``."""
    word = _state_word(reported)
    return _ENDED_AS.get(word, word)


def _reading_state_words(query: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(query)
    async def wrapper(command: str, logger: Any, *args: Any, **kwargs: Any) -> Any:
        states, seconds = await query(command, logger, *args, **kwargs)
        if states is None:
            return states, seconds
        for job, state in states.items():
            if _state_word(state) == "PREEMPTED":
                logger.warning(
                    f"SLURM job {job} was preempted and not requeued: it counts as failed"
                )
        return {job: job_state(state) for job, state in states.items()}, seconds

    setattr(wrapper, _MARK, True)
    return wrapper


def exceeded_limits(limits: Any, job: Any) -> list[str]:
    """What of ``job``'s request a partition's ``PartitionLimits`` cannot hold, in words."""
    from snakemake_executor_plugin_slurm.partitions import (
        get_job_cpu_requirement,
        parse_gpu_requirements,
    )

    cpus, _ = get_job_cpu_requirement(job)
    gpus, _ = parse_gpu_requirements(job)
    checks = [
        (
            "CPUs",
            max(cpus, job.threads or 1),
            min(limits.max_threads, limits.max_cpus_per_task),
            "max_threads",
        ),
        ("MB of memory", _number(job.resources.get("mem_mb")), limits.max_mem_mb, "max_mem_mb"),
        ("minutes", _number(job.resources.get("runtime")), limits.max_runtime, "max_runtime"),
        ("GPUs", gpus, limits.max_gpu if gpus else float("inf"), "max_gpu"),
    ]
    return [
        f"{asked:.12g} {what} > {key} {limit:.12g}"
        for what, asked, limit, key in checks
        if not isinf(limit) and asked > limit
    ]


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def unplaceable_message(job: Any, partitions: Iterable[Any], source: Any) -> str:
    reasons = "; ".join(
        f"{p.name}: {', '.join(exceeded_limits(p.limits, job)) or 'does not fit'}"
        for p in partitions
    )
    return (
        f"rule {job.name}: no partition in {source or 'the partitions file'} can hold this "
        f"job ({reasons}). Lower the request (jobs.threads or jobs.memory_limit in the "
        f"config, or --set-resources/--set-threads for this rule) or add a partition."
    )


def _refusing_unplaceable(choose: Callable[..., str]) -> Callable[..., str]:
    @functools.wraps(choose)
    def wrapper(self: Any, job: Any) -> str:
        partitions = getattr(self, "_partitions", None)
        if (
            partitions
            and not job.resources.get("slurm_partition")
            and all(p.score_job_fit(job) is None for p in partitions)
        ):
            from snakemake_interface_common.exceptions import WorkflowError

            source = getattr(self.workflow.executor_settings, "partition_config", None)
            raise WorkflowError(unplaceable_message(job, partitions, source))
        return choose(self, job)

    setattr(wrapper, _MARK, True)
    return wrapper


def install() -> bool:
    """Adjust the plugin (both adjustments, once); True once it is adjusted."""
    try:
        plugin = importlib.import_module(PLUGIN)
    except ImportError:
        return False
    query = getattr(plugin, "query_job_status", None)
    choose = getattr(getattr(plugin, "Executor", None), "get_partition_arg", None)
    if query is None or choose is None:
        raise RuntimeError(
            f"{PLUGIN} has no query_job_status or Executor.get_partition_arg: "
            "citeval.slurm needs updating for this plugin version"
        )
    if not getattr(query, _MARK, False):
        plugin.query_job_status = _reading_state_words(query)
    if not getattr(choose, _MARK, False):
        plugin.Executor.get_partition_arg = _refusing_unplaceable(choose)
    return True
