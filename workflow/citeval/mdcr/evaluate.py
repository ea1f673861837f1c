"""The MDCR evaluator: MAP, NDCG and R@5 per field and per candidate type.

It reproduces the published evaluator (github zoranmedic/mdcr ``evaluate.py``): for each
field, every listed candidate of a query is judged 1 if its type is ``true`` and 0
otherwise; trec_eval (through pytrec_eval) computes ``map``, ``ndcg`` and ``recall_5`` per
query (:data:`citeval.measures.MDCR_MEASURES`); a field's value is the mean over its
queries, and the overall value (field ``AVG``) is the unweighted mean over fields. Values
are reported ×100.

What citeval settles on top:

* Ranking. Pairs are ranked by :func:`citeval.metrics.evaluate`, which hands trec_eval
  rank positions, so tied scores fall in trec_eval's document-id order exactly.
* Candidate-type subsets (the paper's Table 4): for a type ``t`` each query keeps its
  positives plus its negatives of type ``t`` only. Queries whose entry has no ``t`` key
  are left out of that subset; a query with an empty ``t`` list stays in, ranked on its
  positives alone. A field without any query of type ``t`` has no row for ``t``, and the
  ``AVG`` row averages the fields that do.
* The subset ``all`` is the whole candidate list (the paper's Table 3).
* A score missing for any listed pair is an error naming the pair; scores of pairs the
  benchmark does not list are ignored (one scores file may serve several splits).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from citeval.io import write_text
from citeval.mdcr.formats import (
    POSITIVE_TYPE,
    Benchmark,
    check_scores_cover,
    negative_types,
    score_key,
)
from citeval.measures import MDCR_MEASURES, names
from citeval.metrics import evaluate as trec_evaluate
from citeval.metrics import mean_over_queries

MEASURES = tuple(names(MDCR_MEASURES))
"""The names of :data:`citeval.measures.MDCR_MEASURES`: the columns and keys of the values."""
ALL_CANDIDATES = "all"
MEAN_FIELD = "AVG"
TSV_COLUMNS = ("candidates", "field", "n_queries", *MEASURES)
QUERY_TSV_COLUMNS = ("candidates", "field", "query_id", *MEASURES)
VALUE_FORMAT = "%.10f"


PerQuery = dict[tuple[str, str], dict[str, dict[str, float]]]
"""(candidate subset, field) -> query id -> measure -> value (a fraction, not ×100)."""


@dataclass(frozen=True)
class Row:
    """One line of the results: a candidate subset, a field (or ``AVG``) and its values ×100."""

    candidates: str
    field: str
    n_queries: int
    values: dict[str, float]


def _subset(candidates: Mapping[str, list[str]], kind: str) -> list[str] | None:
    """The candidate ids a query ranks in subset ``kind``, or None if it is not in it."""
    if kind == ALL_CANDIDATES:
        return [c for ids in candidates.values() for c in ids]
    if kind not in candidates:
        return None
    return [*candidates[POSITIVE_TYPE], *candidates[kind]]


def evaluate_field(
    queries: Mapping[str, Mapping[str, list[str]]],
    scores: Mapping[str, float],
    kind: str = ALL_CANDIDATES,
) -> dict[str, dict[str, float]]:
    """Per-query values (fractions, not ×100) of one field for subset ``kind``."""
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for query_id, candidates in queries.items():
        ids = _subset(candidates, kind)
        if ids is None:
            continue
        positives = set(candidates[POSITIVE_TYPE])
        run[query_id] = {c: scores[score_key(query_id, c)] for c in ids}
        qrels[query_id] = {c: int(c in positives) for c in ids}
    # run and qrels share their queries, so every query gets a row, in sorted order; one
    # with no candidate at all has nothing to rank and scores 0 (citeval.metrics.evaluate).
    return trec_evaluate(run, qrels, MEASURES)


def evaluate_queries(
    benchmark: Benchmark,
    scores: Mapping[str, float],
    kinds: Sequence[str] | None = None,
    scores_path: str | os.PathLike | None = None,
) -> PerQuery:
    """Per-query values for every subset in ``kinds`` (default: ``all`` then each type).

    Keys come in subset order, fields sorted within a subset; a field without any query in
    a subset has no key.
    """
    check_scores_cover(benchmark, scores, scores_path)
    if kinds is None:
        kinds = [ALL_CANDIDATES, *negative_types(benchmark)]
    per_query: PerQuery = {}
    for kind in kinds:
        for field_name in sorted(benchmark):
            values = evaluate_field(benchmark[field_name], scores, kind)
            if values:
                per_query[(kind, field_name)] = values
    return per_query


def rows_of(per_query: PerQuery) -> list[Row]:
    """The rows (values ×100) of :func:`evaluate_queries`' values: fields, then ``AVG``."""
    rows: list[Row] = []
    kinds = list(dict.fromkeys(kind for kind, _ in per_query))
    for kind in kinds:
        field_means: list[dict[str, float]] = []
        total_queries = 0
        for (k, field_name), values in per_query.items():
            if k != kind:
                continue
            mean = mean_over_queries(values, measures=MEASURES)
            field_means.append(mean)
            total_queries += len(values)
            rows.append(Row(kind, field_name, len(values), {m: 100 * mean[m] for m in MEASURES}))
        overall = {
            m: 100 * math.fsum(mean[m] for mean in field_means) / len(field_means) for m in MEASURES
        }
        rows.append(Row(kind, MEAN_FIELD, total_queries, overall))
    return rows


def evaluate_benchmark(
    benchmark: Benchmark,
    scores: Mapping[str, float],
    kinds: Sequence[str] | None = None,
    scores_path: str | os.PathLike | None = None,
) -> list[Row]:
    """Rows for every subset in ``kinds`` (default: ``all`` then each negative type).

    Within a subset, the fields come in sorted order followed by ``AVG``.
    """
    return rows_of(evaluate_queries(benchmark, scores, kinds, scores_path))


def format_rows_tsv(rows: Sequence[Row]) -> str:
    """TSV with header :data:`TSV_COLUMNS`; values ×100 printed with ten decimals."""
    lines = ["\t".join(TSV_COLUMNS)]
    for row in rows:
        values = [VALUE_FORMAT % row.values[m] for m in MEASURES]
        lines.append("\t".join([row.candidates, row.field, str(row.n_queries), *values]))
    return "\n".join(lines) + "\n"


def write_rows_tsv(rows: Sequence[Row], path: str | os.PathLike) -> None:
    write_text(format_rows_tsv(rows), path)


def format_queries_tsv(per_query: PerQuery) -> str:
    """TSV with header :data:`QUERY_TSV_COLUMNS`: one line per (subset, field, query).

    In :func:`evaluate_queries`' order, query ids sorted; values ×100 with ten decimals.
    """
    lines = ["\t".join(QUERY_TSV_COLUMNS)]
    for (kind, field_name), values in per_query.items():
        for query_id in sorted(values):
            cells = [VALUE_FORMAT % (100 * values[query_id][m]) for m in MEASURES]
            lines.append("\t".join([kind, field_name, query_id, *cells]))
    return "\n".join(lines) + "\n"


def write_queries_tsv(per_query: PerQuery, path: str | os.PathLike) -> None:
    write_text(format_queries_tsv(per_query), path)


def format_summary(rows: Sequence[Row]) -> str:
    """The overall lines, as the published evaluator prints them: ``AVG map 32.5704``."""
    lines = []
    for row in rows:
        if row.field == MEAN_FIELD:
            prefix = "" if row.candidates == ALL_CANDIDATES else f"[{row.candidates}] "
            lines += [f"{prefix}AVG {m} {row.values[m]:.4f}" for m in MEASURES]
    return "\n".join(lines) + "\n"
