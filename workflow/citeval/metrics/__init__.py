"""Retrieval measures from trec_eval (through pytrec_eval), written as per-query TSV.

pytrec_eval runs trec_eval's own code. It computes, per query, ``map``, ``ndcg``,
``ndcg_cut_k``, ``recall_k`` (R@k), ``P_k`` (P@k) and ``recip_rank`` (MRR), with trec_eval's
definitions: a document is relevant when its judged relevance is > 0 (unjudged documents
count as 0), a relevant document's NDCG gain is its relevance level, and every retrieved
document counts (no depth limit).

citeval adds:

* ``f1_k``: 2·P@k·R@k / (P@k + R@k) from trec_eval's ``P_k`` and ``recall_k``, 0 when both
  are 0. Every measure, and how it is computed, is declared in :mod:`citeval.measures`.
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

The code is in :mod:`citeval.metrics.evaluation` (trec_eval) and
:mod:`citeval.metrics.per_query` (the TSV file); the command line in
:mod:`citeval.metrics.cli`.
"""

from citeval.measures import Measure, parse_measure
from citeval.metrics.evaluation import evaluate, mean_over_queries, measures_for
from citeval.metrics.per_query import (
    ALL_QUERIES,
    TSV_HEADER,
    VALUE_FORMAT,
    PerQuery,
    format_per_query_tsv,
    read_per_query_tsv,
    write_per_query_tsv,
)

__all__ = [
    "ALL_QUERIES",
    "TSV_HEADER",
    "VALUE_FORMAT",
    "Measure",
    "PerQuery",
    "evaluate",
    "format_per_query_tsv",
    "mean_over_queries",
    "measures_for",
    "parse_measure",
    "read_per_query_tsv",
    "write_per_query_tsv",
]
