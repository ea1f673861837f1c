"""The titles and abstracts of a shard's papers, streamed from the corpus in id order.

One DuckDB range scan per shard: row groups outside the shard's id range are skipped by
their statistics, and the corpus parts are sorted by paper_id, so the scan yields papers in
id order with no sort. The corpus is never loaded whole: memory is one scan batch and
DuckDB's reader buffers (bounded by ``--memory-limit``), whatever the shard size.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from citeval.errors import InputDataError

# Rows per Arrow batch of the corpus range scan: memory holds one batch of titles and
# abstracts, whatever the shard size.
SCAN_BATCH = 16_384


def iter_paper_chunks(
    papers: str | os.PathLike,
    ids: pa.Array,
    chunk_size: int,
    *,
    memory_limit: str,
    threads: int = 2,
    temp_directory: str | os.PathLike | None = None,
    scan_batch: int = SCAN_BATCH,
) -> Iterator[pa.Table]:
    """Yield (paper_id, title, abstract) for ``ids`` (sorted), ``chunk_size`` rows at a time.

    The corpus parts are sorted by paper_id (docs/contracts.md), so a range scan in file
    order already yields the shard's papers in id order: DuckDB guarantees the row order
    of a single-table scan with a WHERE clause (a join or ORDER BY would not, or would
    hold the whole shard's text to sort it). The BETWEEN bounds skip row groups outside
    the shard by their min/max statistics; the semi-join itself is a hash lookup on each
    scanned batch. Memory: one scan batch plus one chunk. Each chunk is checked against
    the expected ids, so a paper missing from the corpus (or an unsorted corpus) is
    reported instead of shifting every later vector.
    """
    import duckdb

    if len(ids) == 0:
        return
    papers_path = Path(papers)
    files = sorted(papers_path.glob("*.parquet")) if papers_path.is_dir() else [papers_path]
    if not files:
        raise InputDataError("no parquet files in the papers directory", path=str(papers))
    connection = duckdb.connect(
        config={
            "memory_limit": memory_limit,
            "threads": threads,
            "preserve_insertion_order": True,
        }
    )
    try:
        if temp_directory is not None:
            connection.execute("SET temp_directory = ?", [str(temp_directory)])
        # A relation streams its result; a DB-API cursor's Arrow output would copy it all.
        reader = connection.sql(
            """
            SELECT paper_id, title, abstract
            FROM read_parquet($files)
            WHERE paper_id BETWEEN $first AND $last
            """,
            params={
                "files": [str(file) for file in files],
                "first": ids[0].as_py(),
                "last": ids[-1].as_py(),
            },
        ).to_arrow_reader(batch_size=scan_batch)
        expected = 0
        pending: list[pa.Table] = []
        pending_rows = 0

        def emit(table: pa.Table) -> pa.Table:
            nonlocal expected
            want = ids.slice(expected, table.num_rows)
            got = table.column("paper_id").combine_chunks().cast(pa.string())
            if not got.equals(want):
                _raise_mismatch(papers, want, got)
            expected += table.num_rows
            return table

        for batch in reader:
            wanted = batch.filter(pc.is_in(batch.column("paper_id"), value_set=ids))
            if wanted.num_rows == 0:
                continue
            pending.append(pa.Table.from_batches([wanted]))
            pending_rows += wanted.num_rows
            while pending_rows >= chunk_size:
                table = pa.concat_tables(pending).combine_chunks()
                yield emit(table.slice(0, chunk_size))
                rest = table.slice(chunk_size)
                pending = [rest] if rest.num_rows else []
                pending_rows = rest.num_rows
        if pending_rows:
            yield emit(pa.concat_tables(pending).combine_chunks())
        if expected != len(ids):
            _raise_mismatch(papers, ids.slice(expected), pa.array([], pa.string()))
    finally:
        connection.close()


def _raise_mismatch(papers: str | os.PathLike, want: pa.Array, got: pa.Array) -> None:
    got_ids = got.to_pylist()
    found = set(got_ids)
    missing = [paper_id for paper_id in want.to_pylist() if paper_id not in found]
    if missing:
        raise InputDataError(
            f"{len(missing)} paper id(s) to embed are not in the corpus, e.g. {missing[:5]}",
            path=str(papers),
        )
    if len(found) < len(got_ids):
        raise InputDataError(
            "duplicate paper ids in the corpus", path=str(papers), field="paper_id"
        )
    raise InputDataError(
        "the corpus parts are not sorted by paper_id (docs/contracts.md)",
        path=str(papers),
        field="paper_id",
    )
