"""Embedding shards and Faiss indexes for dense retrieval.

:class:`EmbeddingStore` opens one model's ``embeddings/<model>/`` directory (see
``docs/contracts.md``): ``shard-NNNNN.npy`` float16 arrays, memory-mapped, and their
``shard-NNNNN.ids.parquet`` id tables. :meth:`EmbeddingStore.locate` turns a set of paper
ids (a pool, or the queries) into a :class:`Selection`, the rows that hold their vectors,
ordered by ``(paper_id, sentence)`` so that the order never depends on how the corpus was
sharded. :meth:`EmbeddingStore.gather` copies those rows, shard by shard and in chunks, into
one preallocated float32 array.

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
import os
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import polars as pl
import pyarrow.parquet as pq
from tqdm import tqdm

from citeval.errors import ConfigError, InputDataError

log = logging.getLogger(__name__)

SIMILARITIES = ("ip", "cosine", "l2")
INDEX_TYPES = ("flat", "ivf", "hnsw")
# Faiss' GPU k-selection handles at most this many neighbours per query.
GPU_MAX_K = 2048
DEFAULT_CHUNK_ROWS = 16384
SHARD_PATTERN = re.compile(r"^shard-(\d+)\.npy$")


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


# --------------------------------------------------------------------------- store


@dataclass(frozen=True)
class Shard:
    """One ``shard-NNNNN.npy`` file and its id table."""

    number: int
    vectors_path: Path
    ids_path: Path
    n_rows: int


@dataclass
class Selection:
    """Rows of an :class:`EmbeddingStore` that hold the vectors of a set of papers.

    Rows are ordered by ``(paper_id, sentence)``; paper ``i`` owns rows
    ``offsets[i]:offsets[i + 1]`` (exactly one row for single-vector models).
    """

    paper_ids: np.ndarray  # object array of str, sorted and unique, one per paper
    offsets: np.ndarray  # int64, len(paper_ids) + 1
    shard: np.ndarray  # int32 per row: index into EmbeddingStore.shards
    row: np.ndarray  # int64 per row: row inside that shard
    sentences: np.ndarray | None = None  # int32 per row for multi-vector stores

    def __len__(self) -> int:
        return len(self.row)

    @property
    def n_papers(self) -> int:
        return len(self.paper_ids)

    def row_paper(self) -> np.ndarray:
        """Paper index (into :attr:`paper_ids`) of every row."""
        counts = np.diff(self.offsets)
        return np.repeat(np.arange(self.n_papers, dtype=np.int64), counts)

    def index_of(self, paper_ids: Iterable[str]) -> np.ndarray:
        """Paper index of each id, or -1 where the paper is not in the selection."""
        wanted = np.asarray(list(paper_ids), dtype=object)
        if len(self.paper_ids) == 0 or len(wanted) == 0:
            return np.full(len(wanted), -1, dtype=np.int64)
        pos = np.searchsorted(self.paper_ids, wanted)
        pos = np.minimum(pos, len(self.paper_ids) - 1)
        found = self.paper_ids[pos] == wanted
        return np.where(found, pos, -1).astype(np.int64)


class EmbeddingStore:
    """Read-only view of one model's embedding shards.

    Vectors are memory-mapped (``np.load(mmap_mode="r")``) one shard at a time, so opening a
    store costs almost nothing and reading only touches the rows asked for.
    """

    def __init__(self, directory: str | os.PathLike) -> None:
        self.directory = Path(directory)
        if not self.directory.is_dir():
            raise InputDataError("embedding directory does not exist", path=str(self.directory))
        shards: list[Shard] = []
        dims: set[int] = set()
        dtypes: set[str] = set()
        sentence_flags: set[bool] = set()
        for path in sorted(self.directory.iterdir()):
            match = SHARD_PATTERN.match(path.name)
            if match is None:
                continue
            ids_path = path.with_name(f"shard-{match.group(1)}.ids.parquet")
            if not ids_path.is_file():
                raise InputDataError("shard has no id table " + ids_path.name, path=str(path))
            array = np.load(path, mmap_mode="r")
            if array.ndim != 2:
                raise InputDataError(
                    f"expected a 2-d array, got shape {array.shape}", path=str(path)
                )
            if array.dtype not in (np.float16, np.float32):
                raise InputDataError(
                    f"expected float16 or float32, got {array.dtype}", path=str(path)
                )
            meta = pq.ParquetFile(ids_path)
            n_ids = meta.metadata.num_rows
            if n_ids != array.shape[0]:
                raise InputDataError(
                    f"{array.shape[0]} vectors but {n_ids} ids in {ids_path.name}", path=str(path)
                )
            names = set(meta.schema_arrow.names)
            if "paper_id" not in names:
                raise InputDataError("no paper_id column", path=str(ids_path), field="paper_id")
            sentence_flags.add("sentence" in names)
            dims.add(int(array.shape[1]))
            dtypes.add(str(array.dtype))
            shards.append(Shard(int(match.group(1)), path, ids_path, int(array.shape[0])))
            del array
        if not shards:
            raise InputDataError("no shard-NNNNN.npy files", path=str(self.directory))
        if len(dims) > 1:
            raise InputDataError(
                f"shards disagree on the dimension: {sorted(dims)}", path=str(self.directory)
            )
        if len(sentence_flags) > 1:
            raise InputDataError(
                "some id tables have a sentence column and some do not", path=str(self.directory)
            )
        self.shards = shards
        self.dim = dims.pop()
        self.dtypes = sorted(dtypes)
        self.multi_vector = sentence_flags.pop()
        self.n_rows = sum(shard.n_rows for shard in shards)
        log.info(
            "embedding store %s: %d shards, %d rows, dim %d, %s%s",
            self.directory,
            len(shards),
            self.n_rows,
            self.dim,
            "/".join(self.dtypes),
            ", multi-vector" if self.multi_vector else "",
        )

    def vectors(self, shard: int) -> np.ndarray:
        """Memory-mapped array of shard ``shard`` (an index into :attr:`shards`)."""
        return np.load(self.shards[shard].vectors_path, mmap_mode="r")

    # ----------------------------------------------------------------------- locate

    def locate(self, paper_ids: Iterable[str], *, what: str = "papers") -> Selection:
        """Rows of the store that hold the vectors of ``paper_ids`` (duplicates ignored).

        Raises :class:`InputDataError` when a paper has no vector, or when the store holds
        a paper (single-vector) or a (paper, sentence) pair twice.
        """
        wanted = pl.DataFrame({"paper_id": pl.Series(list(paper_ids), dtype=pl.String)}).unique()
        columns = ["paper_id", "sentence"] if self.multi_vector else ["paper_id"]
        parts: list[pl.DataFrame] = []
        # One shard's id table at a time: a multi-vector store can hold tens of millions of
        # rows, of which a pool needs a fraction.
        for number, shard in enumerate(self.shards):
            ids = pl.read_parquet(shard.ids_path, columns=columns)
            ids = ids.with_columns(pl.col("paper_id").cast(pl.String))
            found = (
                ids.with_row_index("row")
                .join(wanted, on="paper_id", how="semi")
                .with_columns(pl.lit(number, dtype=pl.Int32).alias("shard"))
            )
            parts.append(found)
        found = pl.concat(parts, how="vertical") if parts else pl.DataFrame()
        keys = columns
        if found.height and found.select(pl.struct(keys).is_duplicated().any()).item():
            dup = found.filter(pl.struct(keys).is_duplicated()).sort(keys).row(0, named=True)
            raise InputDataError(
                f"the store holds {', '.join(f'{k}={dup[k]!r}' for k in keys)} more than once",
                path=str(self.directory),
            )
        missing = wanted.join(found.select("paper_id").unique(), on="paper_id", how="anti")
        if missing.height:
            examples = sorted(missing["paper_id"].to_list())[:5]
            raise InputDataError(
                f"{missing.height} of {wanted.height} {what} have no vector in the store, "
                f"e.g. {examples}; re-run the encode stage",
                path=str(self.directory),
            )
        found = found.sort(keys)
        counts = found.group_by("paper_id", maintain_order=True).len()
        offsets = np.zeros(counts.height + 1, dtype=np.int64)
        np.cumsum(counts["len"].to_numpy(), out=offsets[1:])
        return Selection(
            paper_ids=np.asarray(counts["paper_id"].to_list(), dtype=object),
            offsets=offsets,
            shard=found["shard"].to_numpy().astype(np.int32),
            row=found["row"].to_numpy().astype(np.int64),
            sentences=found["sentence"].to_numpy().astype(np.int32) if self.multi_vector else None,
        )

    # ----------------------------------------------------------------------- read

    def read_into(
        self,
        selection: Selection,
        start: int,
        stop: int,
        dest: np.ndarray,
        *,
        normalize: bool = False,
        cache: dict[int, np.ndarray] | None = None,
    ) -> None:
        """Copy selection rows ``[start, stop)`` into ``dest``, float32 ``(stop - start, d)``.

        ``cache`` keeps the last opened memory map between calls of one pass.
        """
        shards = selection.shard[start:stop]
        rows = selection.row[start:stop]
        cache = {} if cache is None else cache
        present = np.unique(shards)
        for shard in present:
            shard = int(shard)
            if shard not in cache:
                cache.clear()  # at most one shard mapped: its pages leave RSS when unmapped
                cache[shard] = self.vectors(shard)
            array = cache[shard]
            mask: slice | np.ndarray
            if len(present) == 1:
                mask = slice(None)
                shard_rows = rows
            else:
                mask = shards == shard
                shard_rows = rows[mask]
            # The usual case (store sorted like the selection) is a plain slice of the map;
            # fancy indexing would first copy the rows into a temporary.
            if len(shard_rows) and np.all(np.diff(shard_rows) == 1):
                source = array[shard_rows[0] : shard_rows[-1] + 1]
            else:
                source = array[shard_rows]
            if isinstance(mask, slice):
                np.copyto(dest, source, casting="same_kind")
            else:
                dest[mask] = source
        if normalize:
            faiss.normalize_L2(dest)

    def iter_chunks(
        self,
        selection: Selection,
        *,
        chunk_rows: int = DEFAULT_CHUNK_ROWS,
        normalize: bool = False,
        progress: bool = True,
        desc: str = "read vectors",
    ) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(start, float32 chunk)`` over the selection rows in order.

        The chunk buffer is reused: consume (or copy) it before asking for the next one.
        """
        first, last = 0, len(selection)
        buffer = np.empty((min(chunk_rows, max(last, 1)), self.dim), dtype=np.float32)
        cache: dict[int, np.ndarray] = {}
        with tqdm(
            total=last - first, desc=desc, unit="vec", disable=not progress, mininterval=5
        ) as bar:
            for start in range(first, last, chunk_rows):
                stop = min(start + chunk_rows, last)
                chunk = buffer[: stop - start]
                self.read_into(selection, start, stop, chunk, normalize=normalize, cache=cache)
                yield start, chunk
                bar.update(stop - start)

    def gather(
        self,
        selection: Selection,
        *,
        out: np.ndarray | None = None,
        normalize: bool = False,
        chunk_rows: int = DEFAULT_CHUNK_ROWS,
        progress: bool = True,
        desc: str = "gather vectors",
    ) -> np.ndarray:
        """Copy the selection's vectors into one float32 ``(len(selection), d)`` array.

        ``out`` (C-contiguous float32 of that shape) is filled in place when given, e.g.
        an index's own storage; otherwise one array is allocated up front. Rows are read
        shard by shard in chunks, so besides ``out`` only one chunk is ever in memory.
        """
        shape = (len(selection), self.dim)
        if out is None:
            out = np.empty(shape, dtype=np.float32)
        elif out.shape != shape or out.dtype != np.float32 or not out.flags.c_contiguous:
            raise ValueError(f"out must be a C-contiguous float32 array of shape {shape}")
        cache: dict[int, np.ndarray] = {}
        with tqdm(
            total=shape[0], desc=desc, unit="vec", disable=not progress, mininterval=5
        ) as bar:
            for start in range(0, shape[0], chunk_rows):
                stop = min(start + chunk_rows, shape[0])
                self.read_into(
                    selection, start, stop, out[start:stop], normalize=normalize, cache=cache
                )
                bar.update(stop - start)
        return out


# --------------------------------------------------------------------------- indexes


@dataclass(frozen=True)
class IndexSpec:
    """Which index to build and its parameters (config ``faiss:``)."""

    kind: str = "flat"
    ivf_nlist: int = 1024
    ivf_nprobe: int = 32
    hnsw_m: int = 32
    hnsw_ef_search: int = 256
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
    spec: IndexSpec | None = None,
    *,
    use_gpu: bool | None = None,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    progress: bool = True,
) -> BuiltIndex:
    """Build the index of ``spec.kind`` over the selection's vectors.

    ``use_gpu``: ``None`` moves flat/IVF indexes to the GPU(s) when Faiss sees any,
    ``False`` keeps the CPU, ``True`` requires a GPU.
    """
    spec = spec or IndexSpec()
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
        quantizer = faiss.IndexFlat(dim, metric)
        # The Python wrapper keeps a reference to the quantizer for the index's lifetime.
        index = faiss.IndexIVFFlat(quantizer, dim, nlist, metric)
        index.cp.seed = spec.seed
        n_train = min(n, nlist * spec.train_points_per_list)
        rng = np.random.default_rng(spec.seed)
        train_rows = np.sort(rng.choice(n, size=n_train, replace=False))
        train = store.gather(
            selection_rows(selection, train_rows),
            normalize=normalize,
            chunk_rows=chunk_rows,
            progress=progress,
            desc="IVF training sample",
        )
        log.info("training IVF (nlist=%d) on %d vectors (seed %d)", nlist, n_train, spec.seed)
        index.train(train)
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


def selection_rows(selection: Selection, rows: np.ndarray) -> Selection:
    """Rows ``rows`` of ``selection``, for reading only (without the paper bookkeeping)."""
    return Selection(
        paper_ids=np.empty(0, dtype=object),
        offsets=np.zeros(1, dtype=np.int64),
        shard=selection.shard[rows],
        row=selection.row[rows],
    )


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
