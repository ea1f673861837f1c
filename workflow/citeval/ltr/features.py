"""The learning-to-rank features, each declared once (docs/ltr.md has the table).

A feature describes one (query, candidate) pair among the *candidates* the model orders:
a first stage's top K on a collection, or every candidate MDCR lists for a query. Two
families:

* per feature system (:data:`SYSTEM_FEATURES`, named ``<system>.<feature>``): the system's
  score for the pair, its rank among the candidates, and whether the system scored the
  pair at all. A candidate outside the system's run (a run holds its top ``retrieval.k``)
  takes the declared default: the lowest score the system gave that query (nothing it
  left out can score higher), a rank after every scored candidate, and the missing flag.
* per pair of papers (:data:`PAPER_FEATURES`): how often the candidate was cited before
  the query's year in the training graph, its year and age at the query's year, and the
  two papers' lengths.

No feature reads a qrels file or the query's own references: the citation count comes
from the training graph (:mod:`citeval.train.graph`: every test and validation query is
removed with its edges) and counts only citing papers published before the query's year,
so a training query's own citations (published in its year) are never counted either.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from citeval.trec import rank_documents

# {query_id: {candidate_id: score}}: one system's scores (a run, or MDCR scores).
Scores = Mapping[str, Mapping[str, float]]
# {query_id: candidate ids}: the pairs a model orders, each query's in the order given.
Candidates = Mapping[str, Sequence[str]]


@dataclass(frozen=True)
class Feature:
    """One feature: its name in the model file and the tables, and what it is."""

    name: str
    description: str


SCORE = Feature("score", "the system's score (absent: the lowest it gave the query)")
RANK = Feature("rank", "rank among the candidates by that score (absent: after all scored)")
MISSING = Feature("missing", "1 where the system did not score the pair, else 0")
SYSTEM_FEATURES = (SCORE, RANK, MISSING)

CITED_BEFORE = Feature(
    "cited_before",
    "the candidate's citations in the training graph from papers published before the query's year",
)
YEAR = Feature("year", "the candidate's publication year (absent: missing)")
AGE = Feature(
    "age", "the query's year (a context's: its paper's) minus the candidate's (absent: missing)"
)
QUERY_LENGTH = Feature(
    "query_length",
    "words in the query's title and abstract (a context: its text and its paper's abstract)",
)
CANDIDATE_LENGTH = Feature("candidate_length", "words in the candidate's title and abstract")
PAPER_FEATURES = (CITED_BEFORE, YEAR, AGE, QUERY_LENGTH, CANDIDATE_LENGTH)


def system_feature(system: str, feature: Feature) -> str:
    return f"{system}.{feature.name}"


def feature_names(systems: Sequence[str]) -> list[str]:
    """Every feature's column name, in the model's order."""
    per_system = [system_feature(s, f) for s in systems for f in SYSTEM_FEATURES]
    return per_system + [feature.name for feature in PAPER_FEATURES]


@dataclass(frozen=True)
class PaperFacts:
    """What the paper features read of each paper: its year (None: unknown) and length."""

    years: Mapping[str, int | None]
    lengths: Mapping[str, int]


@dataclass(frozen=True)
class CitingYears:
    """For each candidate, the sorted years of the papers citing it in the training graph
    (citing papers of unknown year are left out: nothing says they came before)."""

    years: Mapping[str, np.ndarray]

    def cited_before(self, paper_id: str, year: int | None) -> int:
        if year is None:
            return 0
        years = self.years.get(paper_id)
        if years is None:
            return 0
        return int(np.searchsorted(years, year, side="left"))


def _system_columns(candidates: Sequence[str], scores: Mapping[str, float]) -> np.ndarray:
    """The three per-system columns of one query's candidates."""
    floor = min(scores.values()) if scores else 0.0
    scored = [doc for doc in candidates if doc in scores]
    order = rank_documents({doc: scores[doc] for doc in scored})
    rank_of = {doc: position for position, (doc, _) in enumerate(order, start=1)}
    unranked = len(scored) + 1
    columns = np.empty((len(candidates), len(SYSTEM_FEATURES)))
    for row, doc in enumerate(candidates):
        present = doc in scores
        columns[row] = (
            scores[doc] if present else floor,
            rank_of[doc] if present else unranked,
            0.0 if present else 1.0,
        )
    return columns


def feature_matrix(
    candidates: Candidates,
    system_scores: Mapping[str, Scores],
    papers: PaperFacts,
    citing: CitingYears,
) -> np.ndarray:
    """One row per (query, candidate), queries sorted, each query's candidates in the given
    order; the columns of :func:`feature_names` over ``system_scores``' order."""
    blocks = []
    for query_id in sorted(candidates):
        docs = list(candidates[query_id])
        if not docs:
            continue
        per_system = [
            _system_columns(docs, scores.get(query_id, {})) for scores in system_scores.values()
        ]
        query_year = papers.years.get(query_id)
        paper_columns = np.array(
            [
                [
                    citing.cited_before(doc, query_year),
                    _or_nan(papers.years.get(doc)),
                    _difference(query_year, papers.years.get(doc)),
                    papers.lengths.get(query_id, 0),
                    papers.lengths.get(doc, 0),
                ]
                for doc in docs
            ],
            dtype=float,
        )
        blocks.append(np.hstack([*per_system, paper_columns]))
    width = len(system_scores) * len(SYSTEM_FEATURES) + len(PAPER_FEATURES)
    return np.vstack(blocks) if blocks else np.empty((0, width))


def _or_nan(value: int | None) -> float:
    return math.nan if value is None else float(value)


def _difference(query_year: int | None, year: int | None) -> float:
    return math.nan if query_year is None or year is None else float(query_year - year)


def text_length(title: str | None, abstract: str | None) -> int:
    return len((title or "").split()) + len((abstract or "").split())


def read_paper_facts(papers_dir: str | os.PathLike, paper_ids: Iterable[str]) -> PaperFacts:
    """Year and length of each of ``paper_ids`` from the corpus's papers (parquet)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    wanted = pa.array(sorted(set(paper_ids)), pa.string())
    table = ds.dataset(str(papers_dir), format="parquet").to_table(
        columns=["paper_id", "title", "abstract", "year"],
        filter=pc.field("paper_id").isin(wanted),
    )
    years: dict[str, int | None] = {}
    lengths: dict[str, int] = {}
    for row in table.to_pylist():
        years[row["paper_id"]] = row["year"]
        lengths[row["paper_id"]] = text_length(row["title"], row["abstract"])
    return PaperFacts(years, lengths)


def read_citing_years(
    graph_dir: str | os.PathLike,
    papers_dir: str | os.PathLike,
    cited_ids: Iterable[str],
    memory_limit: str,
) -> CitingYears:
    """The years of the papers citing each of ``cited_ids`` in the training graph
    (``nodes.parquet``: the row is the node number; ``edges.parquet``: citing, cited),
    joined by DuckDB within ``memory_limit`` (the config's ``jobs.memory_limit``)."""
    import duckdb
    import pyarrow as pa

    from citeval.io import parquet_glob
    from citeval.memory import duckdb_memory_setting

    wanted = pa.table({"paper_id": pa.array(sorted(set(cited_ids)), pa.string())})
    connection = duckdb.connect(config={"memory_limit": duckdb_memory_setting(memory_limit)})
    try:
        connection.register("wanted", wanted)
        rows = connection.execute(
            """
            WITH nodes AS (
                SELECT paper_id, file_row_number AS node
                FROM read_parquet(?, file_row_number = true)
            ),
            cited AS (
                SELECT nodes.node, nodes.paper_id FROM nodes JOIN wanted USING (paper_id)
            )
            SELECT cited.paper_id, papers.year
            FROM read_parquet(?) AS edges
            JOIN cited ON edges.cited = cited.node
            JOIN nodes AS citing ON edges.citing = citing.node
            JOIN read_parquet(?) AS papers ON papers.paper_id = citing.paper_id
            WHERE papers.year IS NOT NULL
            ORDER BY cited.paper_id, papers.year
            """,
            [
                f"{graph_dir}/nodes.parquet",
                f"{graph_dir}/edges.parquet",
                parquet_glob(papers_dir),
            ],
        ).fetchall()
    finally:
        connection.close()
    grouped: dict[str, list[int]] = {}
    for paper_id, year in rows:
        grouped.setdefault(paper_id, []).append(int(year))
    return CitingYears({paper_id: np.asarray(years) for paper_id, years in grouped.items()})


def read_contexts(
    query_papers_dir: str | os.PathLike, query_ids: Iterable[str]
) -> list[dict[str, str]]:
    """The local task's queries (``query_papers/``: ``paper_id`` the context id, ``title``
    the context, ``abstract`` its citing paper's, ``citing_id``)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    wanted = pa.array(sorted(set(query_ids)), pa.string())
    return (
        ds.dataset(str(query_papers_dir), format="parquet")
        .to_table(
            columns=["paper_id", "title", "abstract", "citing_id"],
            filter=pc.field("paper_id").isin(wanted),
        )
        .to_pylist()
    )


FeatureReader = Callable[[Candidates], tuple[PaperFacts, CitingYears]]


def paper_reader(
    graph_dir: str | os.PathLike,
    papers_dir: str | os.PathLike,
    query_papers_dir: str | os.PathLike | None,
    memory_limit: str,
) -> FeatureReader:
    """What the paper features need for a set of candidates, read from the corpus and the
    training graph; the queries from ``query_papers_dir`` where they are contexts (None:
    the corpus's papers)."""

    def read(candidates: Candidates) -> tuple[PaperFacts, CitingYears]:
        docs = {doc for docs in candidates.values() for doc in docs}
        if query_papers_dir is None:
            facts = read_paper_facts(papers_dir, docs | set(candidates))
        else:
            # A context's year is its citing paper's, its length its text's and its
            # paper's abstract's: one read of the corpus for the candidates and those papers.
            contexts = read_contexts(query_papers_dir, candidates)
            papers = read_paper_facts(papers_dir, docs | {row["citing_id"] for row in contexts})
            years = {row["paper_id"]: papers.years.get(row["citing_id"]) for row in contexts}
            lengths = {
                row["paper_id"]: text_length(row["title"], row["abstract"]) for row in contexts
            }
            facts = PaperFacts({**papers.years, **years}, {**papers.lengths, **lengths})
        return facts, read_citing_years(graph_dir, papers_dir, docs, memory_limit)

    return read
