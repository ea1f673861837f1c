"""The citation data a sampler draws from: DuckDB views over the prefiltered papers, the
corpus and its citation graph, and the query exclusion list.

The *candidates* are the prefiltered papers published in or before the query year; an
*eligible query* is a prefiltered paper of the query years, not excluded, that cites at
least ``min_query_references`` candidates (see :mod:`citeval.sample`). Every id list comes
out sorted.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import duckdb
import pyarrow as pa

from citeval.errors import InputDataError
from citeval.io import parquet_glob


class CitationData:
    """DuckDB views over the prefiltered papers, the corpus and its citation graph."""

    def __init__(
        self,
        filtered: Path,
        corpus: Path,
        *,
        query_year: int,
        first_query_year: int | None = None,
        excluded_ids: set[str],
        min_query_references: int,
        memory_limit: str,
        threads: int,
    ) -> None:
        first_year = query_year if first_query_year is None else first_query_year
        self.con = duckdb.connect(config={"memory_limit": memory_limit, "threads": threads})
        self.con.execute(f"CREATE VIEW filtered AS SELECT * FROM read_parquet('{filtered}')")
        self.con.execute(
            "CREATE VIEW corpus_papers AS SELECT paper_id, fields FROM "
            f"read_parquet('{parquet_glob(corpus / 'papers')}')"
        )
        self.con.execute(
            "CREATE VIEW citations AS SELECT citing_id, cited_id FROM "
            f"read_parquet('{parquet_glob(corpus / 'citations')}')"
        )
        self.con.execute(
            "CREATE TABLE candidates AS SELECT paper_id FROM filtered "
            f"WHERE year <= {int(query_year)} ORDER BY paper_id"
        )
        self.con.register(
            "excluded_arrow", pa.table({"paper_id": pa.array(sorted(excluded_ids), pa.string())})
        )
        # References of every potential query that land among the candidates; queries
        # without enough of them cannot be evaluated and are not eligible.
        self.con.execute(
            f"""
            CREATE TABLE query_refs AS
            SELECT c.citing_id AS query_id, c.cited_id
            FROM citations c
            JOIN (SELECT paper_id FROM filtered
                  WHERE year BETWEEN {int(first_year)} AND {int(query_year)}
                  AND paper_id NOT IN (SELECT paper_id FROM excluded_arrow)) q
              ON c.citing_id = q.paper_id
            SEMI JOIN candidates cand ON c.cited_id = cand.paper_id
            """
        )
        self.con.execute(
            f"""
            CREATE TABLE eligible AS
            SELECT query_id FROM query_refs GROUP BY query_id
            HAVING count(*) >= {int(min_query_references)} ORDER BY query_id
            """
        )
        self.candidate_ids: pa.Array = self._ids("SELECT paper_id FROM candidates")

    def _ids(self, sql: str) -> pa.Array:
        table = self.con.sql(f"SELECT * FROM ({sql}) ORDER BY 1").to_arrow_table()
        return table.column(0).combine_chunks().cast(pa.string())

    def eligible_queries(self, field_name: str | None = None) -> pa.Array:
        if field_name is None:
            return self._ids("SELECT query_id FROM eligible")
        return self._ids(
            "SELECT e.query_id FROM eligible e JOIN filtered f ON e.query_id = f.paper_id "
            "WHERE list_contains(f.fields, $field)".replace("$field", _sql_string(field_name))
        )

    def references(self, query_ids: Sequence[str]) -> dict[str, list[str]]:
        self.con.register(
            "selected_queries", pa.table({"query_id": pa.array(query_ids, pa.string())})
        )
        rows = self.con.execute(
            "SELECT r.query_id, r.cited_id FROM query_refs r "
            "SEMI JOIN selected_queries s ON r.query_id = s.query_id "
            "ORDER BY r.query_id, r.cited_id"
        ).fetchall()
        self.con.unregister("selected_queries")
        references: dict[str, list[str]] = {query_id: [] for query_id in query_ids}
        for query_id, cited_id in rows:
            references[query_id].append(cited_id)
        return references

    def field_cited_set(self, field_name: str) -> pa.Array:
        return self._ids(
            f"""
            SELECT DISTINCT c.cited_id FROM citations c
            SEMI JOIN (SELECT paper_id FROM corpus_papers
                       WHERE list_contains(fields, {_sql_string(field_name)})) p
              ON c.citing_id = p.paper_id
            SEMI JOIN candidates cand ON c.cited_id = cand.paper_id
            """
        )


def _sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def read_excluded_ids(path: str | None) -> set[str]:
    if not path:
        return set()
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise InputDataError(f"cannot read the query exclusion list: {error}", path=path) from None
    return {line.strip() for line in text.splitlines() if line.strip()}
