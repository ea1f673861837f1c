"""``python -m citeval.retrieve``: the dense retrieval stage's command line."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path

from citeval.aspire import ASPIRE_MODES, retrieve_aspire
from citeval.cli import run_cli, run_tag
from citeval.embeddings import EmbeddingStore
from citeval.errors import ConfigError
from citeval.faiss_index import SIMILARITIES, IndexSpec, set_num_threads
from citeval.io import write_json
from citeval.retrieve import POOLINGS, read_collection, retrieve_dense
from citeval.stages import RETRIEVE
from citeval.trec import write_run

log = logging.getLogger(__name__)


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
        choices=POOLINGS,
        default=None,
        help="the encoder's pooling: aspire = one vector per sentence, scored by the best "
        "sentence pair (default: one vector a paper, as a user's store holds)",
    )
    parser.add_argument(
        "--query-embeddings",
        type=Path,
        default=None,
        help="embeddings of the queries when not read from --embeddings: the local task's "
        "contexts (local/embeddings/<model>/<split>), or the query papers of a model whose "
        "query prompt differs from its document prompt "
        "(query_embeddings/<model>/<setup>-<split>)",
    )
    parser.add_argument(
        "--queries", required=True, type=Path, help="samples/<setup>-<split>/queries.parquet"
    )
    parser.add_argument(
        "--pools", required=True, type=Path, help="samples/<setup>-<split>/pools.parquet"
    )
    parser.add_argument("--group", required=True)
    parser.add_argument("--rep", required=True, type=int)
    parser.add_argument(
        "--hnsw-ef-construction",
        type=int,
        default=40,
        help="HNSW build-time candidate list size (default 40)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="IVF training sample and k-means seed; recall query sample",
    )
    parser.add_argument("--threads", type=int, default=2, help="Faiss/BLAS threads (default 2)")
    parser.add_argument(
        "--faiss-device",
        choices=["auto", "cpu", "gpu"],
        default="auto",
        help="where Faiss searches; auto = GPU when faiss-gpu sees one (flat and ivf only)",
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
    parser.add_argument("--tag", required=True, type=run_tag, help="run tag (the model name)")
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
    RETRIEVE.add_to(parser)
    return parser


def command(args: argparse.Namespace) -> None:
    if args.k < 1:
        raise ConfigError(f"--k must be >= 1, got {args.k}")
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
    use_gpu = {"auto": None, "cpu": False, "gpu": True}[args.faiss_device]
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
    query_store = None
    if args.query_embeddings is not None:
        if multi:
            raise ConfigError("--query-embeddings is for single-vector models, not aspire")
        query_store = EmbeddingStore(args.query_embeddings)
    queries = (query_store or store).locate(query_ids, what="queries")
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
        run, report = retrieve_dense(store, pool, queries, query_store=query_store, **common)
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
