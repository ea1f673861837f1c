"""Dense retrieval of one collection with Faiss: the ``retrieve`` stage.

For one collection (setup, split, group, rep) this ranks the pool's papers for every query
by the similarity of their embeddings and writes a TREC run
(``runs/<setup>-<split>/<group>.rep<rep>/<model>.trec``, see ``docs/contracts.md``). Query
vectors come from the same embedding store as the pool: queries are embedded with the
corpus. A query is never its own candidate: ``k + 1`` neighbours (plus a small margin, see
below) are searched and the query's own paper is dropped.

**Ties.** Faiss keeps an arbitrary member of a group of equal scores at its cut-off. So a
few more than ``k`` neighbours are searched (``TIE_MARGIN``) and
:func:`citeval.trec.write_run` cuts at ``k`` in trec_eval's order (score descending, doc id
descending), which decides ties at ``k`` the way trec_eval would unless a tie group is
longer than the margin.

**Multi-vector models (ASPIRE).** Each paper has one vector per sentence; a pair of papers
scores the best sentence pair over all pairs (max-sim). Two ways to get it:

* ``exact`` (default for a flat index on the CPU): every query sentence is scored against
  every pool sentence by blocked matrix products, reduced to the per-paper maximum, and
  the top ``k`` papers kept with a heap. Memory is bounded by the block sizes; the cost is
  that of a flat search over the sentences, so it is exact for no extra cost on a CPU.
* ``hits`` (IVF, HNSW, or a GPU): the pool's sentence vectors are indexed, each query
  sentence retrieves its ``k'`` nearest sentences (``--aspire-hits``, default ``4 * k``),
  and each paper found gets its best hit score. This is an approximation: a paper whose
  best sentence pair is not among some query sentence's ``k'`` hits gets a lower score or
  is missed. The result is *provably* exact when the ``k``-th paper's score is above
  ``tau``, the highest ``k'``-th hit score over the query's sentences (every pair not
  found scores at most ``tau``). Queries where that fails are searched again with ``k'``
  doubled, up to ``--aspire-max-hits``; the number of queries left uncertified is logged
  (and written to the recall report). With an approximate index the hits themselves are
  approximate, so the certificate only bounds the error due to ``k'``.

Example::

    python -m citeval.retrieve --embeddings results/demo/embeddings/specter \\
        --similarity l2 --pooling cls --queries samples/dataset-test/queries.parquet \\
        --pools samples/dataset-test/pools.parquet --group pool-1000 --rep 0 --k 500 \\
        --index flat --threads 2 --output run.trec --tag specter
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import pyarrow.parquet as pq
from tqdm import tqdm

from citeval.cli import run_cli
from citeval.errors import ConfigError, InputDataError
from citeval.faiss_index import (
    GPU_MAX_K,
    INDEX_TYPES,
    SIMILARITIES,
    BuiltIndex,
    EmbeddingStore,
    IndexSpec,
    Selection,
    build_index,
    needs_normalization,
    num_gpus,
    recall_report,
    search,
    set_num_threads,
)
from citeval.io import write_json
from citeval.trec import Run, write_run

log = logging.getLogger(__name__)

POOLINGS = ("cls", "mean", "aspire")
ASPIRE_MODES = ("auto", "exact", "hits")
# Extra neighbours searched beyond k so that write_run, not Faiss, settles ties at rank k.
TIE_MARGIN = 16


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
    if not query_ids:
        raise InputDataError(f"no queries for group {group!r}", path=str(queries_path))
    if not pool_ids:
        raise InputDataError(f"no pool for group {group!r} rep {rep}", path=str(pools_path))
    return query_ids, pool_ids


# --------------------------------------------------------------------------- single vector


def hits_to_run(
    query_ids: Sequence[str],
    own: np.ndarray,
    scores: np.ndarray,
    labels: np.ndarray,
    doc_ids: np.ndarray,
) -> Run:
    """Per-query ``(scores, labels)`` rows as a run, without padding and the query itself."""
    run: Run = {}
    for i, qid in enumerate(query_ids):
        row_labels = labels[i]
        keep = (row_labels >= 0) & (row_labels != own[i])
        run[qid] = dict(
            zip(doc_ids[row_labels[keep]].tolist(), scores[i][keep].tolist(), strict=True)
        )
    return run


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
    report = _base_report(built, len(queries), seconds)
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


def _base_report(built: BuiltIndex | None, n_queries: int, seconds: float) -> dict[str, Any]:
    report: dict[str, Any] = {
        "n_queries": n_queries,
        "search_seconds": round(seconds, 3),
        "queries_per_second": round(n_queries / seconds, 3) if seconds else None,
    }
    if built is not None:
        report.update(
            {
                "index": built.kind,
                "params": built.params,
                "ntotal": built.ntotal,
                "on_gpu": built.on_gpu,
                "build_seconds": round(built.build_seconds, 3),
            }
        )
    return report


# --------------------------------------------------------------------------- multi vector


def _blocks(offsets: np.ndarray, max_rows: int) -> list[tuple[int, int]]:
    """Split papers ``0..len(offsets)-1`` into runs of whole papers of at most ``max_rows`` rows.

    A single paper larger than ``max_rows`` forms a block of its own.
    """
    blocks: list[tuple[int, int]] = []
    n = len(offsets) - 1
    first = 0
    while first < n:
        last = int(np.searchsorted(offsets, offsets[first] + max_rows, side="right")) - 1
        last = min(max(last, first + 1), n)
        blocks.append((first, last))
        first = last
    return blocks


def maxsim_exact(
    query_vectors: np.ndarray,
    query_offsets: np.ndarray,
    pool_vectors: np.ndarray,
    pool_offsets: np.ndarray,
    k: int,
    similarity: str,
    exclude: np.ndarray | None = None,
    *,
    query_block_rows: int = 1024,
    pool_block_rows: int = 32768,
    progress: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-``k`` papers by max-sim over sentence vectors.

    ``query_offsets``/``pool_offsets`` delimit each paper's rows. ``exclude[i]`` is a pool
    paper index that query ``i`` may not return (-1 for none). Returns ``(scores, labels)``
    of shape ``(n_queries, k)``, labels being pool paper indices, -1 padded; scores are
    higher-is-better (negative squared distance for ``l2``; cosine expects normalised
    vectors).
    """
    n_queries = len(query_offsets) - 1
    exclude = np.full(n_queries, -1, dtype=np.int64) if exclude is None else exclude
    heap = faiss.ResultHeap(n_queries, k, keep_max=True)
    l2 = similarity == "l2"
    pool_norms = np.einsum("ij,ij->i", pool_vectors, pool_vectors) if l2 else None
    pool_blocks = _blocks(pool_offsets, pool_block_rows)
    query_blocks = _blocks(query_offsets, query_block_rows)
    with tqdm(
        total=n_queries, desc="max-sim (exact)", unit="q", disable=not progress, mininterval=5
    ) as bar:
        for q0, q1 in query_blocks:
            r0, r1 = int(query_offsets[q0]), int(query_offsets[q1])
            block_queries = query_vectors[r0:r1]
            query_starts = (query_offsets[q0:q1] - r0).astype(np.intp)
            query_norms = np.einsum("ij,ij->i", block_queries, block_queries) if l2 else None
            subset = np.arange(q0, q1, dtype=np.int64)
            for p0, p1 in pool_blocks:
                s0, s1 = int(pool_offsets[p0]), int(pool_offsets[p1])
                sims = block_queries @ pool_vectors[s0:s1].T
                if l2:
                    # -||q - p||^2 = 2 q.p - ||q||^2 - ||p||^2, the expansion Faiss uses too.
                    sims *= 2
                    sims -= query_norms[:, None]
                    sims -= pool_norms[None, s0:s1]
                paper_starts = (pool_offsets[p0:p1] - s0).astype(np.intp)
                per_paper = np.maximum.reduceat(sims, paper_starts, axis=1)
                per_query = np.maximum.reduceat(per_paper, query_starts, axis=0)
                own = exclude[q0:q1]
                inside = (own >= p0) & (own < p1)
                per_query[np.nonzero(inside)[0], own[inside] - p0] = -np.inf
                heap.add_result_subset(subset, per_query, np.arange(p0, p1, dtype=np.int64))
            bar.update(q1 - q0)
    heap.finalize()
    labels = heap.I
    scores = np.where(labels >= 0, heap.D, -np.inf).astype(np.float32)
    return scores, labels


@dataclass
class HitsStats:
    """How the ``hits`` approximation went: queries proven exact, and the ``k'`` used."""

    certified: int = 0
    uncertified: int = 0
    max_hits_used: int = 0


def _aggregate(
    scores: np.ndarray,
    labels: np.ndarray,
    row_paper: np.ndarray,
    own: int,
    keep: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Best hit score per paper, top ``keep`` papers in trec order (score desc, paper desc)."""
    valid = labels >= 0
    papers = row_paper[labels[valid]]
    values = scores[valid]
    if own >= 0:
        mask = papers != own
        papers, values = papers[mask], values[mask]
    if len(papers) == 0:
        return np.empty(0, dtype=np.float32), np.empty(0, dtype=np.int64)
    order = np.lexsort((-values, papers))
    papers, values = papers[order], values[order]
    first = np.ones(len(papers), dtype=bool)
    first[1:] = papers[1:] != papers[:-1]
    papers, values = papers[first], values[first]
    order = np.lexsort((-papers, -values))[:keep]
    return values[order], papers[order]


def maxsim_hits(
    built: BuiltIndex,
    query_vectors: np.ndarray,
    query_offsets: np.ndarray,
    row_paper: np.ndarray,
    n_papers: int,
    k: int,
    exclude: np.ndarray | None = None,
    *,
    hits: int,
    max_hits: int,
    keep: int | None = None,
    batch_rows: int = 1024,
    progress: bool = True,
) -> tuple[list[tuple[np.ndarray, np.ndarray]], HitsStats]:
    """Top papers by max-sim from sentence-level index hits (see the module docstring).

    ``row_paper[label]`` is the pool paper of each indexed sentence. Returns, per query,
    ``(scores, paper indices)`` of its top ``keep`` (default ``k``) papers, and statistics.
    """
    keep = k if keep is None else keep
    n_queries = len(query_offsets) - 1
    exclude = np.full(n_queries, -1, dtype=np.int64) if exclude is None else exclude
    ntotal = built.ntotal
    hits = max(1, min(hits, ntotal))
    max_hits = max(hits, min(max_hits, ntotal))
    stats = HitsStats()
    results: list[tuple[np.ndarray, np.ndarray]] = [
        (np.empty(0, np.float32), np.empty(0, np.int64))
    ] * n_queries
    blocks = _blocks(query_offsets, batch_rows)
    with tqdm(
        total=n_queries, desc="max-sim (hits)", unit="q", disable=not progress, mininterval=5
    ) as bar:
        for q0, q1 in blocks:
            pending = list(range(q0, q1))
            k_hits = hits
            while pending:
                rows = np.concatenate(
                    [np.arange(query_offsets[q], query_offsets[q + 1]) for q in pending]
                )
                scores, labels = search(
                    built,
                    query_vectors[rows],
                    k_hits,
                    batch_size=max(batch_rows, 1),
                    progress=False,
                )
                stats.max_hits_used = max(stats.max_hits_used, k_hits)
                still: list[int] = []
                at = 0
                for q in pending:
                    n_rows = int(query_offsets[q + 1] - query_offsets[q])
                    q_scores, q_labels = scores[at : at + n_rows], labels[at : at + n_rows]
                    at += n_rows
                    own = int(exclude[q])
                    results[q] = _aggregate(q_scores, q_labels, row_paper, own, keep)
                    if _certified(
                        results[q][0], q_scores, q_labels, k, k_hits, ntotal, n_papers - (own >= 0)
                    ):
                        stats.certified += 1
                    elif k_hits >= max_hits:
                        stats.uncertified += 1
                    else:
                        still.append(q)
                pending = still
                k_hits = min(2 * k_hits, max_hits)
            bar.update(q1 - q0)
    if stats.uncertified:
        log.warning(
            "max-sim: %d of %d queries are not proven exact at k'=%d (raise "
            "--aspire-max-hits, or use --aspire-mode exact)",
            stats.uncertified,
            n_queries,
            max_hits,
        )
    return results, stats


def _certified(
    found: np.ndarray,
    scores: np.ndarray,
    labels: np.ndarray,
    k: int,
    k_hits: int,
    ntotal: int,
    candidates: int,
) -> bool:
    """True when the top ``k`` papers from the hits are provably the exact max-sim top ``k``."""
    if k_hits >= ntotal:
        return True
    full = (labels >= 0).sum(axis=1) == k_hits  # sentences with more neighbours left unseen
    if not full.any():
        return True
    tau = float(scores[full, k_hits - 1].max())
    needed = min(k, candidates)
    return len(found) >= needed and (needed == 0 or float(found[needed - 1]) > tau)


def retrieve_aspire(
    store: EmbeddingStore,
    pool: Selection,
    queries: Selection,
    *,
    similarity: str,
    k: int,
    spec: IndexSpec,
    mode: str = "auto",
    hits: int | None = None,
    max_hits: int | None = None,
    use_gpu: bool | None = None,
    batch_size: int = 1024,
    progress: bool = True,
    recall_queries: int | None = None,
) -> tuple[Run, dict[str, Any]]:
    """Multi-vector (max-sim) retrieval; see the module docstring for ``mode``."""
    if mode not in ASPIRE_MODES:
        raise ConfigError(f"aspire mode must be one of {ASPIRE_MODES}, got {mode!r}")
    gpu = use_gpu is not False and num_gpus() > 0
    if mode == "auto":
        mode = "exact" if spec.kind == "flat" and not gpu else "hits"
    if mode == "exact" and spec.kind != "flat":
        raise ConfigError(
            f"--aspire-mode exact scores every pair and needs --index flat, not {spec.kind}"
        )
    normalize = needs_normalization(similarity)
    query_vectors = store.gather(
        queries, normalize=normalize, progress=progress, desc="query vectors"
    )
    own = pool.index_of(queries.paper_ids)
    keep = k + TIE_MARGIN
    report: dict[str, Any] = {
        "aspire_mode": mode,
        "pool_sentences": len(pool),
        "query_sentences": len(queries),
        "pool_papers": pool.n_papers,
    }
    log.info(
        "max-sim (%s) of %d query sentences against %d pool sentences (%d papers)",
        mode,
        len(queries),
        len(pool),
        pool.n_papers,
    )
    started = time.perf_counter()
    if mode == "exact":
        pool_vectors = store.gather(
            pool, normalize=normalize, progress=progress, desc="pool sentence vectors"
        )
        scores, labels = maxsim_exact(
            query_vectors,
            queries.offsets,
            pool_vectors,
            pool.offsets,
            keep,
            similarity,
            own,
            query_block_rows=batch_size,
            progress=progress,
        )
        seconds = time.perf_counter() - started
        run = hits_to_run(queries.paper_ids.tolist(), own, scores, labels, pool.paper_ids)
        report.update(_base_report(None, queries.n_papers, seconds))
        report["index"] = "exact-maxsim"
        if recall_queries is not None:
            report["recall"] = {"exact": True, "recall_mean": 1.0, "recall_min": 1.0}
        return run, report
    built = build_index(store, pool, similarity, spec, use_gpu=use_gpu, progress=progress)
    build_seconds = time.perf_counter() - started
    hits = 4 * k if hits is None else hits
    max_hits = 32 * k if max_hits is None else max_hits
    if built.on_gpu and max_hits > GPU_MAX_K:
        log.info("capping --aspire-max-hits at the GPU limit %d", GPU_MAX_K)
        max_hits = GPU_MAX_K
        hits = min(hits, max_hits)
    started = time.perf_counter()
    results, stats = maxsim_hits(
        built,
        query_vectors,
        queries.offsets,
        pool.row_paper(),
        pool.n_papers,
        k,
        own,
        hits=hits,
        max_hits=max_hits,
        keep=keep,
        batch_rows=batch_size,
        progress=progress,
    )
    seconds = time.perf_counter() - started
    run: Run = {}
    for qid, (values, papers) in zip(queries.paper_ids.tolist(), results, strict=True):
        run[qid] = dict(zip(pool.paper_ids[papers].tolist(), values.tolist(), strict=True))
    report.update(_base_report(built, queries.n_papers, seconds))
    report.update(
        {
            "build_seconds": round(build_seconds, 3),
            "aspire_hits": hits,
            "aspire_max_hits": max_hits,
            "certified_queries": stats.certified,
            "uncertified_queries": stats.uncertified,
            "max_hits_used": stats.max_hits_used,
        }
    )
    if recall_queries is not None:
        # Sentence-level recall of the index itself, on the query sentences.
        recall = recall_report(
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
        recall["level"] = "sentence"
        report["recall"] = recall
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
