"""Write the ``papers/`` table, range of pids by range of pids, with the citation counts.

Each range is read from the staging with its first and last paper_id as bounds, so the
scan drops the rows outside it before reading their text, and DuckDB sorts one range
rather than the table. Every range rescans the staged paper ids, though: past
``MAX_RANGES`` ranges the papers are first written out once, one Arrow file per range,
and each range then reads only its own file.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from citeval import memory
from citeval.ingest.parts import PartWriter, write_table
from citeval.ingest.ranges import pid_ranges, range_index, runs_by_range
from citeval.ingest.schemas import CORPUS_PARQUET_OPTIONS, PAPERS_ROW_GROUP, PAPERS_SCHEMA
from citeval.ingest.session import Merger
from citeval.ingest.staging import StagedShard

log = logging.getLogger(__name__)

# Papers leave DuckDB in quarter row groups, which keeps the text in flight small.
PAPERS_READ_BATCH = PAPERS_ROW_GROUP // 4
# Past this many ranges, one partitioning pass costs less than rescanning the staging
# for every range.
MAX_RANGES = 32
# Row groups' worth of papers held outside DuckDB while writing: DuckDB's result batch,
# the rows being cut, the combined row group and the encoder's pages and buffers.
WRITER_ROW_GROUPS = 6


def staged_papers_bytes(shards: Sequence[StagedShard]) -> int:
    """Uncompressed bytes of the staged columns the papers table is written from."""
    columns = {"paper_id", "title", "abstract", "year", "fields.list.element"}
    total = 0
    for shard in shards:
        for kind in ("papers", "abstracts"):
            for path in shard.parts(kind):
                metadata = pq.read_metadata(path)
                for group in range(metadata.num_row_groups):
                    row_group = metadata.row_group(group)
                    total += sum(
                        row_group.column(i).total_uncompressed_size
                        for i in range(row_group.num_columns)
                        if row_group.column(i).path_in_schema in columns
                    )
    return total


def read_range(merger: Merger, lo: int, hi: int) -> Iterator[pa.RecordBatch]:
    """The papers with ``lo <= pid < hi`` from the staging, in paper_id order, without
    counts."""
    sql = merger.papers_select(bounded=True) + " ORDER BY p.paper_id"
    params = {"first": merger.ids[lo].as_py(), "last": merger.ids[hi - 1].as_py()}
    yield from merger.con.sql(sql, params=params).to_arrow_reader(PAPERS_READ_BATCH)


class PartitionedPapers:
    """The papers written out once, one Arrow file per range of ``step`` pids.

    A row's range is found by binary search of its paper_id among the ranges' first ids,
    outside DuckDB: a join with the ids there would hold them in DuckDB's budget.
    """

    def __init__(self, merger: Merger, directory: Path, step: int) -> None:
        self.directory = directory
        self.step = step
        self.ids = merger.ids
        directory.mkdir()
        started = time.perf_counter()
        firsts = merger.ids.take(pa.array(range(0, merger.n_papers, step)))
        query = merger.con.sql(merger.papers_select(bounded=False))
        writers: dict[int, pa.ipc.RecordBatchStreamWriter] = {}
        try:
            for batch in query.to_arrow_reader(PAPERS_READ_BATCH):
                order, runs = runs_by_range(range_index(batch.column("paper_id"), firsts))
                batch = batch.take(pa.array(order))
                for k, lo, hi in runs:
                    if k not in writers:
                        writers[k] = pa.ipc.new_stream(directory / f"{k:06d}.arrow", batch.schema)
                    writers[k].write_batch(batch.slice(lo, hi - lo))
        finally:
            for writer in writers.values():
                writer.close()
        log.info(
            "merge: wrote the papers out in %d pid ranges (%.1f s)",
            len(firsts),
            time.perf_counter() - started,
        )

    def read_range(self, lo: int, hi: int) -> Iterator[pa.RecordBatch]:
        """The papers with ``lo <= pid < hi`` from their range's file, in paper_id order."""
        k = lo // self.step
        path = self.directory / f"{k:06d}.arrow"
        with pa.memory_map(str(path)) as source:
            table = pa.ipc.open_stream(source).read_all()
        table = table.take(pc.sort_indices(table, [("paper_id", "ascending")]))
        table = table.slice(lo - k * self.step, hi - lo)
        if not table.column("paper_id").equals(pa.chunked_array([self.ids[lo:hi]])):
            raise RuntimeError(f"{path} does not hold exactly the papers of pids {lo}..{hi - 1}")
        yield from table.to_batches(PAPERS_READ_BATCH)


def write_papers(merger: Merger, directory: Path, rows_per_part: int) -> PartWriter:
    """Write the papers table (row = pid) with the counts that writing the citations
    filled."""
    started = time.perf_counter()
    table_bytes = staged_papers_bytes(merger.shards)
    # What the writer holds comes out of DuckDB's budget.
    writer_bytes = WRITER_ROW_GROUPS * PAPERS_ROW_GROUP * table_bytes // max(1, merger.n_papers)
    budget = max(memory.DUCKDB_MIN_MEMORY, merger.memory_bytes - writer_bytes)
    ranges = pid_ranges(merger.n_papers, table_bytes, budget)
    partitioned = None
    if len(ranges) > MAX_RANGES:  # before the writer starts: with all of the budget
        step = ranges[0][1] - ranges[0][0]
        partitioned = PartitionedPapers(merger, merger.temp_dir / "papers-by-range", step)
    merger.limit_duckdb(budget)

    def read(lo: int, hi: int) -> Iterator[pa.RecordBatch]:
        if partitioned is not None:
            return partitioned.read_range(lo, hi)
        return read_range(merger, lo, hi)

    def batches() -> Iterator[pa.RecordBatch]:
        for lo, hi in ranges:
            if lo == hi:  # the one range of an empty corpus
                continue
            start = lo
            for batch in read(lo, hi):
                # One row per pid, in pid order: the counts of this batch are a slice.
                end = start + batch.num_rows
                yield pa.RecordBatch.from_arrays(
                    [
                        *batch.columns,
                        pa.array(merger.n_cited_by[start:end]),
                        pa.array(merger.n_references[start:end]),
                    ],
                    schema=PAPERS_SCHEMA,
                )
                start = end

    writer = PartWriter(
        directory,
        PAPERS_SCHEMA,
        rows_per_part=rows_per_part,
        row_group_size=PAPERS_ROW_GROUP,
        options=CORPUS_PARQUET_OPTIONS["papers"],
    )
    write_table(batches(), writer, "papers")
    if writer.rows != merger.n_papers:
        raise RuntimeError(f"wrote {writer.rows} papers rows for {merger.n_papers} numbered papers")
    log.info(
        "merge: wrote %d papers rows in %d parts from %d pid ranges (%.1f s)",
        writer.rows,
        writer.parts,
        len(ranges),
        time.perf_counter() - started,
    )
    return writer
