"""Memory budgets: a job's ``--memory-limit`` (the config's ``jobs.memory_limit``) in bytes,
and the share of it DuckDB gets.

Every stage that runs DuckDB (ingestion's merge, the prefilter, sampling, BM25's
analysis, MDCR's inputs, the training graph and texts, the local contexts) takes one
whole-process budget. DuckDB gets :data:`DUCKDB_MEMORY_SHARE` of it (at least
:data:`DUCKDB_MIN_MEMORY`) and spills to disk beyond that; the rest covers what DuckDB
does not count: the Python process, and the Arrow batches and parquet row groups in
flight. :mod:`citeval.jobs` asks each job's executor for memory from the same budget.
"""

from __future__ import annotations

import re

_MEMORY_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(MB|GB|MiB|GiB)\s*$")
_MEMORY_UNITS = {"MB": 10**6, "GB": 10**9, "MiB": 2**20, "GiB": 2**30}

# Share of a stage's --memory-limit handed to DuckDB; the rest covers what DuckDB does not
# count: the Python process, and the Arrow batches and parquet row groups in flight.
DUCKDB_MEMORY_SHARE = 0.75
DUCKDB_MIN_MEMORY = 128 * 2**20


def memory_bytes(text: str) -> int:
    """Bytes in a memory size like ``2GB``, ``500MB`` or ``1.5 GiB``; ValueError otherwise."""
    match = _MEMORY_RE.match(text)
    if not match:
        raise ValueError(f"memory limit {text!r} is not like '2GB', '500MB' or '1.5GiB'")
    return int(float(match.group(1)) * _MEMORY_UNITS[match.group(2)])


def duckdb_memory_bytes(limit: str) -> int:
    """DuckDB's memory budget in bytes for a whole-process budget like ``2GB`` or ``1.5 GiB``."""
    total = memory_bytes(limit)
    return max(DUCKDB_MIN_MEMORY, int(total * DUCKDB_MEMORY_SHARE / 2**20) * 2**20)


def duckdb_memory_setting(limit: str) -> str:
    """DuckDB's ``memory_limit`` setting for a whole-process budget: ``"1430MiB"`` for ``2GB``.

    The budget is :func:`duckdb_memory_bytes`, written in whole MiB (DuckDB reads ``MB`` as
    10**6 bytes, ``MiB`` as 2**20).
    """
    return f"{duckdb_memory_bytes(limit) // 2**20}MiB"
