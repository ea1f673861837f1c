"""Read what MDCR construction needs from the pipeline's tables and runs (docs/contracts.md).

* queries: ``samples/field-<split>/queries.parquet`` (``group`` is the field's slug);
* model rankings: ``runs/field-<split>/<slug>.rep0/<model>.trec``, in trec_eval's order;
* citations (OC and IC): ``corpus/citations``; titles, abstracts, years: ``corpus/papers``;
* the prefiltered set and its citation counts (``n_cited_by``, counted by ingest over the
  whole corpus): ``filtered/papers.parquet``.

Every id list comes out sorted (or in ranking order), so construction sees the same
inputs whatever order DuckDB scans the files in.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

import duckdb
import pyarrow as pa

from citeval.collection_list import collection_name, field_slug, field_slugs
from citeval.errors import InputDataError
from citeval.io import parquet_glob
from citeval.layout import MDCR_FILE_SPLIT, MDCR_FILES, mdcr_file_name
from citeval.mdcr.construct import Inputs
from citeval.mdcr.formats import Paper
from citeval.memory import duckdb_memory_setting
from citeval.trec import rank_documents, read_run

FIELD_REP = 0
_HAS_TEXT = (
    "title IS NOT NULL AND trim(title) <> '' AND abstract IS NOT NULL AND trim(abstract) <> ''"
)


class Tables:
    """DuckDB views over the corpus and the prefiltered papers."""

    def __init__(
        self, corpus: Path, filtered: Path, *, memory_limit: str, threads: int = 2
    ) -> None:
        for path in (corpus / "papers", corpus / "citations", filtered):
            if not path.exists():
                raise InputDataError("not found", path=str(path))
        self.con = duckdb.connect(
            config={"memory_limit": duckdb_memory_setting(memory_limit), "threads": threads}
        )
        self.con.execute(
            f"CREATE VIEW papers AS SELECT * FROM read_parquet('{parquet_glob(corpus / 'papers')}')"
        )
        self.con.execute(
            "CREATE VIEW citations AS SELECT citing_id, cited_id FROM "
            f"read_parquet('{parquet_glob(corpus / 'citations')}')"
        )
        self.con.execute(f"CREATE VIEW filtered AS SELECT * FROM read_parquet('{filtered}')")

    def _with_ids(self, name: str, ids: Iterable[str]) -> None:
        self.con.register(name, pa.table({"paper_id": pa.array(sorted(set(ids)), pa.string())}))

    def years(self, ids: Iterable[str]) -> dict[str, int | None]:
        self._with_ids("wanted", ids)
        rows = self.con.execute(
            "SELECT paper_id, year FROM papers SEMI JOIN wanted USING (paper_id)"
        ).fetchall()
        return dict(rows)

    def papers_with_text(self) -> dict[str, int | None]:
        """``{paper_id: year}`` of every corpus paper with a non-empty title and abstract."""
        table = self.con.sql(
            f"SELECT paper_id, year FROM papers WHERE {_HAS_TEXT} ORDER BY paper_id"
        ).to_arrow_table()
        return dict(zip(table["paper_id"].to_pylist(), table["year"].to_pylist(), strict=True))

    def references(self, query_ids: Iterable[str]) -> dict[str, frozenset[str]]:
        """OC_q of every query, over the whole corpus."""
        self._with_ids("wanted", query_ids)
        rows = self.con.execute(
            "SELECT citing_id, cited_id FROM citations c "
            "SEMI JOIN wanted w ON c.citing_id = w.paper_id"
        ).fetchall()
        out: dict[str, set[str]] = defaultdict(set)
        for citing, cited in rows:
            out[citing].add(cited)
        return {paper_id: frozenset(ids) for paper_id, ids in out.items()}

    def neighbours(self, paper_ids: Iterable[str]) -> dict[str, frozenset[str]]:
        """OC_c ∪ IC_c of every paper c in ``paper_ids``."""
        self._with_ids("wanted", paper_ids)
        rows = self.con.execute(
            """
            SELECT c.citing_id AS paper, c.cited_id AS other FROM citations c
            SEMI JOIN wanted w ON c.citing_id = w.paper_id
            UNION ALL
            SELECT c.cited_id AS paper, c.citing_id AS other FROM citations c
            SEMI JOIN wanted w ON c.cited_id = w.paper_id
            """
        ).fetchall()
        out: dict[str, set[str]] = defaultdict(set)
        for paper, other in rows:
            out[paper].add(other)
        return {paper_id: frozenset(ids) for paper_id, ids in out.items()}

    def most_cited(self, field_name: str, depth: int) -> list[str]:
        """The field's ``depth`` most-cited prefiltered papers; ties by paper id ascending."""
        return [
            row[0]
            for row in self.con.execute(
                "SELECT paper_id FROM filtered WHERE list_contains(fields, ?) "
                "ORDER BY n_cited_by DESC, paper_id LIMIT ?",
                [field_name, depth],
            ).fetchall()
        ]

    def prefiltered(self) -> list[str]:
        table = self.con.sql("SELECT paper_id FROM filtered ORDER BY paper_id").to_arrow_table()
        return table["paper_id"].to_pylist()

    def texts(self, ids: Iterable[str]) -> list[Paper]:
        self._with_ids("wanted", ids)
        rows = self.con.execute(
            "SELECT paper_id, title, abstract FROM papers SEMI JOIN wanted USING (paper_id) "
            "ORDER BY paper_id"
        ).fetchall()
        return [Paper(pid, title or "", abstract or "") for pid, title, abstract in rows]


def read_field_queries(samples: Path, fields: Sequence[str]) -> dict[str, list[str]]:
    """``{field name: sorted query ids}`` of a field-level sample split."""
    path = samples / "queries.parquet"
    if not path.exists():
        raise InputDataError("not found", path=str(path))
    by_slug = field_slugs(fields, "--fields")
    rows = duckdb.sql(f"SELECT \"group\", query_id FROM read_parquet('{path}') ORDER BY 1, 2")
    queries: dict[str, list[str]] = {}
    for slug, query_id in rows.fetchall():
        if slug not in by_slug:
            raise InputDataError(
                f"sample group {slug!r} matches none of the fields {list(fields)}",
                path=str(path),
                field="group",
            )
        queries.setdefault(by_slug[slug], []).append(query_id)
    return queries


def run_path(runs: Path, field_name: str, model: str) -> Path:
    return runs / collection_name(field_slug(field_name), FIELD_REP) / f"{model}.trec"


def read_rankings(
    runs: Path, queries: dict[str, list[str]], models: Sequence[str]
) -> dict[str, dict[str, list[str]]]:
    """``{model: {query: ranked ids}}`` from each field's rep-0 runs, in trec_eval's order."""
    rankings: dict[str, dict[str, list[str]]] = {}
    for model in models:
        per_query: dict[str, list[str]] = {}
        for field_name, query_ids in queries.items():
            path = run_path(runs, field_name, model)
            if not path.exists():
                raise InputDataError(f"no {model} run for field {field_name!r}", path=str(path))
            run = read_run(path)
            for query_id in query_ids:
                per_query[query_id] = [doc for doc, _ in rank_documents(run.get(query_id, {}))]
        rankings[model] = per_query
    return rankings


def read_inputs(
    tables: Tables,
    queries: dict[str, list[str]],
    rankings: dict[str, dict[str, list[str]]],
    most_cited_depth: int,
) -> Inputs:
    all_queries = [q for ids in queries.values() for q in ids]
    cited = tables.references(all_queries)
    cited_papers = {c for ids in cited.values() for c in ids}
    return Inputs(
        queries=queries,
        query_years=tables.years(all_queries),
        cited=cited,
        neighbours=tables.neighbours(cited_papers),
        rankings=rankings,
        most_cited={name: tables.most_cited(name, most_cited_depth) for name in sorted(queries)},
        prefiltered=tables.prefiltered(),
        papers=tables.papers_with_text(),
    )


def output_paths(output_dir: str | os.PathLike, split: str) -> dict[str, Path]:
    """The files ``build`` writes for a sample split, named as the published files are."""
    if split not in MDCR_FILE_SPLIT:
        raise ValueError(f"MDCR has no split {split!r} (test or valid)")
    root = Path(output_dir)
    return {role: root / mdcr_file_name(split, suffix) for role, suffix in MDCR_FILES.items()}
