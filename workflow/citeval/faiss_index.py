"""Faiss indexes over the vectors of an embedding store, and their search.

The vectors come from :class:`citeval.embeddings.EmbeddingStore`; an index is built over
the rows of a :class:`~citeval.embeddings.Selection`, so a label is a row position in it.

Indexes (:func:`build_index`):

* ``flat`` — exact ``IndexFlatIP`` (similarity ``ip``, or ``cosine`` on L2-normalised
  vectors) or ``IndexFlatL2`` (similarity ``l2``). The vectors are gathered straight into the
  index's own storage, so the pool is held in RAM exactly once.
* ``ivf`` — ``IndexIVFFlat`` over a flat quantizer. ``nlist`` is capped at ``4 * sqrt(n)``
  (and at ``n``) so that small pools still get populated lists; the coarse quantizer is
  trained on a sample drawn with a seeded generator, and k-means uses the same seed.
* ``hnsw`` — ``IndexHNSWFlat`` with ``M`` and ``efSearch`` (``efConstruction`` optional).
  Faiss inserts in parallel, so the graph, hence the approximate results, can vary between
  runs unless it is built with one thread.

Scores are always "higher is better": inner products as they are, and for ``l2`` the
*negative squared* Euclidean distance (Faiss' native value; the square root would rank the
same but could merge distinct distances into float ties).

GPU: when ``faiss.get_num_gpus() > 0`` (a ``faiss-gpu`` install) flat and IVF indexes are
moved with ``faiss.index_cpu_to_all_gpus``; HNSW has no GPU version and stays on the CPU.
On ``faiss-cpu`` nothing GPU-related is touched, so the module imports and runs anywhere.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import faiss
import numpy as np
from tqdm import tqdm

from citeval.embeddings import DEFAULT_CHUNK_ROWS, EmbeddingStore, Selection, selection_rows
from citeval.errors import ConfigError, InputDataError
from citeval.trec import Run

log = logging.getLogger(__name__)

SIMILARITIES = ("ip", "cosine", "l2")
INDEX_TYPES = ("flat", "ivf", "hnsw")
# Faiss' GPU k-selection handles at most this many neighbours per query.
GPU_MAX_K = 2048
# Faiss keeps an arbitrary member of a group of equal scores at its cut-off: retrieval
# searches this many neighbours beyond k so that write_run, not Faiss, settles ties at k.
TIE_MARGIN = 16


# --------------------------------------------------------------------------- threads, metric


def set_num_threads(threads: int) -> None:
    """Pin Faiss' OpenMP pool and numpy's BLAS to ``threads`` threads.

    Fixing the count makes runs reproducible: BLAS blocking, and so the last bits of the
    scores, can depend on the number of threads.
    """
    if threads < 1:
        raise ConfigError(f"threads must be >= 1, got {threads}")
    faiss.omp_set_num_threads(threads)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
        log.debug("threadpoolctl not installed; numpy BLAS threads left as they are")
        return
    threadpool_limits(limits=threads)


def check_similarity(similarity: str) -> str:
    if similarity not in SIMILARITIES:
        raise ConfigError(f"similarity must be one of {SIMILARITIES}, got {similarity!r}")
    return similarity


def faiss_metric(similarity: str) -> int:
    """Faiss metric for a model similarity: ``l2`` -> L2, ``ip``/``cosine`` -> inner product."""
    check_similarity(similarity)
    return faiss.METRIC_L2 if similarity == "l2" else faiss.METRIC_INNER_PRODUCT


def needs_normalization(similarity: str) -> bool:
    """Cosine similarity is the inner product of L2-normalised vectors."""
    return check_similarity(similarity) == "cosine"


def num_gpus() -> int:
    """GPUs Faiss can use (0 on ``faiss-cpu``)."""
    get = getattr(faiss, "get_num_gpus", None)
    try:
        return int(get()) if get is not None else 0
    except Exception:  # pragma: no cover - a broken CUDA runtime counts as none
        return 0


# --------------------------------------------------------------------------- indexes


@dataclass(frozen=True, kw_only=True)
class IndexSpec:
    """Which index to build and its parameters (config ``faiss:``, whose defaults are the
    schema's: the caller passes them, from the config or the command line)."""

    kind: str
    ivf_nlist: int
    ivf_nprobe: int
    hnsw_m: int
    hnsw_ef_search: int
    hnsw_ef_construction: int = 40
    seed: int = 0
    # IVF training points per list; Faiss' k-means itself subsamples beyond 256.
    train_points_per_list: int = 256

    def __post_init__(self) -> None:
        if self.kind not in INDEX_TYPES:
            raise ConfigError(f"index must be one of {INDEX_TYPES}, got {self.kind!r}")
        for name in ("ivf_nlist", "ivf_nprobe", "hnsw_m", "hnsw_ef_search", "hnsw_ef_construction"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")


@dataclass
class BuiltIndex:
    """A Faiss index over the rows of a :class:`Selection` (label = row position)."""

    index: Any
    kind: str
    similarity: str
    ntotal: int
    dim: int
    on_gpu: bool = False
    params: dict[str, Any] = field(default_factory=dict)
    build_seconds: float = 0.0

    @property
    def exact(self) -> bool:
        return self.kind == "flat"


def ivf_nlist_for(n: int, requested: int) -> int:
    """``requested`` capped at ``4 * sqrt(n)`` and at ``n``, so every list gets vectors."""
    return max(1, min(requested, round(4 * math.sqrt(n)), n))


def ivf_training_rows(n: int, nlist: int, points_per_list: int, seed: int) -> np.ndarray:
    """Sorted rows of the seeded sample that an IVF index over ``n`` vectors trains on."""
    n_train = min(n, nlist * points_per_list)
    return np.sort(np.random.default_rng(seed).choice(n, size=n_train, replace=False))


def trained_ivf_index(train: np.ndarray, nlist: int, similarity: str, seed: int) -> Any:
    """An empty ``IndexIVFFlat`` whose coarse quantizer is k-means over ``train`` (seeded)."""
    metric = faiss_metric(similarity)
    quantizer = faiss.IndexFlat(train.shape[1], metric)
    # The Python wrapper keeps a reference to the quantizer for the index's lifetime.
    index = faiss.IndexIVFFlat(quantizer, train.shape[1], nlist, metric)
    index.cp.seed = seed
    log.info("training IVF (nlist=%d) on %d vectors (seed %d)", nlist, len(train), seed)
    index.train(train)
    return index


def allocate_flat_index(dim: int, n: int, similarity: str) -> tuple[Any, np.ndarray]:
    """An ``IndexFlat`` of ``n`` vectors and a writable float32 ``(n, dim)`` view of its storage.

    Filling the view in place builds the index without a second copy of the vectors
    (``index.add`` would copy them from a gathered array).
    """
    index = faiss.IndexFlat(dim, faiss_metric(similarity))
    if n == 0:
        return index, np.empty((0, dim), dtype=np.float32)
    nbytes = n * dim * 4
    index.codes.resize(nbytes)
    view = faiss.rev_swig_ptr(index.codes.data(), nbytes).view(np.float32).reshape(n, dim)
    index.ntotal = n
    return index, view


def build_index(
    store: EmbeddingStore,
    selection: Selection,
    similarity: str,
    spec: IndexSpec,
    *,
    use_gpu: bool | None = None,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    progress: bool = True,
) -> BuiltIndex:
    """Build the index of ``spec.kind`` over the selection's vectors.

    ``use_gpu``: ``None`` moves flat/IVF indexes to the GPU(s) when Faiss sees any,
    ``False`` keeps the CPU, ``True`` requires a GPU.
    """
    normalize = needs_normalization(similarity)
    metric = faiss_metric(similarity)
    n, dim = len(selection), store.dim
    if n == 0:
        raise InputDataError(
            "cannot build an index over an empty selection", path=str(store.directory)
        )
    started = time.perf_counter()
    params: dict[str, Any] = {}
    if spec.kind == "flat":
        index, storage = allocate_flat_index(dim, n, similarity)
        store.gather(
            selection,
            out=storage,
            normalize=normalize,
            chunk_rows=chunk_rows,
            progress=progress,
            desc="flat index",
        )
        del storage
    elif spec.kind == "ivf":
        nlist = ivf_nlist_for(n, spec.ivf_nlist)
        if nlist < spec.ivf_nlist:
            log.info("IVF nlist capped from %d to %d for %d vectors", spec.ivf_nlist, nlist, n)
        nprobe = min(spec.ivf_nprobe, nlist)
        train_rows = ivf_training_rows(n, nlist, spec.train_points_per_list, spec.seed)
        train = store.gather(
            selection_rows(selection, train_rows),
            normalize=normalize,
            chunk_rows=chunk_rows,
            progress=progress,
            desc="IVF training sample",
        )
        index = trained_ivf_index(train, nlist, similarity, spec.seed)
        n_train = len(train)
        del train
        for _, chunk in store.iter_chunks(
            selection, chunk_rows=chunk_rows, normalize=normalize, progress=progress, desc="IVF add"
        ):
            index.add(chunk)
        index.nprobe = nprobe
        params = {
            "nlist": nlist,
            "nlist_requested": spec.ivf_nlist,
            "nprobe": nprobe,
            "train_size": n_train,
            "seed": spec.seed,
        }
    else:
        index = faiss.IndexHNSWFlat(dim, spec.hnsw_m, metric)
        index.hnsw.efConstruction = spec.hnsw_ef_construction
        index.hnsw.efSearch = spec.hnsw_ef_search
        for _, chunk in store.iter_chunks(
            selection,
            chunk_rows=chunk_rows,
            normalize=normalize,
            progress=progress,
            desc="HNSW add",
        ):
            index.add(chunk)
        params = {
            "m": spec.hnsw_m,
            "ef_search": spec.hnsw_ef_search,
            "ef_construction": spec.hnsw_ef_construction,
        }
    built = BuiltIndex(
        index=index, kind=spec.kind, similarity=similarity, ntotal=n, dim=dim, params=params
    )
    built = maybe_to_gpu(built, use_gpu)
    built.build_seconds = time.perf_counter() - started
    log.info(
        "built %s index of %d vectors in %.1f s%s",
        spec.kind,
        n,
        built.build_seconds,
        " (GPU)" if built.on_gpu else "",
    )
    return built


def maybe_to_gpu(built: BuiltIndex, use_gpu: bool | None) -> BuiltIndex:
    """Move a flat or IVF index to every visible GPU (replicated) when asked or available."""
    gpus = num_gpus()
    if use_gpu is True and gpus == 0:
        raise ConfigError("a GPU was requested but Faiss sees none (install faiss-gpu)")
    if use_gpu is False or gpus == 0:
        return built
    if built.kind == "hnsw":
        log.info("HNSW has no Faiss GPU implementation; searching on the CPU")
        return built
    built.index = faiss.index_cpu_to_all_gpus(built.index)
    built.on_gpu = True
    built.params["gpus"] = gpus
    return built


# --------------------------------------------------------------------------- search


def search(
    built: BuiltIndex,
    queries: np.ndarray,
    k: int,
    *,
    batch_size: int = 1024,
    progress: bool = True,
    desc: str = "search",
) -> tuple[np.ndarray, np.ndarray]:
    """Top-``k`` neighbours of each query: ``(scores, labels)``, each ``(nq, k)``.

    Scores are higher-is-better (negated squared distances for L2). Missing neighbours
    (fewer than ``k`` vectors) have label -1. Queries go in batches of ``batch_size``.
    """
    nq = len(queries)
    k = int(k)
    scores = np.empty((nq, k), dtype=np.float32)
    labels = np.empty((nq, k), dtype=np.int64)
    index = built.index
    if built.on_gpu and k > GPU_MAX_K:
        log.warning("k=%d exceeds the GPU limit %d: searching a CPU copy", k, GPU_MAX_K)
        index = faiss.index_gpu_to_cpu(index)
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    with tqdm(total=nq, desc=desc, unit="q", disable=not progress, mininterval=5) as bar:
        for start in range(0, nq, batch_size):
            stop = min(start + batch_size, nq)
            distances, ids = index.search(queries[start:stop], k)
            scores[start:stop] = distances
            labels[start:stop] = ids
            bar.update(stop - start)
    if built.similarity == "l2":
        np.negative(scores, out=scores)
    return scores, labels


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


def search_report(built: BuiltIndex | None, n_queries: int, seconds: float) -> dict[str, Any]:
    """Timings of a search, and the index searched (``None`` for a search without one)."""
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


# --------------------------------------------------------------------------- recall


def exact_search_streaming(
    store: EmbeddingStore,
    selection: Selection,
    queries: np.ndarray,
    k: int,
    similarity: str,
    *,
    chunk_rows: int = 65536,
    progress: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-``k`` over the selection, reading the store chunk by chunk.

    Used as ground truth for approximate indexes without a second in-memory copy of the
    pool. Scores are higher-is-better, as in :func:`search`.
    """
    metric = faiss_metric(similarity)
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    heap = faiss.ResultHeap(len(queries), k, keep_max=True)
    for start, chunk in store.iter_chunks(
        selection,
        chunk_rows=chunk_rows,
        normalize=needs_normalization(similarity),
        progress=progress,
        desc="exact ground truth",
    ):
        kk = min(k, len(chunk))
        distances, ids = faiss.knn(queries, chunk, kk, metric=metric)
        if metric == faiss.METRIC_L2:
            distances = -distances
        ids += start
        heap.add_result(distances, ids)
    heap.finalize()
    labels = heap.I
    scores = np.where(labels >= 0, heap.D, -np.inf).astype(np.float32)
    return scores, labels


def recall_at_k(approx: np.ndarray, exact: np.ndarray, k: int) -> np.ndarray:
    """Per-query recall@k: share of the exact top-``k`` labels in the approximate top ``k``.

    Padding labels (-1) are ignored; a query with no exact neighbours scores 1.
    """
    values = np.empty(len(exact), dtype=np.float64)
    for i, (a_row, e_row) in enumerate(zip(approx[:, :k], exact[:, :k], strict=True)):
        truth = e_row[e_row >= 0]
        values[i] = 1.0 if len(truth) == 0 else np.isin(truth, a_row[a_row >= 0]).mean()
    return values


def recall_report(
    built: BuiltIndex,
    store: EmbeddingStore,
    selection: Selection,
    queries: np.ndarray,
    k: int,
    *,
    sample: int = 1000,
    seed: int = 0,
    batch_size: int = 1024,
    progress: bool = True,
) -> dict[str, Any]:
    """Recall@k of ``built`` against exact search on (a seeded sample of) ``queries``.

    ``sample`` = 0 evaluates every query. An exact index is reported as recall 1 without
    searching twice.
    """
    k = min(int(k), built.ntotal)
    report: dict[str, Any] = {
        "index": built.kind,
        "similarity": built.similarity,
        "params": built.params,
        "ntotal": built.ntotal,
        "dim": built.dim,
        "k": k,
        "on_gpu": built.on_gpu,
        "build_seconds": round(built.build_seconds, 3),
    }
    if built.exact or len(queries) == 0 or k == 0:
        report.update(
            {
                "exact": built.exact,
                "n_queries": 0 if not built.exact else len(queries),
                "recall_mean": 1.0,
                "recall_min": 1.0,
            }
        )
        return report
    picked = np.arange(len(queries))
    if 0 < sample < len(queries):
        picked = np.sort(
            np.random.default_rng(seed).choice(len(queries), size=sample, replace=False)
        )
    subset = np.ascontiguousarray(queries[picked])
    started = time.perf_counter()
    _, approx = search(
        built,
        subset,
        k,
        batch_size=batch_size,
        progress=progress,
        desc="approximate search (recall)",
    )
    approx_seconds = time.perf_counter() - started
    started = time.perf_counter()
    _, exact = exact_search_streaming(
        store, selection, subset, k, built.similarity, progress=progress
    )
    exact_seconds = time.perf_counter() - started
    values = recall_at_k(approx, exact, k)
    report.update(
        {
            "exact": False,
            "n_queries": len(picked),
            "sample_seed": seed,
            "recall_mean": float(values.mean()),
            "recall_min": float(values.min()),
            "recall_quantiles": {str(q): float(np.quantile(values, q)) for q in (0.05, 0.25, 0.5)},
            "approx_qps": round(len(picked) / approx_seconds, 3) if approx_seconds > 0 else None,
            "exact_qps": round(len(picked) / exact_seconds, 3) if exact_seconds > 0 else None,
        }
    )
    log.info(
        "%s recall@%d = %.4f (min %.4f) over %d queries",
        built.kind,
        k,
        report["recall_mean"],
        report["recall_min"],
        len(picked),
    )
    return report
