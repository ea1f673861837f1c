"""Benchmark SciNCL's training data from the citation graph: graph, embedding, bands.

On a synthetic corpus's citations (below), each step runs as one child process, with its
wall time, CPU time and peak RSS (``os.wait4``):

1. ``graph``: ``python -m citeval.train graph`` (DuckDB: the citations renumbered);
2. the embedding, by each of ``--methods``:

   - ``cleora``: the pipeline's, ``python -m citeval.train embed-graph`` (pycleora);
   - ``randne``: scikit-network's ``RandomProjection`` (RandNE) of the symmetric
     adjacency, the pipeline's embedding before Cleora, run the way it ran there;

3. ``triplets`` (with ``--queries``): ``python -m citeval.train triplets --sampler
   scincl`` over the Cleora embedding, with the schema's bands (ranks 21-25 and
   3,999-4,000); its report holds the neighbour search and, for an IVF index, its recall.

The quality of an embedding is what the triplet sampler uses it for: for ``--sample``
nodes (seeded), an exact inner-product search over every node (Faiss) ranks the
neighbours, and the record gives

- ``citation_r_precision``: the share of a node's top-d neighbours that it cites or is
  cited by, d its degree (at most 25);
- ``same_topic_at_25``: the share of the top 25 from the node's own topic;
- ``same_topic_positive_band`` and ``same_topic_hard_band``: that share in SciNCL's bands.

The corpus: ``--num-papers`` papers in ``--topics`` topics of Zipf-distributed sizes; each
paper cites a Poisson number of papers (mean ``--citations``: 4.6 gives the 46M citations
of 10M papers that the S2ORC-density synthetic corpus has), ``--in-topic`` of them from its
own topic, the rest from anywhere; self-citations and repeats are dropped. ``--eligible``
of the papers (a quarter, as after the prefilter at S2ORC's density) are the prefiltered
ones that triplets may use. It is generated once per size and seed (in a child, not
timed) under ``benchmarks/out/data``.

    PYTHONPATH=workflow python benchmarks/bench_graph_embedding.py --num-papers 1000000
    PYTHONPATH=workflow python benchmarks/bench_graph_embedding.py --num-papers 10000000 \
        --methods cleora --queries 100000 --sample 1000

Writes ``benchmarks/out/graph-embedding-<papers>.json`` (or ``--output``).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
from bench_ingest import run_measured

log = logging.getLogger("bench_graph_embedding")

ROOT = Path(__file__).resolve().parent
OUT = ROOT / "out"
METHODS = ("cleora", "randne")
POSITIVE_BAND = (20, 25)  # 0-based ranks, the schema's k_positive 25 and per_query 5
HARD_BAND = (3998, 4000)  # k_hard 4,000 and hard_negatives 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-papers", type=int, default=1_000_000)
    parser.add_argument("--citations", type=float, default=4.6, help="mean citations a paper")
    parser.add_argument("--topics", type=int, default=2000)
    parser.add_argument("--in-topic", type=float, default=0.8)
    parser.add_argument("--eligible", type=float, default=0.25, help="share prefiltered")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--iterations", type=int, default=16, help="Cleora's (the schema's)")
    parser.add_argument(
        "--randne-iterations", type=int, default=3, help="RandNE's (its old default)"
    )
    parser.add_argument("--alpha", type=float, default=0.5, help="RandNE's decay (its old default)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--sample", type=int, default=2000, help="nodes whose neighbours count")
    parser.add_argument("--queries", type=int, default=0, help="scincl triplet queries (0: none)")
    parser.add_argument("--index", default="auto", help="train.triplets.scincl.index")
    parser.add_argument("--min-recall", type=float, default=0.95, help="an IVF index's")
    parser.add_argument("--memory-limit", default="4GB", help="DuckDB's, for the graph step")
    parser.add_argument("--fresh", action="store_true", help="rerun the graph and embeddings")
    parser.add_argument("--output", type=Path)
    # Child modes (internal).
    parser.add_argument("--generate", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--randne", nargs=2, type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--quality", nargs=2, type=Path, help=argparse.SUPPRESS)
    return parser


def generate(args: argparse.Namespace, directory: Path) -> None:
    """Write the synthetic corpus's ``citations/`` (``citing_id``, ``cited_id``), the
    prefiltered papers (``filtered.parquet``, ``--eligible`` of them, seeded) and each
    paper's topic (``topics.npy``, by paper number; paper i is ``p<i>``)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    rng = np.random.default_rng(args.seed)
    n = args.num_papers
    weights = 1.0 / np.arange(1, args.topics + 1)
    topic = rng.choice(args.topics, size=n, p=weights / weights.sum()).astype(np.int32)
    by_topic = np.argsort(topic, kind="stable").astype(np.int64)
    starts = np.searchsorted(topic[by_topic], np.arange(args.topics))
    sizes = np.bincount(topic, minlength=args.topics)
    citing = np.repeat(np.arange(n, dtype=np.int64), rng.poisson(args.citations, size=n))
    in_topic = rng.random(len(citing)) < args.in_topic
    own = topic[citing]
    offsets = (rng.random(len(citing)) * sizes[own]).astype(np.int64)
    cited = np.where(in_topic, by_topic[starts[own] + offsets], rng.integers(0, n, len(citing)))
    keep = citing != cited
    key = np.unique(citing[keep] * n + cited[keep])
    del citing, cited, keep, in_topic, own, offsets

    def ids(numbers: np.ndarray) -> pa.Array:
        return pc.binary_join_element_wise("p", pa.array(numbers).cast(pa.string()), "")

    (directory / "citations").mkdir(parents=True, exist_ok=True)
    citations = pa.table({"citing_id": ids(key // n), "cited_id": ids(key % n)})
    pq.write_table(citations, directory / "citations" / "part-0.parquet")
    eligible = np.flatnonzero(rng.random(n) < args.eligible)
    pq.write_table(pa.table({"paper_id": ids(eligible)}), directory / "filtered.parquet")
    np.save(directory / "topics.npy", topic)


def randne(graph_dir: Path, output_dir: Path, args: argparse.Namespace) -> None:
    """scikit-network's RandomProjection of the symmetric adjacency, as the pipeline ran it."""
    import pyarrow.parquet as pq
    from scipy.sparse import csr_matrix
    from sknetwork.embedding import RandomProjection

    edges = pq.read_table(graph_dir / "edges.parquet")
    citing, cited = (edges.column(name).to_numpy() for name in ("citing", "cited"))
    n = pq.ParquetFile(graph_dir / "nodes.parquet").metadata.num_rows
    ones = np.ones(len(citing), dtype=np.float32)
    references = csr_matrix((ones, (citing, cited)), shape=(n, n))
    adjacency = (references + references.T).tocsr()
    adjacency.data[:] = 1.0
    projection = RandomProjection(
        n_components=args.dim,
        alpha=args.alpha,
        n_iter=args.randne_iterations,
        random_state=args.seed,
    )
    vectors = np.ascontiguousarray(projection.fit_transform(adjacency), dtype=np.float32)
    output_dir.mkdir(parents=True, exist_ok=True)
    np.save(output_dir / "embedding.npy", vectors)


def quality(graph_dir: Path, embedding: Path, args: argparse.Namespace) -> dict:
    """The neighbour shares of the module docstring, over ``--sample`` seeded nodes."""
    import faiss
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    from scipy.sparse import csr_matrix

    faiss.omp_set_num_threads(args.threads)
    vectors = np.load(embedding)
    faiss.normalize_L2(vectors)
    papers = pq.read_table(graph_dir / "nodes.parquet").column("paper_id")
    numbers = pc.utf8_slice_codeunits(papers, 1).cast("int64").to_numpy()
    topic = np.load(data_folder(args) / "topics.npy")[numbers]
    edges = pq.read_table(graph_dir / "edges.parquet")
    citing, cited = (edges.column(name).to_numpy() for name in ("citing", "cited"))
    n = len(vectors)
    ones = np.ones(len(citing), dtype=np.int8)
    adjacency = csr_matrix((ones, (citing, cited)), shape=(n, n))
    adjacency = (adjacency + adjacency.T).tocsr()
    rng = np.random.default_rng(args.seed)
    sample = np.sort(rng.choice(n, size=min(args.sample, n), replace=False))
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    depth = min(HARD_BAND[1] + 1, n)
    started = time.perf_counter()
    _, found = index.search(vectors[sample], depth)
    search_seconds = time.perf_counter() - started
    r_precision, at_25, positive_band, hard_band = [], [], [], []
    for node, row in zip(sample, found, strict=True):
        ranked = row[(row != node) & (row >= 0)]
        neighbours = adjacency.indices[adjacency.indptr[node] : adjacency.indptr[node + 1]]
        d = min(len(neighbours), 25)
        if d:
            r_precision.append(np.isin(ranked[:d], neighbours).mean())
        same = topic[ranked] == topic[node]
        at_25.append(same[:25].mean())
        positive_band.append(same[slice(*POSITIVE_BAND)].mean())
        if len(ranked) >= HARD_BAND[1]:
            hard_band.append(same[slice(*HARD_BAND)].mean())
    return {
        "sample": len(sample),
        "citation_r_precision": round(float(np.mean(r_precision)), 4),
        "same_topic_at_25": round(float(np.mean(at_25)), 4),
        "same_topic_positive_band": round(float(np.mean(positive_band)), 4),
        "same_topic_hard_band": round(float(np.mean(hard_band)), 4) if hard_band else None,
        "exact_search_seconds": round(search_seconds, 2),
    }


def measured_once(name: str, command: list[str], work: Path, fresh: bool) -> dict:
    """``run_measured``'s record of ``command``, kept in ``work`` and reused unless ``fresh``:
    the triplets can be measured again without embedding 10M papers again."""
    record = work / f"{name}.json"
    if record.is_file() and not fresh:
        log.info("%s: reusing %s", name, record)
        return json.loads(record.read_text())
    stats = asdict(run_measured(name, command, work / f"{name}.log"))
    record.write_text(json.dumps(stats, indent=2) + "\n")
    return stats


def data_folder(args: argparse.Namespace) -> Path:
    name = f"citations-{args.num_papers}-c{args.citations}-t{args.topics}-seed{args.seed}"
    return OUT / "data" / name


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.generate:
        generate(args, args.generate)
        return 0
    if args.randne:
        randne(*args.randne, args)
        return 0
    if args.quality:
        print(json.dumps(quality(*args.quality, args)))
        return 0

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    me = [sys.executable, str(Path(__file__).resolve())]
    shared = ["--num-papers", str(args.num_papers), "--citations", str(args.citations)]
    shared += ["--topics", str(args.topics), "--in-topic", str(args.in_topic)]
    shared += ["--eligible", str(args.eligible), "--seed", str(args.seed), "--dim", str(args.dim)]
    shared += ["--iterations", str(args.iterations), "--alpha", str(args.alpha)]
    shared += ["--randne-iterations", str(args.randne_iterations)]
    shared += ["--threads", str(args.threads), "--sample", str(args.sample)]
    data = data_folder(args)
    if not (data / "topics.npy").is_file():
        log.info("generating the citations under %s", data)
        run_measured("generate", [*me, *shared, "--generate", str(data)], OUT / "graph-gen.log")
    work = OUT / f"work-{data.name}"
    work.mkdir(parents=True, exist_ok=True)
    train = [sys.executable, "-m", "citeval.train"]
    threads = ["--threads", str(args.threads)]
    steps = {}
    graph = work / "graph"
    command = [*train, "graph", "--citations", str(data / "citations")]
    command += ["--output-dir", str(graph), "--memory-limit", args.memory_limit, *threads]
    steps["graph"] = measured_once("graph", command, work, args.fresh)
    report = json.loads((graph / "report.json").read_text())
    log.info("graph: %d nodes, %d edges", report["nodes"], report["edges"])
    embeddings = {}
    for method in args.methods:
        folder = work / f"graph-{method}"
        folder.mkdir(parents=True, exist_ok=True)
        for name in ("nodes.parquet", "edges.parquet"):
            (folder / name).unlink(missing_ok=True)
            (folder / name).symlink_to(graph / name)
        if method == "cleora":
            command = [*train, "embed-graph", "--graph", str(folder), "--dim", str(args.dim)]
            command += ["--iterations", str(args.iterations), "--seed", str(args.seed), *threads]
        else:
            command = [*me, *shared, "--randne", str(folder), str(folder)]
        stats = measured_once(method, command, work, args.fresh)
        scored = work / f"{method}.quality.json"
        check = [*me, *shared, "--quality", str(folder), str(folder / "embedding.npy")]
        with open(scored, "w") as handle:
            subprocess.run(check, stdout=handle, check=True)
        embeddings[method] = {"embed": stats, "quality": json.loads(scored.read_text())}
        log.info("%s quality: %s", method, embeddings[method]["quality"])
    if args.queries and "cleora" in args.methods:
        command = [*train, "triplets", "--sampler", "scincl", "--graph", str(work / "graph-cleora")]
        command += [
            "--filtered",
            str(data / "filtered.parquet"),
            "--output-dir",
            str(work / "scincl"),
        ]
        command += ["--num-queries", str(args.queries), "--seed", str(args.seed), *threads]
        command += ["--index", args.index, "--min-recall", str(args.min_recall)]
        steps["triplets"] = measured_once("triplets", command, work, fresh=True)
        steps["triplets"]["report"] = json.loads(
            (work / "scincl" / "triplets_report.json").read_text()
        )
    record = {
        "benchmark": "graph-embedding",
        "command": " ".join(["python benchmarks/bench_graph_embedding.py", *sys.argv[1:]]),
        "graph": {"papers": args.num_papers, "nodes": report["nodes"], "edges": report["edges"],
                  "topics": args.topics, "citations": args.citations, "in_topic": args.in_topic,
                  "eligible": args.eligible, "seed": args.seed},
        "settings": {"dim": args.dim, "iterations": args.iterations, "threads": args.threads,
                     "randne_iterations": args.randne_iterations, "alpha": args.alpha},
        "steps": steps,
        "embeddings": embeddings,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "python": platform.python_version()},
    }  # fmt: skip
    output = args.output or OUT / f"graph-embedding-{args.num_papers}.json"
    output.write_text(json.dumps(record, indent=2) + "\n")
    log.info("wrote %s", output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
