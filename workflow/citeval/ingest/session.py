"""The merge's session: one private in-memory DuckDB database over the staged shards, the
lookups held beside it, and the counts and examples of the report on the way.

:mod:`citeval.ingest.merge` drives it step by step; :mod:`citeval.ingest.edges` and
:mod:`citeval.ingest.papers` write the two corpus tables from it. DuckDB's memory limit is
the share of ``--memory-limit`` :mod:`citeval.memory` gives it, less what the lookups hold
(:mod:`citeval.ingest.footprint` says what merge holds whatever the limit).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from citeval import memory
from citeval.errors import InputDataError
from citeval.ingest.footprint import merge_memory_bytes, suggested_memory_limit
from citeval.ingest.report import MAX_EXAMPLES
from citeval.ingest.staging import StagedShard, StagedTable

log = logging.getLogger(__name__)


class Merger:
    """One private in-memory DuckDB database, the lookups beside it, and the counts and
    examples of the report on the way.

    Tables live in the main schema (not TEMP) so that other cursors see them.
    """

    def __init__(
        self,
        shards: list[StagedShard],
        *,
        on_duplicate: str,
        memory_limit: str,
        threads: int,
        temp_dir: Path,
    ) -> None:
        import duckdb

        self.shards = shards
        self.on_duplicate = on_duplicate
        self.memory_limit = memory_limit
        self.threads = threads
        self.temp_dir = temp_dir
        self.con = duckdb.connect(
            config={
                "threads": threads,
                "temp_directory": str(temp_dir),
                "preserve_insertion_order": False,
            }
        )
        self.memory_bytes = self.limit_duckdb(memory.duckdb_memory_bytes(memory_limit))
        self.con.execute("SET enable_progress_bar = false")
        self.counts: dict[str, int] = {}
        self.examples: dict[str, list[Any]] = {}
        self.staged: dict[str, StagedTable] = {}  # by the name of its view
        # Set by number_papers(): the deduplicated papers view, whether S2AG abstracts are
        # attached, and the number of papers.
        self.papers = ""
        self.has_abstracts = False
        self.n_papers = 0
        # Set by load_lookups(): every paper_id and the citation counts, in pid order.
        self.ids = pa.array([], pa.string())
        self.n_cited_by = self.n_references = np.zeros(0, dtype=np.int32)

    def sql(self, query: str, step: str | None = None) -> Any:
        started = time.perf_counter()
        result = self.con.execute(query)
        if step:
            log.info("merge: %s (%.1f s)", step, time.perf_counter() - started)
        return result

    def scalar(self, query: str) -> Any:
        # fetchall: a result left unfinished would block the connection's next relation.
        return self.con.execute(query).fetchall()[0][0]

    def limit_duckdb(self, memory_bytes: int) -> int:
        """Set DuckDB's memory limit (at least ``memory.DUCKDB_MIN_MEMORY``); return it."""
        memory_bytes = max(memory.DUCKDB_MIN_MEMORY, memory_bytes)
        self.con.execute(f"SET memory_limit = '{memory_bytes // 2**20}MiB'")
        return memory_bytes

    def close(self) -> None:
        self.con.close()

    # ----------------------------------------------------------------------------------
    # Duplicates

    def _locations(self, view: str, key: str, limit: int) -> list[tuple[int, int]]:
        """The first (shard, line) places where ``key`` occurs, in input order."""
        rows = self.con.execute(
            f"SELECT _file, _line FROM {view} WHERE paper_id = ? ORDER BY _file, _line "
            f"LIMIT {limit}",
            [key],
        ).fetchall()
        shard_of_file = self.staged[view].shard_of_file
        return [(shard_of_file[file], line) for file, line in rows]

    def _where(self, shard: int, line: int) -> str:
        return self.shards[shard].location(line)

    def create_staged_view(self, view: str, table: StagedTable) -> None:
        self.staged[view] = table
        self.sql(f"CREATE VIEW {view} AS {table.sql}")

    def dedupe(self, view: str, what: str) -> str:
        """Resolve repeated paper_ids in ``view`` (a staged view); return the name of the
        deduplicated view."""
        self.sql(
            f"CREATE TABLE {view}_dup AS SELECT paper_id, count(*) AS n "
            f"FROM {view} GROUP BY paper_id HAVING count(*) > 1",
            f"find duplicate {what}",
        )
        dup_ids, extra = self.con.execute(
            f"SELECT count(*), coalesce(sum(n - 1), 0) FROM {view}_dup"
        ).fetchone()
        self.counts[f"duplicate_{what}"] = int(extra)
        self.counts[f"duplicate_{what}_ids"] = int(dup_ids)
        if not dup_ids:
            return view
        first = [
            r[0]
            for r in self.con.execute(
                f"SELECT paper_id FROM {view}_dup ORDER BY paper_id LIMIT {MAX_EXAMPLES}"
            ).fetchall()
        ]
        if self.on_duplicate == "error":
            (shard, line), again = self._locations(view, first[0], 2)
            raise InputDataError(
                f"duplicate {what} id {first[0]!r}, again at {self._where(*again)} "
                f"({dup_ids} ids repeated, {extra} extra records in all); set "
                "ingest.on_duplicate: keep_first to keep the first record of each",
                path=self.shards[shard].report["input"],
                line=line,
                field="paper_id",
            )
        self.examples[f"duplicate_{what}"] = [
            {
                "paper_id": key,
                "locations": [self._where(*at) for at in self._locations(view, key, 3)],
            }
            for key in first
        ]
        # Only the (few) repeated ids go through the window; the bulk is an anti-join.
        self.sql(
            f"CREATE TABLE {view}_losers AS SELECT _file, _line FROM ("
            f"  SELECT _file, _line, row_number() OVER "
            f"    (PARTITION BY paper_id ORDER BY _file, _line) AS rn"
            f"  FROM {view} WHERE paper_id IN (SELECT paper_id FROM {view}_dup)"
            f") WHERE rn > 1",
            f"keep the first of each duplicate {what}",
        )
        self.sql(
            f"CREATE VIEW {view}_kept AS SELECT * FROM {view} v WHERE NOT EXISTS ("
            f"SELECT 1 FROM {view}_losers l WHERE l._file = v._file AND l._line = v._line)"
        )
        return f"{view}_kept"

    # ----------------------------------------------------------------------------------
    # Papers, their numbers and abstracts

    def number_papers(self) -> None:
        """Deduplicate the papers and give each its pid (DuckDB table ``ids``), then attach
        the S2AG abstracts, if any."""
        papers = StagedTable.of(self.shards, "papers", "paper_id, title, abstract, year, fields")
        self.create_staged_view("papers_raw", papers)
        self.papers = self.dedupe("papers_raw", "papers")
        # pid order is paper_id order, so sorting pid pairs sorts by (citing_id, cited_id).
        self.sql(
            "CREATE TABLE ids AS SELECT paper_id, "
            "(row_number() OVER (ORDER BY paper_id) - 1)::INTEGER AS pid "
            f"FROM {self.papers}",
            "number the papers",
        )
        self.n_papers = self.scalar("SELECT count(*) FROM ids")
        needed = merge_memory_bytes(self.n_papers)
        if needed > memory.memory_bytes(self.memory_limit):
            log.warning(
                "merge: %d papers need about %.2f GB whatever the limit, so the merge will "
                "exceed --memory-limit %s (or stop); set jobs.memory_limit to about %gGB",
                self.n_papers,
                needed / 1e9,
                self.memory_limit,
                suggested_memory_limit(self.memory_limit, self.n_papers),
            )
        self.has_abstracts = self._attach_abstracts()

    def _attach_abstracts(self) -> bool:
        """Stage the S2AG abstracts, if any were parsed; return whether there are any."""
        staged = StagedTable.of(self.shards, "abstracts", "paper_id, abstract")
        if staged is None:
            return False
        self.create_staged_view("abstracts_raw", staged)
        abstracts = self.dedupe("abstracts_raw", "abstracts")
        # pid is null for an abstract of an unknown paper.
        self.sql(
            "CREATE TABLE abstracts AS SELECT a.paper_id, ids.pid, a.abstract "
            f"FROM {abstracts} a LEFT JOIN ids USING (paper_id)",
            "collect abstracts",
        )
        unknown = "FROM abstracts WHERE pid IS NULL"
        self.counts["abstract_for_unknown_paper"] = self.scalar(f"SELECT count(*) {unknown}")
        if self.counts["abstract_for_unknown_paper"]:
            self.examples["abstract_for_unknown_paper"] = [
                r[0]
                for r in self.con.execute(
                    f"SELECT paper_id {unknown} ORDER BY paper_id LIMIT {MAX_EXAMPLES}"
                ).fetchall()
            ]
        return True

    def papers_select(self, bounded: bool) -> str:
        """SQL for the deduplicated papers with their abstracts, without counts, unsorted.

        ``bounded`` keeps only the rows whose paper_id is between ``$first`` and
        ``$last``: the staging scan then drops the rows outside before reading their text.
        """
        where = "WHERE paper_id BETWEEN $first AND $last" if bounded else ""
        abstract, join = "p.abstract", ""
        if self.has_abstracts:
            abstract = "coalesce(a.abstract, p.abstract)"
            join = (
                f"LEFT JOIN (SELECT paper_id, abstract FROM abstracts {where}) a "
                "ON a.paper_id = p.paper_id"
            )
        return (
            f"SELECT p.paper_id, p.title, {abstract} AS abstract, p.year, "
            f"coalesce(p.fields, []::VARCHAR[]) AS fields "
            f"FROM (SELECT * FROM {self.papers} {where}) p {join}"
        )

    # ----------------------------------------------------------------------------------
    # The lookups held beside DuckDB

    def lookup_bytes(self) -> int:
        """What ``load_lookups`` holds: the ids' characters and offsets, and two counts.

        Reads DuckDB's ``ids`` table, which ``load_lookups`` drops.
        """
        characters = self.scalar("SELECT coalesce(sum(strlen(paper_id)), 0) FROM ids")
        return int(characters) + 4 * (self.n_papers + 1) + 8 * self.n_papers

    def load_lookups(self) -> None:
        """Hold every paper_id in pid order and one count array per direction, in memory.

        The ids turn the citations' pid pairs into strings; writing the citations fills
        the counts, and writing the papers attaches them by position. Their bytes come
        out of DuckDB's budget, so the merge as a whole stays within ``--memory-limit``.
        """
        held = self.lookup_bytes()
        table = self.con.sql("SELECT paper_id FROM ids ORDER BY pid").to_arrow_table()
        self.ids = table.column("paper_id").combine_chunks()
        # Every later step looks ids up here; DuckDB's table of them would only sit in
        # its budget.
        self.sql("DROP TABLE ids")
        self.n_cited_by = np.zeros(self.n_papers, dtype=np.int32)
        self.n_references = np.zeros(self.n_papers, dtype=np.int32)
        self.memory_bytes = self.limit_duckdb(self.memory_bytes - held)
