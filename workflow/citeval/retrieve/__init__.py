"""Dense retrieval of one collection with Faiss: the ``retrieve`` stage.

For one collection (setup, split, group, rep) this ranks the pool's papers for every query
by the similarity of their embeddings and writes a TREC run
(``runs/<setup>-<split>/<group>.rep<rep>/<model>.trec``, see ``docs/contracts.md``). Query
vectors come from the same embedding store as the pool: queries are embedded with the
corpus. A query is never its own candidate: ``k + 1`` neighbours (plus a small margin, see
below) are searched and the query's own paper is dropped.

**Ties.** Faiss keeps an arbitrary member of a group of equal scores at its cut-off. So a
few more than ``k`` neighbours are searched (:data:`citeval.faiss_index.TIE_MARGIN`) and
:func:`citeval.trec.write_run` cuts at ``k`` in trec_eval's order (score descending, doc id
descending), which decides ties at ``k`` the way trec_eval would unless a tie group is
longer than the margin.

**Multi-vector models (ASPIRE)** (``--pooling aspire``) are ranked by
:func:`citeval.aspire.retrieve_aspire`, which scores a pair of papers by their best sentence
pair.

Example::

    python -m citeval.retrieve --embeddings results/demo/embeddings/specter \\
        --similarity l2 --pooling cls --queries samples/dataset-test/queries.parquet \\
        --pools samples/dataset-test/pools.parquet --group pool-800 --rep 0 --k 500 \\
        --index flat --threads 2 --output run.trec --tag specter
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from citeval.collection_list import group_query_count
from citeval.embeddings import EmbeddingStore, Selection
from citeval.errors import InputDataError
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


# --------------------------------------------------------------------------- inputs


def read_collection(
    queries_path: str | Path, pools_path: str | Path, group: str, rep: int
) -> tuple[list[str], list[str]]:
    """Sorted query ids of ``group`` and sorted pool paper ids of ``(group, rep)``."""
    reads = {
        "queries": (queries_path, ["group", "query_id"], [("group", "==", group)]),
        "pool": (
            pools_path,
            ["group", "rep", "paper_id"],
            [("group", "==", group), ("rep", "==", rep)],
        ),
    }
    tables = {}
    for name, (path, columns, filters) in reads.items():
        try:
            tables[name] = pq.read_table(path, columns=columns, filters=filters)
        except (OSError, ValueError, KeyError) as error:
            first_line = str(error).splitlines()[0]  # pyarrow then lists the file's columns
            raise InputDataError(
                f"cannot read the {name} (columns {columns}): {first_line}", path=str(path)
            ) from error
    queries, pool = tables["queries"], tables["pool"]
    query_ids = sorted(set(queries.column("query_id").to_pylist()))
    pool_ids = sorted(set(pool.column("paper_id").to_pylist()))
    if not query_ids and group_query_count(Path(queries_path).parent, group) > 0:
        raise InputDataError(f"no queries for group {group!r}", path=str(queries_path))
    if not pool_ids:
        raise InputDataError(f"no pool for group {group!r} rep {rep}", path=str(pools_path))
    return query_ids, pool_ids


# --------------------------------------------------------------------------- single vector


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
