"""``embed-ids``: the papers an encoder embeds, every pool and query id of the samples."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import duckdb

from citeval.io import write_parquet
from citeval.layout import QUERY_PAPERS


def write_embed_ids(sample_dirs: Sequence[str], output: str) -> int:
    """The union of every pool and query id: the papers an encoder has to embed once.

    A sample whose queries are not papers (the local task's contexts, which carry their own
    texts in ``query_papers/``) contributes its pools only.
    """
    con = duckdb.connect()
    parts = []
    for directory in map(Path, sample_dirs):
        parts.append(f"SELECT paper_id FROM read_parquet('{directory / 'pools.parquet'}')")
        if not (directory / QUERY_PAPERS).exists():
            parts.append(f"SELECT query_id FROM read_parquet('{directory / 'queries.parquet'}')")
    table = con.sql(
        f"SELECT DISTINCT paper_id FROM ({' UNION ALL '.join(parts)}) ORDER BY paper_id"
    ).to_arrow_table()
    write_parquet(table, output)
    return table.num_rows
