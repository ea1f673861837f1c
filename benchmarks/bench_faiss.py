"""Benchmark Faiss search through citeval's own code path (store -> index -> search).

Two parts, each writing ``benchmarks/out/faiss-<part>-<n>x<dim>.json``:

* ``exact``: a random, L2-normalised corpus of ``--n`` vectors (default 1M x 768) is written
  as float16 shards in the contracts' format, loaded with :class:`EmbeddingStore` into an
  ``IndexFlatIP`` (gathered straight into the index's storage), and searched with
  ``--queries`` random queries at ``--k``. Reports build time, queries/s and peak RSS, and
  the same search on the GPU when ``faiss-gpu`` sees one.
* ``approx``: IVF and HNSW on a smaller corpus (``--approx-n``), with build time, queries/s
  and recall@k against exact search, for a few ``nprobe`` / ``efSearch`` values.

Random vectors have no cluster structure, the worst case for IVF and HNSW; recall on real
embeddings is higher at the same settings.

    python benchmarks/bench_faiss.py --part exact --n 1000000 --dim 768 --queries 1000 --k 500
    python benchmarks/bench_faiss.py --part approx --approx-n 100000
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import psutil
import pyarrow as pa
import pyarrow.parquet as pq

from citeval.config import schema_default
from citeval.embeddings import EmbeddingStore
from citeval.faiss_index import (
    IndexSpec,
    build_index,
    exact_search_streaming,
    maybe_to_gpu,
    num_gpus,
    recall_at_k,
    search,
    set_num_threads,
)

log = logging.getLogger("bench_faiss")
OUT_DIR = Path(__file__).resolve().parent / "out"
# The config's faiss settings at their schema defaults; each part overrides what it measures.
FAISS = {
    key: schema_default(f"faiss.{key}")
    for key in ("ivf_nlist", "ivf_nprobe", "hnsw_m", "hnsw_ef_search")
}


def peak_rss_gb() -> float:
    """Peak resident set size of this process so far (Linux reports KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3)


def rss_gb() -> float:
    return round(psutil.Process().memory_info().rss / 2**30, 3)


def random_unit(n: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    x = rng.standard_normal((n, dim), dtype=np.float32)
    faiss.normalize_L2(x)
    return x


def write_random_store(
    directory: Path, n: int, dim: int, *, num_shards: int, seed: int, chunk: int = 65536
) -> None:
    """Random unit vectors as float16 shards + id tables, generated chunk by chunk."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for shard in range(num_shards):
        start, stop = shard * n // num_shards, (shard + 1) * n // num_shards
        array = np.lib.format.open_memmap(
            directory / f"shard-{shard:05d}.npy",
            mode="w+",
            dtype=np.float16,
            shape=(stop - start, dim),
        )
        for i in range(0, stop - start, chunk):
            j = min(i + chunk, stop - start)
            array[i:j] = random_unit(j - i, dim, rng)
        array.flush()
        del array
        ids = pa.table({"paper_id": [f"{i:08d}" for i in range(start, stop)]})
        pq.write_table(ids, directory / f"shard-{shard:05d}.ids.parquet")


def environment(threads: int) -> dict[str, Any]:
    return {
        "faiss": faiss.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "threads": threads,
        "gpus": num_gpus(),
        "load_average_at_start": [round(v, 2) for v in os.getloadavg()],
    }


def bench_exact(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    result: dict[str, Any] = {
        "part": "exact",
        "n": args.n,
        "dim": args.dim,
        "queries": args.queries,
        "k": args.k,
        "index": "IndexFlatIP",
    }
    started = time.perf_counter()
    write_random_store(workdir, args.n, args.dim, num_shards=args.shards, seed=args.seed)
    result["write_store_seconds"] = round(time.perf_counter() - started, 2)
    log.info("store written in %.1f s", result["write_store_seconds"])

    started = time.perf_counter()
    store = EmbeddingStore(workdir)
    selection = store.locate(f"{i:08d}" for i in range(args.n))
    result["locate_seconds"] = round(time.perf_counter() - started, 2)
    built = build_index(store, selection, "ip", IndexSpec(kind="flat", **FAISS), use_gpu=False)
    result["build_seconds"] = round(built.build_seconds, 2)
    result["rss_after_build_gb"] = rss_gb()
    result["index_bytes_gb"] = round(args.n * args.dim * 4 / 2**30, 3)
    log.info("flat index built in %.1f s, RSS %.2f GB", built.build_seconds, rss_gb())

    queries = random_unit(args.queries, args.dim, np.random.default_rng(args.seed + 1))
    started = time.perf_counter()
    search(built, queries, args.k, batch_size=args.batch_size)
    seconds = time.perf_counter() - started
    result.update(
        {
            "search_seconds": round(seconds, 2),
            "cpu_qps": round(args.queries / seconds, 2),
            "peak_rss_gb": peak_rss_gb(),
        }
    )
    log.info("CPU exact search: %.1f q/s (%.1f s)", args.queries / seconds, seconds)

    if num_gpus() > 0:
        started = time.perf_counter()
        gpu = maybe_to_gpu(built, use_gpu=True)
        result["gpu_copy_seconds"] = round(time.perf_counter() - started, 2)
        search(gpu, queries[:64], args.k, progress=False)  # warm-up
        started = time.perf_counter()
        search(gpu, queries, args.k, batch_size=args.batch_size)
        seconds = time.perf_counter() - started
        result.update(
            {"gpu_search_seconds": round(seconds, 3), "gpu_qps": round(args.queries / seconds, 2)}
        )
        log.info("GPU exact search: %.1f q/s", args.queries / seconds)
    result["peak_rss_gb"] = peak_rss_gb()
    return result


def bench_approx(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    n = args.approx_n
    result: dict[str, Any] = {
        "part": "approx",
        "n": n,
        "dim": args.dim,
        "queries": args.queries,
        "k": args.k,
        "runs": [],
    }
    write_random_store(workdir, n, args.dim, num_shards=2, seed=args.seed)
    store = EmbeddingStore(workdir)
    selection = store.locate(f"{i:08d}" for i in range(n))
    queries = random_unit(args.queries, args.dim, np.random.default_rng(args.seed + 1))

    started = time.perf_counter()
    exact_scores, exact = exact_search_streaming(store, selection, queries, args.k, "ip")
    exact_seconds = time.perf_counter() - started
    result["exact_streaming_qps"] = round(args.queries / exact_seconds, 2)
    del exact_scores

    def measure(built: Any, label: str, setting: dict[str, Any]) -> None:
        started = time.perf_counter()
        _, labels = search(built, queries, args.k, batch_size=args.batch_size, progress=False)
        seconds = time.perf_counter() - started
        recall = recall_at_k(labels, exact, args.k)
        row = {
            "index": label,
            **setting,
            "build_seconds": round(built.build_seconds, 2),
            "qps": round(args.queries / seconds, 2),
            "recall_at_k": round(float(recall.mean()), 4),
        }
        log.info("%s", row)
        result["runs"].append(row)

    spec = IndexSpec(
        **{**FAISS, "ivf_nlist": args.ivf_nlist, "ivf_nprobe": 1}, kind="ivf", seed=args.seed
    )
    built = build_index(store, selection, "ip", spec, use_gpu=False)
    for nprobe in args.nprobe:
        built.index.nprobe = min(nprobe, built.params["nlist"])
        measure(built, "ivf", {"nlist": built.params["nlist"], "nprobe": built.index.nprobe})
    del built

    spec = IndexSpec(**{**FAISS, "hnsw_m": args.hnsw_m, "hnsw_ef_search": 16}, kind="hnsw")
    built = build_index(store, selection, "ip", spec, use_gpu=False)
    for ef in args.ef_search:
        built.index.hnsw.efSearch = ef
        measure(built, "hnsw", {"m": args.hnsw_m, "ef_search": ef, "ef_construction": 40})
    result["peak_rss_gb"] = peak_rss_gb()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=["exact", "approx", "all"], default="all")
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--k", type=int, default=500)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--approx-n", type=int, default=100_000)
    parser.add_argument("--ivf-nlist", type=int, default=1024)
    parser.add_argument("--nprobe", type=int, nargs="+", default=[32, 128])
    parser.add_argument("--hnsw-m", type=int, default=32)
    parser.add_argument("--ef-search", type=int, nargs="+", default=[256, 1024])
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="where the temporary shards go (default: a temp dir, removed after)",
    )
    parser.add_argument("--out-dir", type=Path, default=OUT_DIR)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    set_num_threads(args.threads)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    # approx first: ru_maxrss is a process-wide high-water mark, and exact's is the larger.
    parts = ["approx", "exact"] if args.part == "all" else [args.part]
    for part in parts:
        env = environment(args.threads)
        workdir = Path(tempfile.mkdtemp(prefix=f"bench-faiss-{part}-", dir=args.workdir))
        try:
            result = (bench_exact if part == "exact" else bench_approx)(args, workdir)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        result["environment"] = env
        n = args.n if part == "exact" else args.approx_n
        path = args.out_dir / f"faiss-{part}-{n}x{args.dim}.json"
        path.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
        print(json.dumps(result, indent=2, sort_keys=True))
        log.info("wrote %s", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
