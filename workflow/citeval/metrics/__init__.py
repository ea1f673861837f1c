"""Retrieval measures from trec_eval (through pytrec_eval), written as per-query TSV.

pytrec_eval runs trec_eval's own code. It computes, per query, ``map``, ``ndcg``,
``ndcg_cut_k``, ``recall_k`` (R@k), ``P_k`` (P@k) and ``recip_rank`` (MRR), with trec_eval's
definitions: a document is relevant when its judged relevance is > 0 (unjudged documents
count as 0), a relevant document's NDCG gain is its relevance level, and every retrieved
document counts (no depth limit).

citeval adds:

* ``f1_k``: 2·P@k·R@k / (P@k + R@k) from trec_eval's ``P_k`` and ``recall_k``, 0 when both
  are 0.
* The ranking. Each query's documents are ranked as the TREC run files define it
  (:func:`citeval.trec.rank_documents`: score descending, ties by document id descending
  as strings; the rank column plays no part). That is trec_eval's order, but trec_eval
  holds scores as single-precision floats, so float64 scores that differ by less than
  float32 can resolve would tie there and be reordered by document id. pytrec_eval is
  therefore given each document's position (n, n-1, ..., 1) as its score, which every
  ranking of up to 2**24 documents per query keeps exact.
* The query set. :func:`evaluate` returns a value for every query that is both in the run
  and in the qrels; queries only in the run are ignored. A query in the run with no
  documents, or in the qrels with no relevant document, scores 0 on every measure (as in
  trec_eval); such queries are not handed to pytrec_eval, so they never depend on how it
  treats an empty ranking or judgements without a relevant document. Queries only in the
  qrels are left out (trec_eval's default); :func:`mean_over_queries` with
  ``missing_as_zero=True``, or ``--missing-as-zero``, counts them as 0, like
  ``trec_eval -c``.
* The mean over queries and the per-query TSV file (:func:`format_per_query_tsv`).
"""

from __future__ import annotations

import math
import operator
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import pytrec_eval

from citeval.errors import InputDataError
from citeval.io import write_text
from citeval.trec import rank_documents

PerQuery = dict[str, dict[str, float]]

ALL_QUERIES = "all"
TSV_HEADER = ("query_id", "measure", "value")
VALUE_FORMAT = "%.10f"

_PLAIN_MEASURES = ("map", "ndcg", "recip_rank")
_CUTOFF_MEASURES = ("ndcg_cut", "recall", "P", "f1")
_MEASURE_RE = re.compile(r"^(?P<name>ndcg_cut|recall|P|f1)_(?P<k>[0-9]+)$")
# Integers up to 2**24 are exact in float32, the type trec_eval keeps scores in.
_MAX_RANKED = 2**24


@dataclass(frozen=True)
class Measure:
    """A parsed measure name: ``name`` (e.g. ``"recall"``) and its cutoff, if any."""

    name: str
    k: int | None = None

    def __str__(self) -> str:
        return self.name if self.k is None else f"{self.name}_{self.k}"


def parse_measure(text: str) -> Measure:
    """Parse ``"map"``, ``"ndcg"``, ``"recip_rank"`` or ``"<name>_<k>"`` (k >= 1)."""
    if text in _PLAIN_MEASURES:
        return Measure(text)
    match = _MEASURE_RE.match(text)
    if match is None or int(match["k"]) < 1 or str(int(match["k"])) != match["k"]:
        supported = ", ".join([*_PLAIN_MEASURES, *(f"{m}_<k>" for m in _CUTOFF_MEASURES)])
        raise ValueError(f"unknown measure {text!r}; supported: {supported}")
    return Measure(match["name"], int(match["k"]))


def measures_for(cutoffs: Iterable[int]) -> list[str]:
    """The default measure set: map, ndcg, recip_rank, then per cutoff recall, P, f1, ndcg_cut."""
    names = list(_PLAIN_MEASURES)
    for k in sorted(set(cutoffs)):
        if k < 1:
            raise ValueError(f"cutoffs must be >= 1, got {k}")
        names += [f"recall_{k}", f"P_{k}", f"f1_{k}", f"ndcg_cut_{k}"]
    return names


def _trec_eval_request(measures: Sequence[Measure]) -> set[str]:
    """pytrec_eval's names (``"P.10"``) for what ``measures`` need; f1 needs P and recall."""
    request: set[str] = set()
    for measure in measures:
        if measure.k is None:
            request.add(measure.name)
        elif measure.name == "f1":
            request |= {f"P.{measure.k}", f"recall.{measure.k}"}
        else:
            request.add(f"{measure.name}.{measure.k}")
    return request


def _f1(precision: float, recall: float) -> float:
    both = precision + recall
    return 2.0 * precision * recall / both if both > 0 else 0.0


def _value(measure: Measure, values: Mapping[str, float]) -> float:
    if measure.name == "f1":
        return _f1(values[f"P_{measure.k}"], values[f"recall_{measure.k}"])
    return values[str(measure)]


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
    measures: Sequence[str],
) -> PerQuery:
    """Per-query values ``{qid: {measure: value}}`` for every query in both run and qrels.

    Keys are in sorted query order; each inner dict follows ``measures`` (duplicates
    dropped). Raises ``ValueError`` on an unknown measure name or a NaN score, and
    ``TypeError`` on a relevance that is not an integer.
    """
    parsed = list(dict.fromkeys(parse_measure(name) for name in measures))
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
        evaluator = pytrec_eval.RelevanceEvaluator(judged, _trec_eval_request(parsed))
        computed = evaluator.evaluate(ranked)
        if computed.keys() != ranked.keys():
            lost = sorted(ranked.keys() - computed.keys())
            raise RuntimeError(f"pytrec_eval returned no values for queries {lost[:5]}")
    zeros = {str(measure): 0.0 for measure in parsed}
    return {
        qid: (
            {str(measure): _value(measure, computed[qid]) for measure in parsed}
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


def format_per_query_tsv(
    per_query: Mapping[str, Mapping[str, float]], mean: Mapping[str, float]
) -> str:
    """TSV text: header, rows sorted by (query_id, measure), then the ``all`` rows.

    Values are written as ``%.10f``: far below the 1e-6 tolerance of any later
    aggregation, yet short and immune to last-bit differences between platforms.
    """
    if ALL_QUERIES in per_query:
        raise ValueError(f"query id {ALL_QUERIES!r} is reserved for the mean")
    lines = ["\t".join(TSV_HEADER) + "\n"]
    for qid in sorted(per_query):
        for measure in sorted(per_query[qid]):
            lines.append(f"{qid}\t{measure}\t{VALUE_FORMAT % per_query[qid][measure]}\n")
    for measure in sorted(mean):
        lines.append(f"{ALL_QUERIES}\t{measure}\t{VALUE_FORMAT % mean[measure]}\n")
    return "".join(lines)


def write_per_query_tsv(
    per_query: Mapping[str, Mapping[str, float]],
    mean: Mapping[str, float],
    path: str | os.PathLike,
) -> None:
    """Write :func:`format_per_query_tsv` atomically."""
    text = format_per_query_tsv(per_query, mean)
    write_text(text, path)


def read_per_query_tsv(path: str | os.PathLike) -> PerQuery:
    """Read a per-query TSV back into ``{qid: {measure: value}}``; the mean is key ``all``.

    Raises :class:`InputDataError` naming ``file:line`` on a wrong header, a line without
    three fields, a value that is not a number, or a repeated (query_id, measure).
    """
    where = str(path)
    table: PerQuery = {}
    try:
        with open(path, encoding="utf-8") as handle:
            header = handle.readline().rstrip("\n")
            expected = "\t".join(TSV_HEADER)
            if header != expected:
                raise InputDataError(
                    f"expected header {expected!r}, got {header!r}",
                    path=where,
                    line=1,
                )
            for number, line in enumerate(handle, start=2):
                line = line.rstrip("\n")
                if not line:
                    continue
                fields = line.split("\t")
                if len(fields) != len(TSV_HEADER):
                    raise InputDataError(
                        f"expected 3 tab-separated fields, got {len(fields)}",
                        path=where,
                        line=number,
                    )
                qid, measure, text = fields
                try:
                    value = float(text)
                except ValueError:
                    raise InputDataError(
                        f"value is not a number: {text!r}", path=where, line=number, field="value"
                    ) from None
                row = table.setdefault(qid, {})
                if measure in row:
                    raise InputDataError(
                        f"duplicate value for query {qid!r}, measure {measure!r}",
                        path=where,
                        line=number,
                    )
                row[measure] = value
    except OSError as error:
        raise InputDataError(f"cannot read: {error.strerror}", path=where) from error
    return table
