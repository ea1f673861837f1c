"""Per-query values of the measures by trec_eval (pytrec_eval), and their mean.

See :mod:`citeval.metrics` for what citeval settles on top of trec_eval; the measures
themselves are declared in :mod:`citeval.measures`.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Mapping, Sequence

import pytrec_eval

from citeval.measures import Measure, evaluated_measures, names, parse_measure
from citeval.metrics.per_query import PerQuery
from citeval.trec import rank_documents

# Integers up to 2**24 are exact in float32, the type trec_eval keeps scores in.
_MAX_RANKED = 2**24


def measures_for(cutoffs: Iterable[int]) -> list[str]:
    """The names a metrics file holds (:func:`citeval.measures.evaluated_measures`): map,
    ndcg, recip_rank, then per cutoff recall, P, f1, ndcg_cut."""
    return names(evaluated_measures(cutoffs))


def _positions(scores: Mapping[str, float]) -> dict[str, float]:
    """``{doc: score}`` rewritten as ``{doc: n - rank}``, which trec_eval orders exactly."""
    ranking = rank_documents(scores)
    if len(ranking) > _MAX_RANKED:
        raise ValueError(f"cannot evaluate more than {_MAX_RANKED} documents for one query")
    n = len(ranking)
    return {doc_id: float(n - rank) for rank, (doc_id, _) in enumerate(ranking)}


def evaluate(
    run: Mapping[str, Mapping[str, float]],
    qrels: Mapping[str, Mapping[str, int]],
    measures: Sequence[str | Measure],
) -> PerQuery:
    """Per-query values ``{qid: {measure: value}}`` for every query in both run and qrels.

    ``measures`` are names (``"recall_30"``) or :class:`~citeval.measures.Measure` objects.
    Keys are in sorted query order; each inner dict, keyed by measure name, follows
    ``measures`` (duplicates dropped). Raises ``ValueError`` on an unknown measure name or
    a NaN score, and ``TypeError`` on a relevance that is not an integer.
    """
    parsed = list(
        dict.fromkeys(m if isinstance(m, Measure) else parse_measure(m) for m in measures)
    )
    shared = sorted(run.keys() & qrels.keys())
    ranked: dict[str, dict[str, float]] = {}
    judged: dict[str, dict[str, int]] = {}
    for qid in shared:
        # operator.index takes numpy integers too, which pytrec_eval refuses, and refuses
        # floats instead of truncating them.
        relevance = {doc_id: operator.index(rel) for doc_id, rel in qrels[qid].items()}
        positions = _positions(run[qid])
        if positions and any(rel > 0 for rel in relevance.values()):
            ranked[qid] = positions
            judged[qid] = relevance
    computed: dict[str, dict[str, float]] = {}
    if ranked:
        evaluator = pytrec_eval.RelevanceEvaluator(
            judged, set().union(*(measure.trec_eval for measure in parsed))
        )
        computed = evaluator.evaluate(ranked)
        if computed.keys() != ranked.keys():
            lost = sorted(ranked.keys() - computed.keys())
            raise RuntimeError(f"pytrec_eval returned no values for queries {lost[:5]}")
    zeros = {measure.name: 0.0 for measure in parsed}
    return {
        qid: (
            {measure.name: measure.value(computed[qid]) for measure in parsed}
            if qid in computed
            else dict(zeros)
        )
        for qid in shared
    }


def mean_over_queries(
    per_query: Mapping[str, Mapping[str, float]],
    queries: Iterable[str] | None = None,
    missing_as_zero: bool = False,
    measures: Sequence[str] | None = None,
) -> dict[str, float]:
    """Mean of each measure over a set of queries.

    ``queries=None`` averages over every query in ``per_query``. Otherwise the set is
    ``queries``: those absent from ``per_query`` are skipped, or count as 0 when
    ``missing_as_zero`` (``trec_eval -c`` with ``queries`` = the qrels' queries).
    ``measures`` defaults to those of the first query averaged. An empty set of queries
    gives NaN for every measure, since the mean is undefined. Sums use ``math.fsum`` so
    the result does not depend on query order.
    """
    if queries is None:
        selected = sorted(per_query)
    else:
        wanted = sorted(set(queries))
        selected = wanted if missing_as_zero else [q for q in wanted if q in per_query]
    if measures is None:
        present = [q for q in selected if q in per_query]
        measures = list(per_query[present[0]]) if present else []
    means: dict[str, float] = {}
    for measure in measures:
        values = []
        for qid in selected:
            row = per_query.get(qid)
            if row is None:
                values.append(0.0)
            elif measure in row:
                values.append(row[measure])
            else:
                raise ValueError(f"query {qid!r} has no value for measure {measure!r}")
        means[measure] = math.fsum(values) / len(values) if values else math.nan
    return means
