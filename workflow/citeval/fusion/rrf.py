"""Reciprocal rank fusion of runs (see :mod:`citeval.fusion`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from citeval.errors import ConfigError
from citeval.trec import Run, rank_documents


def reciprocal_rank_fusion(
    runs: Sequence[Mapping[str, Mapping[str, float]]],
    *,
    k: float,
    depth: int | None = None,
) -> Run:
    """Fuse ``runs`` (``{qid: {docid: score}}``) by RRF; keep the top ``depth`` per query.

    Queries present in any run appear in the result. ``depth=None`` keeps every document.
    """
    if k < 0:
        raise ConfigError(f"RRF k must be >= 0, got {k}")
    if depth is not None and depth < 1:
        raise ConfigError(f"depth must be >= 1, got {depth}")
    terms: dict[str, dict[str, list[float]]] = {}
    for run in runs:
        for qid, scores in run.items():
            per_doc = terms.setdefault(qid, {})
            for rank, (doc_id, _) in enumerate(rank_documents(scores), start=1):
                per_doc.setdefault(doc_id, []).append(1.0 / (k + rank))
    fused: Run = {}
    for qid in sorted(terms):
        scores = {doc_id: math.fsum(values) for doc_id, values in terms[qid].items()}
        fused[qid] = dict(rank_documents(scores, depth))
    return fused
