"""Which rows of ``samples/embed_ids.parquet`` a shard embeds.

Shard ``i`` of ``N`` takes rows ``[i*n//N, (i+1)*n//N)`` of the sorted id list, so every
row is in exactly one shard.
"""

from __future__ import annotations

import itertools
import os

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from citeval.errors import CitevalError, InputDataError


def shard_bounds(num_ids: int, shard_id: int, num_shards: int) -> tuple[int, int]:
    """Rows ``[shard_id*n//N, (shard_id+1)*n//N)``: every row in exactly one shard."""
    if num_shards < 1:
        raise CitevalError(f"--num-shards must be at least 1, got {num_shards}")
    if not 0 <= shard_id < num_shards:
        raise CitevalError(f"--shard-id must be in [0, {num_shards}), got {shard_id}")
    return shard_id * num_ids // num_shards, (shard_id + 1) * num_ids // num_shards


def read_shard_ids(
    ids_path: str | os.PathLike, shard_id: int, num_shards: int, column: str = "paper_id"
) -> pa.Array:
    """This shard's slice of ``embed_ids.parquet``, checked to be sorted and unique; or,
    with ``column="query_id"``, of a sample's ``queries.parquet``'s distinct query ids (a
    query is listed once per collection it belongs to)."""
    try:
        table = pq.read_table(ids_path, columns=[column])
    except (OSError, pa.ArrowInvalid, KeyError) as error:
        raise InputDataError(f"cannot read {column} ({error})", path=str(ids_path)) from error
    if column != "paper_id":
        distinct = pc.unique(table.column(column).combine_chunks().drop_null())
        table = pa.table({column: distinct.take(pc.array_sort_indices(distinct))})
    begin, end = shard_bounds(table.num_rows, shard_id, num_shards)
    ids = table.column(column).slice(begin, end - begin).combine_chunks()
    if ids.type != pa.string():
        ids = ids.cast(pa.string())
    if ids.null_count:
        raise InputDataError("null paper_id", path=str(ids_path), field="paper_id")
    values = ids.to_pylist()
    for row, (previous, current) in enumerate(itertools.pairwise(values)):
        if not previous < current:
            raise InputDataError(
                f"paper ids must be sorted and unique; row {begin + row + 1} ({current!r}) "
                f"follows {previous!r}",
                path=str(ids_path),
                field="paper_id",
            )
    return ids
