"""Benchmark local citation contexts: ``citeval.contexts extract`` per shard, then ``merge``.

Four steps, each child process run and measured on its own (wall, CPU, peak RSS from
``os.wait4``, the child's own ``ru_maxrss``), as Snakemake would run them:

1. ``python -m citeval.synth`` writes a synthetic S2ORC v2020 corpus with its full text
   (``--fulltext-pattern``: one ``pdf_parses`` shard per metadata shard);
2. ``python -m citeval.ingest parse`` per metadata shard (``--workers`` at a time) and
   ``merge``, so that the contexts merge has a corpus to check the papers against;
3. ``python -m citeval.contexts extract`` per full-text shard (``--workers`` at a time)
   with the default settings (``--format s2orc_v2020``, a 200-character window);
4. ``python -m citeval.contexts merge`` of all the shards against ``corpus/papers``
   with ``--threads`` and ``--memory-limit``.

    python benchmarks/bench_contexts.py --num-papers 20000 --num-shards 2
    PYTHONPATH=workflow python benchmarks/bench_contexts.py --num-papers 1000000 \
        --num-shards 16 --threads 2 --memory-limit 2GB

The children import ``citeval`` from wherever this process would (``PYTHONPATH`` first);
nothing of ``citeval`` is imported here, since what this process holds at fork would count
in every child's peak RSS. Everything is written under ``--workdir`` (default: a new
temporary folder), which is removed at the end unless ``--keep``.

Writes ``benchmarks/out/contexts.json`` (or ``--output``): the command line, the settings,
each step's wall and CPU seconds and peak RSS (MB), the extract throughput (papers read,
contexts written, contexts/s and full-text MB/s of gzip input, per wall and per CPU
second, and the largest shard's peak RSS), the merge's contexts kept, the input sizes in
bytes, the code that ran (``settings.citeval``) and the machine (CPU model, cores, memory,
load average before and after, Python and package versions).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from importlib import metadata
from pathlib import Path

from bench_ingest import ProcessStats, citeval_in_use
from bench_ingest import run_measured as run_child

log = logging.getLogger("bench_contexts")

ROOT = Path(__file__).resolve().parent
OUT = ROOT / "out"
FIRST_YEAR = 1990
LAST_YEAR = 2019
PACKAGES = ("duckdb", "pyarrow", "polars", "msgspec", "isal", "numpy")


def run_measured(
    name: str, argv: list[str], log_path: Path, env: dict[str, str] | None = None
) -> ProcessStats:
    """bench_ingest's measured child process, logged."""
    log.info("%s: %s", name, shlex.join(argv[1:]))
    log_path.parent.mkdir(parents=True, exist_ok=True)
    stats = run_child(name, argv, log_path, env)
    log.info("%s: %.1f s, peak RSS %.0f MB", name, stats.seconds, stats.peak_rss_mb)
    return stats


def run_parallel(
    jobs: list, workers: int, run: Callable[..., ProcessStats]
) -> tuple[list[ProcessStats], float]:
    """``run`` over ``jobs``, ``workers`` at a time; the stats and the wall seconds of all."""
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        stats = list(pool.map(run, jobs))
    return stats, round(time.perf_counter() - started, 3)


def cpu_seconds(stats: list[ProcessStats]) -> float:
    return round(sum(s.user_seconds + s.system_seconds for s in stats), 2)


def step_record(stats: list[ProcessStats], seconds: float, **extra) -> dict:
    """One step: wall and CPU seconds, the peak RSS of its largest process, its processes."""
    record = {
        "seconds": round(seconds, 2),
        "cpu_seconds": cpu_seconds(stats),
        "peak_rss_mb": max(s.peak_rss_mb for s in stats),
        **extra,
    }
    if len(stats) > 1 and "shards" not in extra:  # the shards list them already
        record["processes"] = [asdict(s) for s in stats]
    return record


def cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def memory_total_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)  # KiB
    except OSError:
        pass
    return None


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def rate(count: float, seconds: float) -> float | None:
    return round(count / seconds, 1) if seconds > 0 else None


def prepare_workdir(requested: Path | None) -> Path:
    """``--workdir`` (which must be absent or empty) or a new temporary folder."""
    if requested is None:
        return Path(tempfile.mkdtemp(prefix="bench-contexts-"))
    if requested.exists() and any(requested.iterdir()):
        raise SystemExit(f"--workdir {requested} is not empty; give a new or empty folder")
    requested.mkdir(parents=True, exist_ok=True)
    return requested


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-papers", type=int, default=1_000_000)
    parser.add_argument("--num-shards", type=int, default=16)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument(
        "--workers", type=int, default=2, help="ingest parse and extract processes at a time"
    )
    parser.add_argument("--threads", type=int, default=2, help="merge DuckDB threads")
    parser.add_argument("--memory-limit", default="2GB", help="merge --memory-limit")
    parser.add_argument(
        "--workdir", type=Path, default=None, help="new or empty folder (default: a temp dir)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the workdir")
    parser.add_argument("--output", type=Path, default=OUT / "contexts.json")
    args = parser.parse_args(argv)
    logging.basicConfig(level="INFO", format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    work = prepare_workdir(args.workdir)
    log.info("workdir %s", work)
    logs = work / "logs"
    data = work / "data"
    data.mkdir()
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}  # as the pipeline's rules run them
    machine = {
        "cpus": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)),
        "cpu_model": cpu_model(),
        "memory_gib": memory_total_gib(),
        "load_avg_before": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": package_versions(),
    }
    try:
        result = run_steps(args, work, data, logs, env)
    finally:
        if args.keep:
            log.info("kept %s", work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    machine["load_avg_after"] = [round(x, 2) for x in os.getloadavg()]
    result = {
        "benchmark": "contexts",
        "command": shlex.join([Path(sys.executable).name, *sys.argv]),
        **result,
        "settings": {
            "num_papers": args.num_papers,
            "num_shards": args.num_shards,
            "seed": args.seed,
            "first_year": FIRST_YEAR,
            "last_year": LAST_YEAR,
            "workers": args.workers,
            "threads": args.threads,
            "memory_limit": args.memory_limit,
            "extract": "defaults: --format s2orc_v2020, 200-character window, marker CIT",
            "workdir": str(work),
            "kept": args.keep,
            "citeval": citeval_in_use(),
        },
        "machine": machine,
        "unix_time": int(time.time()),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(summary(result), indent=2))
    log.info("wrote %s", args.output)
    return 0


def run_steps(
    args: argparse.Namespace, work: Path, data: Path, logs: Path, env: dict[str, str]
) -> dict:
    shards = range(args.num_shards)
    metadata_files = [data / f"s2orc-{i:05d}.jsonl.gz" for i in shards]
    fulltext_files = [data / f"pdf_parses-{i:05d}.jsonl.gz" for i in shards]
    started_all = time.perf_counter()

    # 1. the synthetic corpus with its full text
    argv = [sys.executable, "-m", "citeval.synth", "--num-papers", str(args.num_papers)]
    argv += ["--num-shards", str(args.num_shards), "--seed", str(args.seed)]
    argv += ["--first-year", str(FIRST_YEAR), "--last-year", str(LAST_YEAR)]
    argv += ["--output-pattern", str(data / "s2orc-{shard}.jsonl.gz")]
    argv += ["--fulltext-pattern", str(data / "pdf_parses-{shard}.jsonl.gz"), "--no-progress"]
    synth = run_measured("synth", argv, logs / "synth.log", env)
    missing = [str(p) for p in metadata_files + fulltext_files if not p.is_file()]
    if missing:
        raise RuntimeError(f"synth did not write {missing}")
    metadata_bytes = sum(p.stat().st_size for p in metadata_files)
    fulltext_bytes = sum(p.stat().st_size for p in fulltext_files)

    # 2. ingest: parse every metadata shard, merge into the corpus
    ingest = [sys.executable, "-m", "citeval.ingest"]
    staging = [work / "ingest-staging" / f"{i:05d}" for i in shards]
    corpus = work / "corpus"

    def parse(job: tuple[Path, Path]) -> ProcessStats:
        source, target = job
        argv = [*ingest, "parse", "--format", "s2orc_v2020", "--input", str(source)]
        argv += ["--output-dir", str(target), "--max-bad-fraction", "0"]
        return run_measured(f"parse {source.name}", argv, logs / f"parse-{target.name}.log", env)

    parse_stats, parse_seconds = run_parallel(
        list(zip(metadata_files, staging, strict=True)), args.workers, parse
    )
    argv = [*ingest, "merge", "--staging", *map(str, staging), "--output-dir", str(corpus)]
    argv += ["--memory-limit", args.memory_limit, "--threads", str(args.threads)]
    argv += ["--on-duplicate", "error"]
    ingest_merge = run_measured("ingest merge", argv, logs / "ingest-merge.log", env)
    shutil.rmtree(work / "ingest-staging", ignore_errors=True)
    ingest_totals = json.loads((corpus / "ingest_report.json").read_text())["totals"]

    # 3. contexts extract, one process per full-text shard
    contexts = [sys.executable, "-m", "citeval.contexts"]
    extracted = work / "contexts-staging"
    extracted.mkdir()
    tables = [extracted / f"{i:05d}.parquet" for i in shards]
    reports = [extracted / f"{i:05d}.json" for i in shards]

    def extract(job: tuple[Path, Path, Path]) -> ProcessStats:
        source, table, report = job
        argv = [*contexts, "extract", "--input", str(source), "--output", str(table)]
        argv += ["--report", str(report), "--format", "s2orc_v2020"]
        return run_measured(f"extract {source.name}", argv, logs / f"extract-{table.stem}.log", env)

    extract_stats, extract_seconds = run_parallel(
        list(zip(fulltext_files, tables, reports, strict=True)), args.workers, extract
    )
    shard_reports = [json.loads(p.read_text()) for p in reports]
    papers_read = sum(r["papers_read"] for r in shard_reports)
    contexts_written = sum(r["contexts_written"] for r in shard_reports)
    markers_found = sum(r["markers_found"] for r in shard_reports)
    extract_cpu = cpu_seconds(extract_stats)
    sizes = [p.stat().st_size for p in fulltext_files]
    largest = max(range(len(sizes)), key=sizes.__getitem__)  # the largest input shard
    staged_bytes = sum(p.stat().st_size for p in tables)

    # 4. contexts merge against the corpus's papers
    merged = work / "contexts.parquet"
    merge_report_path = work / "contexts_report.json"
    argv = [*contexts, "merge", "--staging", *map(str, tables), "--reports", *map(str, reports)]
    argv += ["--papers", str(corpus / "papers"), "--output", str(merged)]
    argv += ["--report", str(merge_report_path), "--threads", str(args.threads)]
    argv += ["--memory-limit", args.memory_limit]
    merge = run_measured("contexts merge", argv, logs / "contexts-merge.log", env)
    merge_counts = json.loads(merge_report_path.read_text())["merge"]
    total_seconds = time.perf_counter() - started_all

    fulltext_mb = fulltext_bytes / 1e6
    return {
        "papers": ingest_totals["papers_written"],
        "contexts_written": contexts_written,
        "contexts_kept": merge_counts["contexts_kept"],
        "extract_contexts_per_s": rate(contexts_written, extract_seconds),
        "extract_fulltext_mb_per_s": rate(fulltext_mb, extract_seconds),
        "peak_rss_mb": max(
            s.peak_rss_mb for s in [synth, *parse_stats, ingest_merge, *extract_stats, merge]
        ),
        "seconds": round(total_seconds, 2),
        "steps": {
            "synth": step_record([synth], synth.seconds),
            "ingest_parse": step_record(parse_stats, parse_seconds, workers=args.workers),
            "ingest_merge": step_record([ingest_merge], ingest_merge.seconds),
            "contexts_extract": step_record(
                extract_stats,
                extract_seconds,
                workers=args.workers,
                papers_read=papers_read,
                markers_found=markers_found,
                contexts_written=contexts_written,
                contexts_per_s=rate(contexts_written, extract_seconds),
                contexts_per_cpu_s=rate(contexts_written, extract_cpu),
                papers_per_s=rate(papers_read, extract_seconds),
                fulltext_mb_per_s=rate(fulltext_mb, extract_seconds),
                fulltext_mb_per_cpu_s=rate(fulltext_mb, extract_cpu),
                shard_seconds_max=max(s.seconds for s in extract_stats),
                largest_shard={
                    "input": fulltext_files[largest].name,
                    "input_bytes": sizes[largest],
                    "seconds": extract_stats[largest].seconds,
                    "peak_rss_mb": extract_stats[largest].peak_rss_mb,
                },
                shards=[
                    {
                        "input": Path(r["input"]).name,
                        "input_bytes": r["input_bytes"],
                        "papers_read": r["papers_read"],
                        "contexts_written": r["contexts_written"],
                        "seconds": s.seconds,
                        "cpu_seconds": round(s.user_seconds + s.system_seconds, 3),
                        "peak_rss_mb": s.peak_rss_mb,
                    }
                    for r, s in zip(shard_reports, extract_stats, strict=True)
                ],
            ),
            "contexts_merge": step_record(
                [merge],
                merge.seconds,
                contexts_read=merge_counts["contexts_read"],
                contexts_kept=merge_counts["contexts_kept"],
                citing_papers_kept=merge_counts["citing_papers_kept"],
                contexts_dropped=merge_counts["contexts_dropped"],
                contexts_per_s=rate(merge_counts["contexts_read"], merge.seconds),
            ),
        },
        "sizes_bytes": {
            "metadata_gz": metadata_bytes,
            "fulltext_gz": fulltext_bytes,
            "fulltext_gz_per_shard_max": max(sizes),
            "contexts_staging_parquet": staged_bytes,
            "contexts_parquet": merged.stat().st_size,
        },
        "corpus": {
            "papers": ingest_totals["papers_written"],
            "citations": ingest_totals["citation_edges_written"],
        },
    }


def summary(result: dict) -> dict:
    steps = result["steps"]
    extract = steps["contexts_extract"]
    return {
        "papers": result["papers"],
        "fulltext_gz_mb": round(result["sizes_bytes"]["fulltext_gz"] / 1e6, 1),
        "contexts_written": result["contexts_written"],
        "contexts_kept": result["contexts_kept"],
        "steps": {
            name: {"seconds": step["seconds"], "peak_rss_mb": step["peak_rss_mb"]}
            for name, step in steps.items()
        },
        "extract": {
            "contexts_per_s": extract["contexts_per_s"],
            "fulltext_mb_per_s": extract["fulltext_mb_per_s"],
            "largest_shard_peak_rss_mb": extract["largest_shard"]["peak_rss_mb"],
        },
        "seconds": result["seconds"],
    }


if __name__ == "__main__":
    sys.exit(main())
