"""Benchmark ``citeval.ingest``: parse every shard (N at a time) and merge, as Snakemake would.

Each step runs as its own ``python -m citeval.ingest`` process, so the timings include
start-up and the peak RSS of every process is measured separately (``os.wait4`` returns
the child's ``getrusage``). Without ``--inputs`` a synthetic S2ORC v2020 corpus is
generated once with ``citeval.synth.generate_corpus`` and cached under
``benchmarks/out/data/``; generation is not timed.

    python benchmarks/bench_ingest.py --num-papers 500000 --num-shards 4
    python benchmarks/bench_ingest.py --num-papers 2000000 --num-shards 8 --density s2orc-v2020
    python benchmarks/bench_ingest.py --inputs a.jsonl.gz b.jsonl.gz --format s2orc_v2020

Writes ``benchmarks/out/ingest-<papers>.json``: papers, seconds, papers/s, the parse and
merge wall and CPU seconds, the peak RSS of the parse workers and of the merge, the input
size, and the machine's load (this box is shared: CPU seconds are the steadier figure).
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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

log = logging.getLogger("bench_ingest")

ROOT = Path(__file__).resolve().parent
OUT = ROOT / "out"


@dataclass
class ProcessStats:
    """Wall time and resource use of one finished child process."""

    name: str
    seconds: float
    user_seconds: float
    system_seconds: float
    peak_rss_mb: float


def run_measured(name: str, argv: list[str], log_path: Path) -> ProcessStats:
    """Run ``argv``, wait for it with ``os.wait4`` and return its own rusage."""
    started = time.perf_counter()
    with open(log_path, "wb") as log_file:
        process = subprocess.Popen(argv, stdout=log_file, stderr=subprocess.STDOUT)
        # wait4 reaps this one child and gives its rusage alone, unlike RUSAGE_CHILDREN,
        # which would mix the parse workers and the merge.
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    if process.returncode != 0:
        tail = log_path.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{name} failed with status {process.returncode}:\n{tail}")
    return ProcessStats(
        name=name,
        seconds=round(seconds, 3),
        user_seconds=round(usage.ru_utime, 3),
        system_seconds=round(usage.ru_stime, 3),
        peak_rss_mb=round(usage.ru_maxrss / 1024, 1),  # Linux reports KiB
    )


def synthetic_inputs(num_papers: int, num_shards: int, seed: int, density: str) -> list[Path]:
    """The cached synthetic corpus, generated on first use."""
    from citeval.synth import DENSITIES, generate_corpus

    suffix = "" if density == "default" else f"-{density}"
    directory = OUT / "data" / f"synth-{num_papers}x{num_shards}-seed{seed}{suffix}"
    pattern = str(directory / "s2orc-{shard}.jsonl.gz")
    expected = [directory / f"s2orc-{i:05d}.jsonl.gz" for i in range(num_shards)]
    if all(p.is_file() for p in expected):
        return expected
    log.info("generating %d papers in %d shards under %s", num_papers, num_shards, directory)
    started = time.perf_counter()
    paths = generate_corpus(
        num_papers,
        num_shards,
        seed,
        1990,
        2019,
        pattern,
        density=DENSITIES[density],
        progress=False,
    )
    log.info("generated in %.1f s", time.perf_counter() - started)
    return [Path(p) for p in paths]


def shard_name(path: Path, index: int) -> str:
    stem = path.name.split(".")[0]
    return f"{index:05d}-{stem}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", nargs="+", type=Path, help="input shards (default: synth)")
    parser.add_argument("--format", default="s2orc_v2020", help="ingest --format of --inputs")
    parser.add_argument("--num-papers", type=int, default=500_000)
    parser.add_argument("--num-shards", type=int, default=4)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument(
        "--density",
        default="default",
        choices=["default", "s2orc-v2020"],
        help="citations and abstracts per synthetic paper (citeval.synth.DENSITIES)",
    )
    parser.add_argument("--workers", type=int, default=2, help="parse processes at a time")
    parser.add_argument("--threads", type=int, default=2, help="merge DuckDB threads")
    parser.add_argument("--memory-limit", default="2GB")
    parser.add_argument("--rows-per-part", type=int, default=1_000_000)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="keep staging and corpus")
    parser.add_argument("--output", type=Path, default=None, help="result JSON path")
    args = parser.parse_args(argv)
    logging.basicConfig(level="INFO", format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    if args.inputs:
        inputs, fmt, label = args.inputs, args.format, None
    else:
        inputs = synthetic_inputs(args.num_papers, args.num_shards, args.seed, args.density)
        fmt = "s2orc_v2020"
        label = (
            args.num_papers if args.density == "default" else f"{args.num_papers}-{args.density}"
        )
    workdir = args.workdir or OUT / f"work-ingest-{label or 'inputs'}"
    shutil.rmtree(workdir, ignore_errors=True)
    (workdir / "logs").mkdir(parents=True)
    staging = [workdir / "staging" / shard_name(p, i) for i, p in enumerate(inputs)]
    corpus = workdir / "corpus"
    python = [sys.executable, "-m", "citeval.ingest"]
    load_before = os.getloadavg()

    def parse(job: tuple[Path, Path]) -> ProcessStats:
        source, target = job
        argv = [*python, "parse", "--format", fmt, "--input", str(source)]
        argv += ["--output-dir", str(target), "--max-bad-fraction", "0"]
        return run_measured(f"parse {source.name}", argv, workdir / "logs" / f"{target.name}.log")

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=args.workers) as pool:
        parse_stats = list(pool.map(parse, zip(inputs, staging, strict=True)))
    parse_seconds = time.perf_counter() - started
    log.info("parse: %d shards in %.1f s", len(inputs), parse_seconds)

    argv = [*python, "merge", "--staging", *map(str, staging), "--output-dir", str(corpus)]
    argv += ["--rows-per-part", str(args.rows_per_part), "--memory-limit", args.memory_limit]
    argv += ["--threads", str(args.threads), "--on-duplicate", "error"]
    merge_stats = run_measured("merge", argv, workdir / "logs" / "merge.log")
    seconds = time.perf_counter() - started
    log.info("merge: %.1f s", merge_stats.seconds)

    report = json.loads((corpus / "ingest_report.json").read_text())
    totals = report["totals"]
    papers = totals["papers_written"]
    parse_cpu = sum(s.user_seconds + s.system_seconds for s in parse_stats)
    merge_cpu = merge_stats.user_seconds + merge_stats.system_seconds
    result = {
        "papers": papers,
        "citations": totals["citation_edges_written"],
        "citation_edges_read": totals["citation_edges_read"],
        "inputs": [str(p) for p in inputs],
        "input_mb": round(sum(p.stat().st_size for p in inputs) / 1e6, 1),
        "seconds": round(seconds, 2),
        "papers_per_s": round(papers / seconds),
        "cpu_seconds": round(parse_cpu + merge_cpu, 2),
        "papers_per_cpu_s": round(papers / (parse_cpu + merge_cpu)),
        "parse": {
            "seconds": round(parse_seconds, 2),
            "cpu_seconds": round(parse_cpu, 2),
            "workers": args.workers,
            "peak_rss_mb": max(s.peak_rss_mb for s in parse_stats),
            "shards": [asdict(s) for s in parse_stats],
        },
        "merge": {**asdict(merge_stats), "cpu_seconds": round(merge_cpu, 2)},
        "peak_rss_mb": max(merge_stats.peak_rss_mb, *(s.peak_rss_mb for s in parse_stats)),
        "settings": {
            "memory_limit": args.memory_limit,
            "threads": args.threads,
            "rows_per_part": args.rows_per_part,
            "format": fmt,
            "density": None if args.inputs else args.density,
        },
        "machine": {
            "cpus": os.cpu_count(),
            "load_avg_before": [round(x, 2) for x in load_before],
            "load_avg_after": [round(x, 2) for x in os.getloadavg()],
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "unix_time": int(time.time()),
    }
    output = args.output or OUT / f"ingest-{label or papers}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k not in ("parse", "inputs")}, indent=2))
    log.info("wrote %s", output)
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
