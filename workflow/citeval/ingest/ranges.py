"""Pid ranges: how merge cuts the papers and the edges into pieces that fit its memory.

Each paper's ``pid`` is its rank by ``paper_id``. Merge writes both tables range by range
of consecutive pids, so a sort holds one range rather than the table, however large the
corpus.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# Share of DuckDB's memory that the rows of one written pid range may take: its sort
# needs about as much again, and the join tables sit beside it.
RANGE_MEMORY_SHARE = 0.25


def pid_ranges(n_papers: int, table_bytes: int, memory_bytes: int) -> list[tuple[int, int]]:
    """Split pids ``[0, n_papers)`` into equal ranges small enough to sort in memory.

    The ranges are as small as the budget needs, however many that makes, so what one
    range holds does not grow with the input.
    """
    wanted = max(1, math.ceil(table_bytes / max(1, int(memory_bytes * RANGE_MEMORY_SHARE))))
    step = max(1, math.ceil(n_papers / wanted))
    return [(lo, min(lo + step, n_papers)) for lo in range(0, n_papers, step)] or [(0, 0)]


def range_index(paper_ids: pa.Array, firsts: pa.Array) -> np.ndarray:
    """For each paper_id, the index of the last of the sorted ``firsts`` not above it.

    A vectorised binary search: one Arrow comparison per halving. Arrow, like DuckDB's
    ``ORDER BY`` that numbered the papers, compares strings byte by byte.
    """
    low = np.zeros(len(paper_ids), dtype=np.int64)
    high = np.full(len(paper_ids), len(firsts), dtype=np.int64)
    while (open_ := low < high).any():
        middle = (low + high) // 2
        above = pc.greater_equal(
            paper_ids, firsts.take(pa.array(np.minimum(middle, len(firsts) - 1)))
        )
        above = above.to_numpy(zero_copy_only=False) & open_
        low = np.where(above, middle + 1, low)
        high = np.where(above | ~open_, high, middle)
    return low - 1


def runs_by_range(range_of: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int, int]]]:
    """The stable order that groups rows by range, and ``(range, start, end)`` of each
    range's run of rows in that order."""
    if not len(range_of):
        return np.empty(0, dtype=np.intp), []
    # numpy's stable sort is a radix sort for 16-bit keys, much faster than on int32, and
    # every batch of resolved edges is grouped this way.
    keys = range_of.astype(np.uint16) if range_of.max() < 2**16 else range_of
    order = np.argsort(keys, kind="stable")
    counts = np.bincount(range_of)
    ends = np.cumsum(counts)
    runs = [
        (k, end - n, end)
        for k, (n, end) in enumerate(zip(counts.tolist(), ends.tolist(), strict=True))
        if n
    ]
    return order, runs
