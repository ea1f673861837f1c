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

import argparse
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from citeval.aspire import ASPIRE_MODES, retrieve_aspire
from citeval.cli import run_cli
from citeval.collections import group_query_count
from citeval.embeddings import EmbeddingStore, Selection
from citeval.errors import ConfigError, InputDataError
from citeval.faiss_index import (
    INDEX_TYPES,
    SIMILARITIES,
    TIE_MARGIN,
    IndexSpec,
    build_index,
    hits_to_run,
    needs_normalization,
    recall_report,
    search,
    search_report,
    set_num_threads,
)
from citeval.io import write_json
from citeval.trec import Run, write_run

log = logging.getLogger(__name__)

POOLINGS = ("cls", "mean", "aspire")


# --------------------------------------------------------------------------- inputs


def read_collection(
    queries_path: str | Path, pools_path: str | Path, group: str, rep: int
) -> tuple[list[str], list[str]]:
    """Sorted query ids of ``group`` and sorted pool paper ids of ``(group, rep)``."""
    try:
        queries = pq.read_table(
            queries_path, columns=["group", "query_id"], filters=[("group", "==", group)]
        )
        pool = pq.read_table(
            pools_path,
            columns=["group", "rep", "paper_id"],
            filters=[("group", "==", group), ("rep", "==", rep)],
        )
    except (OSError, ValueError, KeyError) as error:
        raise InputDataError(f"cannot read the collection: {error}") from error
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
) -> tuple[Run, dict[str, Any]]:
    """Single-vector retrieval. Returns the run and a report (with recall when asked)."""
    built = build_index(store, pool, similarity, spec, use_gpu=use_gpu, progress=progress)
    query_vectors = store.gather(
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


# --------------------------------------------------------------------------- CLI


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m citeval.retrieve",
        description="Rank one collection's pool for its queries with Faiss and write a TREC run.",
    )
    parser.add_argument(
        "--embeddings",
        required=True,
        type=Path,
        help="results/<dataset>/embeddings/<model> (shard-NNNNN.npy + .ids.parquet)",
    )
    parser.add_argument("--similarity", required=True, choices=SIMILARITIES)
    parser.add_argument(
        "--pooling",
        required=True,
        choices=POOLINGS,
        help="aspire = one vector per sentence, scored by the best sentence pair",
    )
    parser.add_argument(
        "--queries", required=True, type=Path, help="samples/<setup>-<split>/queries.parquet"
    )
    parser.add_argument(
        "--pools", required=True, type=Path, help="samples/<setup>-<split>/pools.parquet"
    )
    parser.add_argument("--group", required=True)
    parser.add_argument("--rep", required=True, type=int)
    parser.add_argument("--k", type=int, default=500, help="candidates per query (default 500)")
    parser.add_argument("--index", choices=INDEX_TYPES, default="flat")
    parser.add_argument("--ivf-nlist", type=int, default=1024)
    parser.add_argument("--ivf-nprobe", type=int, default=32)
    parser.add_argument("--hnsw-m", type=int, default=32)
    parser.add_argument("--hnsw-ef-search", type=int, default=256)
    parser.add_argument("--hnsw-ef-construction", type=int, default=40)
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="IVF training sample and k-means seed; recall query sample",
    )
    parser.add_argument("--threads", type=int, default=2, help="Faiss/BLAS threads (default 2)")
    parser.add_argument(
        "--device",
        choices=["auto", "cpu", "gpu"],
        default="auto",
        help="auto = GPU when faiss-gpu sees one (flat and ivf only)",
    )
    parser.add_argument(
        "--batch-size", type=int, default=1024, help="query vectors per search call"
    )
    parser.add_argument(
        "--aspire-mode",
        choices=ASPIRE_MODES,
        default="auto",
        help="exact max-sim by matrix products, or sentence hits from the index "
        "(auto: exact for a flat index on the CPU)",
    )
    parser.add_argument(
        "--aspire-hits",
        type=int,
        default=None,
        help="sentence neighbours per query sentence in hits mode (default 4*k)",
    )
    parser.add_argument(
        "--aspire-max-hits",
        type=int,
        default=None,
        help="cap when doubling the hits of unproven queries (default 32*k)",
    )
    parser.add_argument("--output", required=True, type=Path, help="TREC run to write")
    parser.add_argument("--tag", required=True, help="run tag (the model name)")
    parser.add_argument(
        "--recall-report",
        type=Path,
        default=None,
        help="JSON with the index's recall@k against exact search, and timings",
    )
    parser.add_argument(
        "--recall-queries",
        type=int,
        default=1000,
        help="queries sampled for the recall report (0 = all)",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")
    return parser


def command(args: argparse.Namespace) -> None:
    if args.k < 1:
        raise ConfigError(f"--k must be >= 1, got {args.k}")
    if not args.tag or any(ch.isspace() for ch in args.tag):
        raise ConfigError(f"--tag must be non-empty without whitespace, got {args.tag!r}")
    for name in ("aspire_hits", "aspire_max_hits", "batch_size"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise ConfigError(f"--{name.replace('_', '-')} must be >= 1, got {value}")
    set_num_threads(args.threads)
    spec = IndexSpec(
        kind=args.index,
        ivf_nlist=args.ivf_nlist,
        ivf_nprobe=args.ivf_nprobe,
        hnsw_m=args.hnsw_m,
        hnsw_ef_search=args.hnsw_ef_search,
        hnsw_ef_construction=args.hnsw_ef_construction,
        seed=args.seed,
    )
    use_gpu = {"auto": None, "cpu": False, "gpu": True}[args.device]
    progress = not args.no_progress
    query_ids, pool_ids = read_collection(args.queries, args.pools, args.group, args.rep)
    if not query_ids:
        log.warning("group %s has no queries (the sample report says why)", args.group)
        write_run({}, args.output, args.tag, k=args.k)
        return
    log.info(
        "collection %s rep %d: %d queries, pool of %d",
        args.group,
        args.rep,
        len(query_ids),
        len(pool_ids),
    )
    store = EmbeddingStore(args.embeddings)
    multi = args.pooling == "aspire"
    if multi != store.multi_vector:
        expected = "multi" if multi else "single"
        actual = "multi" if store.multi_vector else "single"
        raise ConfigError(
            f"--pooling {args.pooling} expects a {expected}-vector store, "
            f"but {args.embeddings} is {actual}-vector"
        )
    pool = store.locate(pool_ids, what="pool papers")
    queries = store.locate(query_ids, what="queries")
    recall_queries = args.recall_queries if args.recall_report is not None else None
    common = {
        "similarity": args.similarity,
        "k": args.k,
        "spec": spec,
        "use_gpu": use_gpu,
        "batch_size": args.batch_size,
        "progress": progress,
        "recall_queries": recall_queries,
    }
    if multi:
        run, report = retrieve_aspire(
            store,
            pool,
            queries,
            mode=args.aspire_mode,
            hits=args.aspire_hits,
            max_hits=args.aspire_max_hits,
            **common,
        )
    else:
        run, report = retrieve_dense(store, pool, queries, **common)
    write_run(run, args.output, args.tag, k=args.k)
    log.info("wrote %s (%d queries, k=%d)", args.output, len(run), args.k)
    if args.recall_report is not None:
        report.update(
            {
                "group": args.group,
                "rep": args.rep,
                "k": args.k,
                "tag": args.tag,
                "similarity": args.similarity,
                "pooling": args.pooling,
                "threads": args.threads,
                "pool_size": len(pool_ids),
            }
        )
        write_json(report, args.recall_report)


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(build_parser, command, argv)


if __name__ == "__main__":
    sys.exit(main())
