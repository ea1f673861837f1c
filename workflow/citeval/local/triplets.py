"""Training triplets of the local prefetcher: (context, cited paper, negative).

For each context of the local training split (``samples/local-train``), each of its
``per_query`` triplets takes a cited paper (cycling through them) as the positive. The
first ``hard_negatives`` take a hard negative, drawn without replacement from the first
stage's top ``top`` candidates that the context does not cite (HAtten mines its
negatives from the prefetcher's top Kn = 100); the rest take an easy negative, a random
paper of the training pool. The citing paper itself is never a negative (it is a pool
paper: it was published before the query year). Every draw is seeded by the seed and the
context id, so a triplet does not depend on the other contexts.

The table has the citation-graph samplers' columns (``query_id``, ``positive_id``,
``negative_id``, ``negative_kind``); ``query_id`` is a context id, whose text is in the
split's ``query_papers/``.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from citeval.draws import seeded_rng
from citeval.errors import InputDataError
from citeval.io import write_json, write_parquet
from citeval.train.triplets import REPORT_FILE, TRIPLETS_FILE, Triplets
from citeval.trec import read_qrels, read_run

log = logging.getLogger(__name__)


def mine_triplets(
    run: str | os.PathLike,
    qrels: str | os.PathLike,
    query_papers: str | os.PathLike,
    pools: str | os.PathLike,
    output_dir: str | os.PathLike,
    *,
    per_query: int,
    hard_negatives: int,
    top: int,
    seed: int,
) -> dict[str, Any]:
    """Write ``triplets.parquet`` and ``triplets_report.json`` to ``output_dir``."""
    relevant = {
        qid: sorted(doc for doc, rel in docs.items() if rel > 0)
        for qid, docs in read_qrels(qrels).items()
    }
    ranked = read_run(run)
    table = pq.read_table(query_papers, columns=["paper_id", "citing_id"])
    citing = dict(
        zip(
            table.column("paper_id").to_pylist(), table.column("citing_id").to_pylist(), strict=True
        )
    )
    pool = sorted(set(pq.read_table(pools, columns=["paper_id"]).column(0).to_pylist()))
    pool_set = set(pool)
    unknown = sorted(set(relevant) - set(citing))
    if unknown:
        raise InputDataError(f"qrels queries {unknown[:3]} have no query text", path=str(qrels))
    triplets = Triplets([], [], [], [], Counter())
    for qid in sorted(relevant):
        positives = relevant[qid]
        if not positives:
            triplets.counts["queries_without_positive"] += 1
            continue
        excluded = {*positives, citing[qid]}
        scores = ranked.get(qid, {})
        ordered = sorted(scores, key=lambda doc: (-scores[doc], doc))[:top]
        hard = [doc for doc in ordered if doc not in excluded]
        rng = seeded_rng(seed, "local-triplets", qid)
        n_hard = min(hard_negatives, per_query, len(hard))
        chosen_hard = [hard[i] for i in sorted(rng.choice(len(hard), n_hard, replace=False))]
        if n_hard < min(hard_negatives, per_query):
            triplets.counts["hard_negatives_short"] += min(hard_negatives, per_query) - n_hard
        negatives = [(doc, "hard") for doc in chosen_hard]
        easy_possible = len(pool) > len(excluded & pool_set)
        if not easy_possible:
            triplets.counts["easy_negatives_short"] += per_query - len(negatives)
        while easy_possible and len(negatives) < per_query:
            doc = pool[int(rng.integers(len(pool)))]
            if doc not in excluded:
                negatives.append((doc, "easy"))
        for index, (negative, kind) in enumerate(negatives):
            triplets.query.append(qid)
            triplets.positive.append(positives[index % len(positives)])
            triplets.negative.append(negative)
            triplets.kind.append(kind)
            triplets.counts[f"{kind}_negatives"] += 1
        triplets.counts["queries"] += 1
    if not triplets.query:
        raise InputDataError("no training context with a cited paper in the pool", path=str(qrels))
    output = Path(output_dir)
    write_parquet(triplets.table(), output / TRIPLETS_FILE)
    report = {
        "sampler": "contexts",
        "run": str(run),
        "settings": {
            "per_query": per_query,
            "hard_negatives": hard_negatives,
            "top": top,
            "seed": seed,
        },
        "pool_size": len(pool),
        "triplets": len(triplets.query),
        **{key: int(value) for key, value in sorted(triplets.counts.items())},
    }
    write_json(report, output / REPORT_FILE)
    log.info("%d triplets from %d contexts", report["triplets"], report.get("queries", 0))
    return report
