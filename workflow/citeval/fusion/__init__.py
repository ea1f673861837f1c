"""Reciprocal rank fusion (RRF) of TREC runs: the ``fuse`` stage.

For each query, a document's fused score is ``sum(1 / (k + rank))`` over the input runs
that retrieved it, where ``rank`` counts from 1 in trec_eval's order of that run (score
descending, doc id descending; Cormack, Clarke & Büttcher, SIGIR 2009). A run that did not
retrieve the document contributes nothing. The fused run keeps the top ``depth`` documents,
again in trec_eval's order.

The sum is computed with :func:`math.fsum`, which rounds exactly once, so the fused scores
(and hence the order of near-ties) do not depend on the order the runs are given in.

    python -m citeval.fusion --runs bm25.trec scincl.trec --k 60 --depth 500 \\
        --output bm25+scincl.trec --tag rrf

The fusion is :mod:`citeval.fusion.rrf`; the command line is :mod:`citeval.fusion.cli`.
"""

from __future__ import annotations

from citeval.fusion.rrf import reciprocal_rank_fusion

__all__ = ["reciprocal_rank_fusion"]
