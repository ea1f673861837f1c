"""The citation edges: resolve both ends to pids, deduplicate, count, write ``citations/``.

DuckDB resolves each edge read to a (citing pid, cited pid) pair, one kind of edge at a
time, and the pairs stream out as uint64 sort keys into one file per citing pid range, so
no range rescans them and DuckDB never holds them. Each range is then sorted,
deduplicated and counted in numpy, which is cheaper than a ``DISTINCT`` in DuckDB, and
its pids are turned back into ids through the lookup ``Merger.load_lookups`` holds.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from tqdm import tqdm

from citeval.ingest.parts import PartWriter, write_table
from citeval.ingest.ranges import pid_ranges, runs_by_range
from citeval.ingest.report import MAX_EXAMPLES, edges_read
from citeval.ingest.schemas import CITATIONS_ROW_GROUP, CITATIONS_SCHEMA, CORPUS_PARQUET_OPTIONS
from citeval.ingest.session import Merger
from citeval.ingest.staging import StagedTable, sql_list

log = logging.getLogger(__name__)

# Edge rows per batch while they are written out by citing range (12 bytes each).
EDGES_READ_BATCH = 1 << 20
# Bytes per edge row of a citing range while it is sorted: the uint64 key read from its
# file (sorted in place), the mask, and the int32 pids split from it before and after
# dropping repeats and self-citations.
CITATION_ROW_BYTES = 40


class CitingRanges:
    """The resolved edge rows, one file of sort keys per citing pid range.

    A key is (citing - first pid of its range) in the high 32 bits and the cited pid in
    the low 32, so sorting a range's keys sorts its edges by (citing_id, cited_id).
    """

    def __init__(self, directory: Path, ranges: list[tuple[int, int]]) -> None:
        self.directory = directory
        self.ranges = ranges
        self.step = max(1, ranges[0][1] - ranges[0][0])
        # Distinct pairs with an end outside the corpus, without and with citing == cited.
        self.dangling = self.dangling_self = 0
        directory.mkdir()

    def append(self, range_of: np.ndarray, keys: np.ndarray) -> None:
        """Append each key to its range's file."""
        order, runs = runs_by_range(range_of)
        keys = keys[order]
        for k, lo, hi in runs:
            # Appended and closed each time: ranges may outnumber open-file limits.
            with open(self.directory / f"{k:06d}.keys", "ab") as out:
                keys[lo:hi].tofile(out)

    def sorted_keys(self, lo: int) -> np.ndarray:
        """The sorted keys of the citing range starting at pid ``lo``, repeats kept."""
        path = self.directory / f"{lo // self.step:06d}.keys"
        if not path.exists():  # no edge cites from this range
            return np.empty(0, np.uint64)
        keys = np.fromfile(path, dtype=np.uint64)
        path.unlink()  # each range is read once; its disk space is free for the next steps
        keys.sort()
        return keys


def resolve_edges(merger: Merger) -> CitingRanges:
    """Resolve both ends of every edge read to pids and write them out by citing range.

    A paper's citation lists are unnested after its own id has been looked up, so per
    edge only the listed id is (S2AG citation rows look up both ends). An end outside the
    corpus gets a null pid; only when one did is the input read again to count those
    edges (distinct pairs, with examples).
    """
    shards = merger.shards
    lists = "paper_lists"
    columns = "paper_id, outbound_citations, inbound_citations"
    merger.create_staged_view(lists, StagedTable.of(shards, "papers", columns))
    # Each paper's own id is looked up once (every copy's lists count), then unnested.
    own = f"(SELECT i.pid, unnest(l.{{0}}) AS other FROM {lists} l JOIN ids i USING (paper_id)) o"
    pid_pairs = [
        "SELECT o.pid AS citing, b.pid AS cited "
        f"FROM {own.format('outbound_citations')} LEFT JOIN ids b ON b.paper_id = o.other",
        "SELECT a.pid AS citing, o.pid AS cited "
        f"FROM {own.format('inbound_citations')} LEFT JOIN ids a ON a.paper_id = o.other",
    ]
    # The same edges as id strings, read again only to count dangling ones.
    as_ids = [
        f"SELECT paper_id AS citing_id, unnest(outbound_citations) AS cited_id FROM {lists}",
        f"SELECT unnest(inbound_citations) AS citing_id, paper_id AS cited_id FROM {lists}",
    ]
    pairs = [p for s in shards for p in s.parts("edges")]
    if pairs:
        citation_rows = f"read_parquet({sql_list(pairs)})"
        pid_pairs.append(
            "SELECT a.pid AS citing, b.pid AS cited "
            f"FROM {citation_rows} e "
            "LEFT JOIN ids a ON e.citing_id = a.paper_id "
            "LEFT JOIN ids b ON e.cited_id = b.paper_id"
        )
        as_ids.append(f"SELECT citing_id, cited_id FROM {citation_rows}")
    # Sized by the edges read, which bound the resolved ones, and by the memory left once
    # the lookups are held, when they are sorted.
    n_read = edges_read(s.report for s in shards)
    edges = CitingRanges(
        merger.temp_dir / "edges-by-range",
        pid_ranges(
            merger.n_papers,
            n_read * CITATION_ROW_BYTES,
            merger.memory_bytes - merger.lookup_bytes(),
        ),
    )
    started = time.perf_counter()
    unresolved = 0
    with (
        merger.con.cursor() as cursor,  # a streamed result keeps its connection busy
        tqdm(total=n_read, unit="edges", desc="resolve edges", mininterval=5, leave=False) as bar,
    ):
        # One kind of edge at a time: streamed as one UNION ALL, the joins of every kind
        # would hold their hash tables at once.
        for pairs_of_kind in pid_pairs:
            query = cursor.sql(
                f"SELECT (citing // {edges.step})::INTEGER AS range, "
                f"((citing % {edges.step})::UBIGINT << 32) | cited::UBIGINT AS key "
                f"FROM ({pairs_of_kind})"
            )
            for batch in query.to_arrow_reader(EDGES_READ_BATCH):
                bar.update(batch.num_rows)
                if batch.column("key").null_count:
                    unresolved += batch.column("key").null_count
                    batch = batch.filter(pc.is_valid(batch.column("key")))
                edges.append(batch.column("range").to_numpy(), batch.column("key").to_numpy())
    log.info(
        "merge: map edge ends to paper numbers, %d citing pid ranges (%.1f s)",
        len(edges.ranges),
        time.perf_counter() - started,
    )
    if unresolved:
        source = "(" + " UNION ALL ".join(as_ids) + ")"
        edges.dangling, edges.dangling_self = _count_dangling(merger, source)
    merger.counts["dangling_edges"] = edges.dangling
    return edges


def _count_dangling(merger: Merger, source: str) -> tuple[int, int]:
    """(dangling, self-citing dangling) distinct pairs; keeps the first few as examples."""
    merger.sql(
        "CREATE TABLE dangling AS SELECT DISTINCT e.citing_id, e.cited_id "
        f"FROM {source} e LEFT JOIN ids a ON e.citing_id = a.paper_id "
        "LEFT JOIN ids b ON e.cited_id = b.paper_id "
        "WHERE a.pid IS NULL OR b.pid IS NULL",
        "collect dangling edges",
    )
    total, selfs = merger.con.execute(
        "SELECT count(*), count(*) FILTER (WHERE citing_id = cited_id) FROM dangling"
    ).fetchone()
    if total > selfs:
        merger.examples["dangling_edges"] = [
            list(r)
            for r in merger.con.execute(
                "SELECT citing_id, cited_id FROM dangling WHERE citing_id <> cited_id "
                f"ORDER BY citing_id, cited_id LIMIT {MAX_EXAMPLES}"
            ).fetchall()
        ]
    merger.sql("DROP TABLE dangling")
    return int(total) - int(selfs), int(selfs)


def write_citations(
    merger: Merger, edges: CitingRanges, directory: Path, rows_per_part: int
) -> PartWriter:
    """Write the citations table and count citations per paper, range by citing range.

    Each range's keys are sorted in numpy, repeats and self-citations dropped, what is
    left counted into ``merger.n_references`` and ``merger.n_cited_by``, and the pids
    looked up in ``merger.ids``.
    """
    started = time.perf_counter()
    distinct = self_citations = 0

    def pid_pairs() -> Iterator[pa.RecordBatch]:
        nonlocal distinct, self_citations
        for lo, hi in edges.ranges:
            if lo == hi:  # the one range of an empty corpus
                continue
            keys = edges.sorted_keys(lo)
            first = np.ones(len(keys), dtype=bool)
            np.not_equal(keys[1:], keys[:-1], out=first[1:])
            keys = keys[first]
            del first
            citing = (keys >> np.uint64(32)).astype(np.int32) + np.int32(lo)
            cited = (keys & np.uint64(0xFFFFFFFF)).astype(np.int32)
            del keys
            distinct += len(citing)
            cites_other = citing != cited
            self_citations += len(citing) - int(np.count_nonzero(cites_other))
            citing, cited = citing[cites_other], cited[cites_other]
            counts = np.bincount(citing - lo, minlength=hi - lo).astype(np.int32)
            merger.n_references[lo:hi] += counts
            # Unique pids can be added to directly, much faster than np.add.at.
            cited_pids, times = np.unique(cited, return_counts=True)
            merger.n_cited_by[cited_pids] += times.astype(np.int32)
            yield pa.RecordBatch.from_arrays(
                [pa.array(citing), pa.array(cited)], names=["citing", "cited"]
            )

    def to_ids(pairs: pa.RecordBatch) -> pa.RecordBatch:
        return pa.RecordBatch.from_arrays(
            [merger.ids.take(pairs.column("citing")), merger.ids.take(pairs.column("cited"))],
            schema=CITATIONS_SCHEMA,
        )

    writer = PartWriter(
        directory,
        CITATIONS_SCHEMA,
        rows_per_part=rows_per_part,
        row_group_size=CITATIONS_ROW_GROUP,
        options=CORPUS_PARQUET_OPTIONS["citations"],
    )
    write_table(pid_pairs(), writer, "citations", prepare=to_ids)
    merger.counts["citation_edges_distinct"] = distinct + edges.dangling + edges.dangling_self
    merger.counts["self_citations"] = self_citations + edges.dangling_self
    log.info(
        "merge: wrote %d citations rows in %d parts from %d pid ranges (%.1f s)",
        writer.rows,
        writer.parts,
        len(edges.ranges),
        time.perf_counter() - started,
    )
    return writer
