"""Single-vector dense retrieval of one collection: a Faiss index of the pool, searched
with the query vectors (see :mod:`citeval.retrieve` for the ties and the query's own paper)."""

from __future__ import annotations

import time
from typing import Any

from citeval.embeddings import EmbeddingStore, Selection
from citeval.faiss_index import (
    TIE_MARGIN,
    IndexSpec,
    build_index,
    hits_to_run,
    needs_normalization,
    recall_report,
    search,
    search_report,
)
from citeval.trec import Run

POOLINGS = ("cls", "mean", "aspire")


def retrieve_dense(
    store: EmbeddingStore,
    pool: Selection,
    queries: Selection,
    *,
    similarity: str,
    k: int,
    spec: IndexSpec,
    use_gpu: bool | None = None,
    batch_size: int = 1024,
    progress: bool = True,
    recall_queries: int | None = None,
    query_store: EmbeddingStore | None = None,
) -> tuple[Run, dict[str, Any]]:
    """Single-vector retrieval. Returns the run and a report (with recall when asked).

    ``queries`` are rows of ``query_store`` when given (queries that are not papers, such as
    the local task's citation contexts), else of ``store``.
    """
    built = build_index(store, pool, similarity, spec, use_gpu=use_gpu, progress=progress)
    query_vectors = (query_store or store).gather(
        queries, normalize=needs_normalization(similarity), progress=progress, desc="query vectors"
    )
    k_search = min(k + 1 + TIE_MARGIN, built.ntotal)
    started = time.perf_counter()
    scores, labels = search(
        built, query_vectors, k_search, batch_size=batch_size, progress=progress
    )
    seconds = time.perf_counter() - started
    own = pool.index_of(queries.paper_ids)
    run = hits_to_run(queries.paper_ids.tolist(), own, scores, labels, pool.paper_ids)
    report = search_report(built, len(queries), seconds)
    if recall_queries is not None:
        report["recall"] = recall_report(
            built,
            store,
            pool,
            query_vectors,
            k,
            sample=recall_queries,
            seed=spec.seed,
            batch_size=batch_size,
            progress=progress,
        )
    return run, report
