"""Exact against approximate search for SciNCL's deep k-NN bands, on a citation embedding.

SciNCL's hard negatives sit at rank 4,000, so every query needs its 4,001 nearest papers.
On a graph embedding written by ``python -m citeval.train embed-graph`` (unit-norm
float32 rows), ``--eligible`` of the rows (seeded) are the searched papers and
``--queries`` of those the queries. Exact search (Faiss ``IndexFlatIP``, the pipeline's
choice up to 10^13 query-paper pairs) is the reference; each approximate index is timed
(build and search) and scored by

- ``recall_at_4001``: the share of a query's exact 4,001 nearest found in its approximate
  4,001 (the pipeline's ``recall_at_k_hard``, self included);
- ``recall_at_26``: the same at the positives' depth (ranks 1 to 25 and the query);
- ``hard_band_found``: the share of the exact ranks 4,000 and 4,001 (the hard negatives)
  found anywhere in the approximate 4,001.

The approximate indexes: IVF (``IndexIVFFlat``, √n lists trained on 64 points a list, as
``citeval.train.neighbours`` builds it) at ``--nprobe`` lists, and HNSW (``IndexHNSWFlat``,
32 links, construction depth 100) at ``--ef-search``. All on the CPU with ``--threads``.

    PYTHONPATH=workflow python -m citeval.train embed-graph --seed 13 \
        --graph benchmarks/out/work-citations-1000000-c4.6-t2000-seed13/graph
    PYTHONPATH=workflow python benchmarks/bench_band_search.py \
        --embedding benchmarks/out/work-citations-1000000-c4.6-t2000-seed13/graph/embedding.npy

Writes ``benchmarks/out/band-search-<rows>.json`` (or ``--output``).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import platform
import sys
import time
from pathlib import Path

import faiss
import numpy as np

from citeval.faiss_index import ivf_training_rows, recall_at_k, trained_ivf_index

log = logging.getLogger("bench_band_search")

OUT = Path(__file__).resolve().parent / "out"
DEPTH = 4001  # the hard negatives' rank 4,000 and the query itself
POSITIVE_DEPTH = 26
HNSW_LINKS = 32
HNSW_CONSTRUCTION = 100


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedding", type=Path, required=True)
    parser.add_argument("--eligible", type=float, default=0.25, help="share of rows searched")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--nprobe", type=int, nargs="*", default=[64, 256])
    parser.add_argument("--ef-search", type=int, nargs="*", default=[4096, 6000, 8192])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--output", type=Path)
    return parser


def scores(exact: np.ndarray, found: np.ndarray) -> dict[str, float]:
    """The pipeline's recall@k (:func:`citeval.faiss_index.recall_at_k`) at both depths, and
    the share of the exact hard-negative band found anywhere in the approximate list."""
    band = exact[:, DEPTH - 2 :]
    return {
        "recall_at_4001": round(float(recall_at_k(found, exact, DEPTH).mean()), 4),
        "recall_at_26": round(float(recall_at_k(found, exact, POSITIVE_DEPTH).mean()), 4),
        "hard_band_found": round(
            float(np.mean([np.isin(b, f).mean() for b, f in zip(band, found, strict=True)])), 4
        ),
    }


def timed(function):
    started = time.perf_counter()
    result = function()
    return result, round(time.perf_counter() - started, 3)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    args = build_parser().parse_args(argv)
    faiss.omp_set_num_threads(args.threads)
    vectors = np.load(args.embedding)
    rng = np.random.default_rng(args.seed)
    eligible = np.sort(rng.choice(len(vectors), size=round(args.eligible * len(vectors)),
                                  replace=False))  # fmt: skip
    papers = np.ascontiguousarray(vectors[eligible])
    queries = papers[np.sort(rng.choice(len(papers), size=args.queries, replace=False))]
    dim = papers.shape[1]

    flat = faiss.IndexFlatIP(dim)
    flat.add(papers)
    (_, exact), exact_seconds = timed(lambda: flat.search(queries, DEPTH))
    log.info("exact: %.1f s", exact_seconds)
    results: dict[str, dict] = {"flat": {"search_seconds": exact_seconds}}

    nlist = max(1, round(math.sqrt(len(papers))))

    def build_ivf():
        sample = ivf_training_rows(len(papers), nlist, 64, args.seed)
        index = trained_ivf_index(papers[sample], nlist, "cosine", args.seed)
        index.add(papers)
        return index

    ivf, ivf_build = timed(build_ivf)
    for nprobe in args.nprobe:
        ivf.nprobe = nprobe
        (_, found), seconds = timed(lambda: ivf.search(queries, DEPTH))
        results[f"ivf_nprobe{nprobe}"] = {
            "nlist": nlist, "build_seconds": ivf_build, "search_seconds": seconds,
            **scores(exact, found),
        }  # fmt: skip
        log.info("ivf nprobe %d: %s", nprobe, results[f"ivf_nprobe{nprobe}"])

    def build_hnsw():
        index = faiss.IndexHNSWFlat(dim, HNSW_LINKS, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = HNSW_CONSTRUCTION
        index.add(papers)
        return index

    hnsw, hnsw_build = timed(build_hnsw)
    for ef in args.ef_search:
        hnsw.hnsw.efSearch = ef
        (_, found), seconds = timed(lambda: hnsw.search(queries, DEPTH))
        results[f"hnsw_ef{ef}"] = {
            "links": HNSW_LINKS, "ef_construction": HNSW_CONSTRUCTION,
            "build_seconds": hnsw_build, "search_seconds": seconds, **scores(exact, found),
        }  # fmt: skip
        log.info("hnsw ef %d: %s", ef, results[f"hnsw_ef{ef}"])

    record = {
        "benchmark": "band-search",
        "command": " ".join([Path(sys.argv[0]).name, *(argv or sys.argv[1:])]),
        "embedding": {"path": str(args.embedding), "rows": len(vectors), "dim": dim},
        "papers": len(papers),
        "queries": args.queries,
        "depth": DEPTH,
        "results": results,
        "machine": {"cpus": os.cpu_count(), "threads": args.threads,
                    "python": platform.python_version(), "faiss": faiss.__version__},
    }  # fmt: skip
    output = args.output or OUT / f"band-search-{len(vectors)}.json"
    output.write_text(json.dumps(record, indent=2) + "\n")
    log.info("wrote %s", output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
