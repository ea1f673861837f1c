"""A collection's query ids and pool paper ids, read from its sample's manifests."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from citeval.collection_list import group_query_count
from citeval.errors import InputDataError


def read_collection(
    queries_path: str | Path, pools_path: str | Path, group: str, rep: int
) -> tuple[list[str], list[str]]:
    """Sorted query ids of ``group`` and sorted pool paper ids of ``(group, rep)``."""
    reads = {
        "queries": (queries_path, ["group", "query_id"], [("group", "==", group)]),
        "pool": (
            pools_path,
            ["group", "rep", "paper_id"],
            [("group", "==", group), ("rep", "==", rep)],
        ),
    }
    tables = {}
    for name, (path, columns, filters) in reads.items():
        try:
            tables[name] = pq.read_table(path, columns=columns, filters=filters)
        except (OSError, ValueError, KeyError) as error:
            first_line = str(error).splitlines()[0]  # pyarrow then lists the file's columns
            raise InputDataError(
                f"cannot read the {name} (columns {columns}): {first_line}", path=str(path)
            ) from error
    queries, pool = tables["queries"], tables["pool"]
    query_ids = sorted(set(queries.column("query_id").to_pylist()))
    pool_ids = sorted(set(pool.column("paper_id").to_pylist()))
    if not query_ids and group_query_count(Path(queries_path).parent, group) > 0:
        raise InputDataError(f"no queries for group {group!r}", path=str(queries_path))
    if not pool_ids:
        raise InputDataError(f"no pool for group {group!r} rep {rep}", path=str(pools_path))
    return query_ids, pool_ids
