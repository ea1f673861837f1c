"""ASPIRE (multi-vector) retrieval: papers scored by their best-matching sentence pair.

Used by the ``retrieve`` stage for ``--pooling aspire``. Each paper has one vector per
sentence; a pair of papers scores the best sentence pair over all pairs (max-sim). Two ways
to get it:

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
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

import faiss
import numpy as np
from tqdm import tqdm

from citeval.embeddings import EmbeddingStore, Selection
from citeval.errors import ConfigError
from citeval.faiss_index import (
    GPU_MAX_K,
    TIE_MARGIN,
    BuiltIndex,
    IndexSpec,
    build_index,
    hits_to_run,
    needs_normalization,
    num_gpus,
    recall_report,
    search,
    search_report,
)
from citeval.trec import Run

log = logging.getLogger(__name__)

ASPIRE_MODES = ("auto", "exact", "hits")


# --------------------------------------------------------------------------- exact


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


# --------------------------------------------------------------------------- index hits


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


# --------------------------------------------------------------------------- retrieval


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
        report.update(search_report(None, queries.n_papers, seconds))
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
    report.update(search_report(built, queries.n_papers, seconds))
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
