"""A user's TREC run of one collection, checked against the collection and imported.

The run must rank the collection's pool for the collection's queries, as a built-in
system's run does: every line a query of the collection and a paper of its pool, each
(query, paper) once, every score a finite number. A query the run has no line for is an
error, or (``missing_queries="zero"``) a miss counted in the report, which the metrics
stage scores 0 as it does a built-in run's empty query. The imported run is cut at the
pipeline's depth in trec_eval's order, so that its measures are comparable with the
built-in systems' (MAP over 1,000 documents is not MAP over 100).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from typing import Any

from citeval.errors import InputDataError
from citeval.trec import Run, first_line, read_run

MISSING_QUERIES = ("error", "zero")
# Ids named in an error or a report: enough to find the problem, not a dump.
EXAMPLES = 5


def import_run(
    path: str | os.PathLike,
    query_ids: Iterable[str],
    pool_ids: Iterable[str],
    *,
    k: int,
    missing_queries: str = "error",
    collection: str = "the collection",
) -> tuple[Run, dict[str, Any]]:
    """The run at ``path``, checked against a collection; also a report of what it held.

    Raises :class:`InputDataError` naming ``file:line`` and the query or paper on a
    malformed line (:func:`citeval.trec.read_run`), a score that is not finite, a query
    outside the collection, a paper outside its pool, and, unless ``missing_queries`` is
    ``zero``, a collection query without a line.
    """
    if missing_queries not in MISSING_QUERIES:
        raise ValueError(f"missing_queries must be one of {MISSING_QUERIES}")
    where = str(path)
    run = read_run(path)
    queries = set(query_ids)
    pool = set(pool_ids)
    lines = 0
    for qid, docs in run.items():
        if qid not in queries:
            raise InputDataError(
                f"query {qid!r} is not a query of {collection}",
                path=where,
                line=first_line(path, qid),
            )
        lines += len(docs)
        for doc_id, score in docs.items():
            if doc_id not in pool:
                raise InputDataError(
                    f"paper {doc_id!r} (query {qid!r}) is not in the pool of {collection}",
                    path=where,
                    line=first_line(path, qid, doc_id),
                )
            if not math.isfinite(score):
                raise InputDataError(
                    f"score of paper {doc_id!r} (query {qid!r}) is not finite: {score!r}",
                    path=where,
                    line=first_line(path, qid, doc_id),
                    field="score",
                )
    missing = sorted(queries - run.keys())
    if missing and missing_queries == "error":
        raise InputDataError(
            f"{len(missing)} of {len(queries)} queries of {collection} have no line, e.g. "
            f"{missing[:EXAMPLES]}; to count them as misses (scoring 0), set the system's "
            "missing_queries: zero",
            path=where,
        )
    report = {
        "input": where,
        "collection": collection,
        "queries": len(queries),
        "pool_size": len(pool),
        "lines": lines,
        "queries_missing": len(missing),
        "queries_missing_examples": missing[:EXAMPLES],
        "queries_cut_at_k": sum(1 for docs in run.values() if len(docs) > k),
        "k": k,
    }
    return run, report
