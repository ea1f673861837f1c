"""What merge holds whatever its ``--memory-limit``, and the limit to suggest instead.

DuckDB gets 3/4 of the limit (``citeval.memory.duckdb_memory_bytes``) and spills beyond
it; the rest covers the Arrow batches being written. Some memory does not shrink with the limit:
a fixed part (the Python process, DuckDB's minimum, the buffers of the row groups in
flight) and a part per paper (the paper_id and two counts held beside DuckDB, and
DuckDB's table of paper_ids while the edges are resolved). Both are empirical, measured
on the synthetic corpus (docs/ingest.md).
"""

from __future__ import annotations

import math

from citeval.memory import memory_bytes

MERGE_FIXED_BYTES = 600 * 10**6
MERGE_BYTES_PER_PAPER = 46


def merge_memory_bytes(n_papers: int) -> int:
    """About what merge holds for ``n_papers`` papers, whatever its limit."""
    return MERGE_FIXED_BYTES + MERGE_BYTES_PER_PAPER * n_papers


def suggested_memory_limit(memory_limit: str, n_papers: int) -> float:
    """A limit in GB, in steps of 0.5, that covers ``n_papers`` and exceeds ``memory_limit``."""
    needed = math.ceil(merge_memory_bytes(n_papers) / 0.5e9) * 0.5
    return max(needed, memory_bytes(memory_limit) / 1e9 + 0.5)


def out_of_memory_message(memory_limit: str, n_papers: int) -> str:
    """Why merge ran out of memory, and the ``--memory-limit`` to try instead."""
    message = f"merge ran out of memory under --memory-limit {memory_limit}"
    if not n_papers:
        return f"{message}; raise it (jobs.memory_limit in the config)"
    suggested = suggested_memory_limit(memory_limit, n_papers)
    return (
        f"{message} with {n_papers} papers (merge holds about "
        f"{MERGE_FIXED_BYTES // 10**6} MB + {MERGE_BYTES_PER_PAPER} bytes per paper whatever "
        f"the limit); raise --memory-limit (jobs.memory_limit in the config) to about "
        f"{suggested:g}GB"
    )
