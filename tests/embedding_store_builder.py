"""Write small embedding stores and collections in the contracts' format, for stage tests.

Shards are float16 ``.npy`` files plus ``.ids.parquet`` tables; brute-force references use
the same float16-rounded vectors the store holds.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import faiss
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from threadpoolctl import threadpool_limits

from citeval.faiss_index import set_num_threads

DIM = 24


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """One Faiss/BLAS thread; the process-wide settings are put back afterwards."""
    faiss_threads = faiss.omp_get_max_threads()
    limiter = threadpool_limits(limits=None)  # records the current limits, changes nothing
    set_num_threads(1)
    try:
        yield
    finally:
        limiter.restore_original_limits()
        faiss.omp_set_num_threads(faiss_threads)


def paper_ids(n: int, *, offset: int = 0) -> list[str]:
    return [f"p{i + offset:05d}" for i in range(n)]


def write_store(
    directory: Path,
    ids: list[str],
    vectors: np.ndarray,
    *,
    sentences: list[int] | None = None,
    num_shards: int = 3,
) -> np.ndarray:
    """Write ``vectors`` as shards; return them as the float32 values the store holds."""
    directory.mkdir(parents=True, exist_ok=True)
    n = len(ids)
    half = vectors.astype(np.float16)
    for shard in range(num_shards):
        start, stop = shard * n // num_shards, (shard + 1) * n // num_shards
        np.save(directory / f"shard-{shard:05d}.npy", half[start:stop])
        columns: dict[str, pa.Array] = {"paper_id": pa.array(ids[start:stop], pa.string())}
        if sentences is not None:
            columns["sentence"] = pa.array(sentences[start:stop], pa.int32())
        pq.write_table(pa.table(columns), directory / f"shard-{shard:05d}.ids.parquet")
    return half.astype(np.float32)


def random_vectors(n: int, seed: int, dim: int = DIM) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal((n, dim)) / np.sqrt(dim)).astype(np.float32)


def brute_force(
    queries: np.ndarray, base: np.ndarray, k: int, similarity: str
) -> tuple[np.ndarray, np.ndarray]:
    q, b = queries.astype(np.float64), base.astype(np.float64)
    if similarity == "cosine":
        q = q / np.linalg.norm(q, axis=1, keepdims=True)
        b = b / np.linalg.norm(b, axis=1, keepdims=True)
    scores = -((q[:, None, :] - b[None, :, :]) ** 2).sum(-1) if similarity == "l2" else q @ b.T
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(scores, order, axis=1), order


def write_collection(
    root: Path, query_ids: list[str], pool_ids: list[str], group: str = "pool-x"
) -> tuple[Path, Path]:
    queries = root / "queries.parquet"
    pools = root / "pools.parquet"
    pq.write_table(pa.table({"group": [group] * len(query_ids), "query_id": query_ids}), queries)
    # A second rep with another pool must not leak into rep 0.
    pq.write_table(
        pa.table(
            {
                "group": [group] * (len(pool_ids) + 1),
                "rep": pa.array([0] * len(pool_ids) + [1], pa.int16()),
                "paper_id": [*pool_ids, query_ids[0]],
            }
        ),
        pools,
    )
    return queries, pools
