"""Benchmark MDCR construction: ``python -m citeval.mdcr build --split test`` at protocol size.

The protocol's field-level setup has 19 fields × 200 test queries, each field with a pool
of 100k papers; MDCR is built from those queries, the rep-0 runs of the compared models on
the field pools, the citation graph and the prefiltered papers (docs/mdcr.md). This
script prepares all of that on a synthetic corpus and times only the build.

Preparation, each step cached under ``benchmarks/out/data/mdcr-<papers>[-<density>]/`` (a
rerun skips what is done; ``--fresh`` redoes it):

1. a synthetic S2ORC v2020 corpus (``python -m citeval.synth``), looked up first under
   ``benchmarks/out/data/synth-<papers>x<shards>-seed<seed>[-<density>]`` and each
   ``--reuse-data`` folder (read only), generated into the first otherwise;
2. ``python -m citeval.ingest`` parse (``--workers`` at a time) and merge;
3. ``python -m citeval.filter`` with the default prefilter (year, title, 30-character
   abstract, 3 citations counted as cited-by);
4. ``python -m citeval.sample field`` with the protocol's sizes: ``--queries-per-field``
   test queries (200), ``--valid-queries-per-field`` validation queries (50), pool size
   ``--pool-size`` (100000), one repetition (only rep 0 is read by MDCR); query year 2019;
   ``--on-too-small cap``, so a field that cannot supply 200 queries keeps what it has;
5. rep-0 runs for ``--models`` (3) on every field pool, top ``--depth`` (500, the
   pipeline's ``retrieval.k``) per query, written with ``citeval.trec.write_run``. They
   are **synthetic rankings**: for each (model, query) the pool papers other than the
   query in an order drawn by a generator seeded from (seed, model, query), scores
   descending. Construction reads them exactly as it reads real runs, and its cost
   depends on their sizes, not on their quality; real BM25 runs (19 Lucene indexes of
   100k papers) would add 15+ minutes of preparation on 2 cores and change nothing here.

Then ``python -m citeval.mdcr build --split test`` runs as one child process with the
arguments the ``mdcr_build`` rule passes (``settings(stages.MDCR_BUILD, ...)`` in
``rules/mdcr.smk``) under the default config (seed 13, ``--model-selection auto``, 3
model types, 5 positives, 10 negatives per type, depth 200, most-cited depth 200,
``--max-candidate-year query_year``, ``--shortfall fill_from_random``, ``--memory-limit
2GB``, ``--threads 2``). Its wall time and its peak RSS (``os.wait4``: the child's own
``ru_maxrss``) are the measured figures; ``--repeat`` builds more than once and reports
each.

``citeval.sample field`` draws each test query for one field only (the MDCR format puts a
query under one field, and ``mdcr build`` refuses a split that lists a query twice); the
script checks this on the test split's ``queries.parquet`` after sampling and stops with
an error if a query appears under two fields. The build reads the sample's own
``samples/field-test`` folder.

    PYTHONPATH=workflow python benchmarks/bench_mdcr.py --num-papers 2000000 \
        --num-shards 8 --repeat 3 [--reuse-data ../main/benchmarks/out/data]
    PYTHONPATH=workflow python benchmarks/bench_mdcr.py --num-papers 1000000 \
        --num-shards 4 --repeat 3
    PYTHONPATH=workflow python benchmarks/bench_mdcr.py --num-papers 500000 \
        --num-shards 4 --repeat 3

Writes ``benchmarks/out/mdcr-build-<papers>[-<density>].json`` (or ``--output``): the
build's wall seconds (median, min and max over the ``--repeat`` builds, each with its
phases from the build's log), CPU seconds (median) and peak RSS (max) against the targets
(``--target-seconds`` 300 for the slowest build, ``--target-rss-mb`` 4096), what it
wrote (fields, queries, pairs, data lines, file sizes, the construction report's
shortfalls), the sizes of its inputs (papers, citations, prefiltered papers, queries and
pools per field, run lines), each preparation step's time, the code that ran
(``settings.citeval``: the children import ``citeval`` from ``PYTHONPATH`` first, so set
``PYTHONPATH=workflow`` to time this checkout) and the machine with its load average at
the start and before and after the builds.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

from bench_ingest import ProcessStats
from bench_ingest import run_measured as run_child

from citeval.synth.shape import FIELDS as SYNTH_FIELDS

log = logging.getLogger("bench_mdcr")

ROOT = Path(__file__).resolve().parent
OUT = ROOT / "out"
REPO = ROOT.parent
# The 19 MAG fields (config/schema.yaml's sampling.field_level.fields default).
FIELDS = list(SYNTH_FIELDS)
QUERY_YEAR = 2019
FIRST_YEAR = 1990


def run_measured(
    name: str, argv: list[str], log_path: Path, env: dict[str, str] | None = None
) -> ProcessStats:
    """bench_ingest's measured child process, logged."""
    log.info("%s: %s", name, " ".join(argv[1:]))
    log_path.parent.mkdir(parents=True, exist_ok=True)
    stats = run_child(name, argv, log_path, env)
    log.info("%s: %.1f s, peak RSS %.0f MB", name, stats.seconds, stats.peak_rss_mb)
    return stats


def cached_step(marker: Path, fresh: bool, run) -> dict:
    """Run ``run()`` (which returns a JSON-able record) unless ``marker`` holds its record."""
    if marker.exists() and not fresh:
        log.info("reusing %s", marker.parent / marker.stem)
        return json.loads(marker.read_text())
    record = run()
    marker.write_text(json.dumps(record, indent=2) + "\n")
    return record


def synthetic_inputs(args: argparse.Namespace) -> tuple[list[Path], dict]:
    """The synthetic corpus's shards: found in the cache or a ``--reuse-data`` folder, or
    generated (by a child process, not timed) into ``benchmarks/out/data``."""
    suffix = "" if args.density == "default" else f"-{args.density}"
    name = f"synth-{args.num_papers}x{args.num_shards}-seed{args.seed}{suffix}"
    for root in [OUT / "data", *args.reuse_data]:
        shards = [root / name / f"s2orc-{i:05d}.jsonl.gz" for i in range(args.num_shards)]
        if all(p.is_file() for p in shards):
            log.info("corpus: %s", root / name)
            return shards, {"path": str(root / name), "generated": False}
    directory = OUT / "data" / name
    pattern = str(directory / "s2orc-{shard}.jsonl.gz")
    argv = [sys.executable, "-m", "citeval.synth", "--num-papers", str(args.num_papers)]
    argv += ["--num-shards", str(args.num_shards), "--seed", str(args.seed)]
    argv += ["--density", args.density, "--first-year", str(FIRST_YEAR)]
    argv += ["--last-year", str(QUERY_YEAR), "--output-pattern", pattern, "--no-progress"]
    directory.mkdir(parents=True, exist_ok=True)
    stats = run_measured("synth", argv, directory / "synth.log")
    shards = [directory / f"s2orc-{i:05d}.jsonl.gz" for i in range(args.num_shards)]
    return shards, {"path": str(directory), "generated": True, "synth": asdict(stats)}


def ingest(args: argparse.Namespace, shards: list[Path], work: Path, env: dict) -> dict:
    from concurrent.futures import ThreadPoolExecutor

    corpus = work / "corpus"
    staging_root = work / "staging"
    shutil.rmtree(corpus, ignore_errors=True)
    shutil.rmtree(staging_root, ignore_errors=True)
    python = [sys.executable, "-m", "citeval.ingest"]
    staging = [staging_root / f"{i:05d}-{p.name.split('.')[0]}" for i, p in enumerate(shards)]

    def parse(job: tuple[Path, Path]) -> ProcessStats:
        source, target = job
        argv = [*python, "parse", "--format", "s2orc_v2020", "--input", str(source)]
        argv += ["--output-dir", str(target), "--max-bad-fraction", "0"]
        return run_measured(f"parse {source.name}", argv, work / "logs" / f"{target.name}.log", env)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=args.workers) as pool:
        parse_stats = list(pool.map(parse, zip(shards, staging, strict=True)))
    argv = [*python, "merge", "--staging", *map(str, staging), "--output-dir", str(corpus)]
    argv += ["--memory-limit", args.memory_limit, "--threads", "2", "--on-duplicate", "error"]
    merge = run_measured("merge", argv, work / "logs" / "merge.log", env)
    shutil.rmtree(staging_root, ignore_errors=True)
    totals = json.loads((corpus / "ingest_report.json").read_text())["totals"]
    return {
        "seconds": round(time.perf_counter() - started, 2),
        "papers": totals["papers_written"],
        "citations": totals["citation_edges_written"],
        "peak_rss_mb": max(merge.peak_rss_mb, *(s.peak_rss_mb for s in parse_stats)),
    }


def prefilter(args: argparse.Namespace, work: Path, env: dict) -> dict:
    filtered = work / "filtered"
    filtered.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "citeval.filter", "--papers", str(work / "corpus" / "papers")]
    argv += ["--output", str(filtered / "papers.parquet")]
    argv += ["--report", str(filtered / "filter_report.json")]
    # config/config.yaml's prefilter (the paper's rules), as prefilter_arguments writes them.
    argv += ["--min-abstract-chars", "30", "--min-citations", "3"]
    argv += ["--citation-direction", "cited_by", "--memory-limit", args.memory_limit]
    argv += ["--threads", "2"]
    stats = run_measured("prefilter", argv, work / "logs" / "prefilter.log", env)
    report = json.loads((filtered / "filter_report.json").read_text())
    return {**asdict(stats), "report": report}


def sample(args: argparse.Namespace, work: Path, env: dict) -> dict:
    samples = work / "samples"
    shutil.rmtree(samples, ignore_errors=True)
    samples.mkdir(parents=True)
    argv = [sys.executable, "-m", "citeval.sample", "field"]
    argv += ["--filtered", str(work / "filtered" / "papers.parquet")]
    argv += ["--corpus", str(work / "corpus"), "--output-dir", str(samples)]
    argv += ["--seed", str(args.seed), "--query-year", str(QUERY_YEAR)]
    argv += ["--min-query-references", "1", "--on-too-small", "cap"]
    argv += ["--num-queries", str(args.queries_per_field)]
    argv += ["--num-valid-queries", str(args.valid_queries_per_field)]
    argv += ["--pool-size", str(args.pool_size), "--repetitions", "1", "--fields", *FIELDS]
    argv += ["--memory-limit", args.memory_limit, "--threads", "2"]
    stats = run_measured("sample", argv, work / "logs" / "sample.log", env)
    return asdict(stats)


def sample_sizes(work: Path) -> dict[str, dict[str, int]]:
    """Queries and rep-0 pool size per field slug of the test split."""
    import duckdb

    test = work / "samples" / "field-test"
    queries = dict(
        duckdb.sql(
            f"SELECT \"group\", count(*) FROM read_parquet('{test / 'queries.parquet'}') GROUP BY 1"
        ).fetchall()
    )
    pools = dict(
        duckdb.sql(
            f"SELECT \"group\", count(*) FROM read_parquet('{test / 'pools.parquet'}') "
            "WHERE rep = 0 GROUP BY 1"
        ).fetchall()
    )
    return {
        slug: {"queries": queries.get(slug, 0), "pool": pools.get(slug, 0)}
        for slug in sorted(set(queries) | set(pools))
    }


def synthetic_runs(args: argparse.Namespace, work: Path) -> dict:
    """Rep-0 runs of every model on every field pool: seeded random orders of the pool."""
    import duckdb
    import numpy as np

    from citeval.collection_list import collection_name
    from citeval.draws import seeded_rng
    from citeval.trec import write_run

    test = work / "samples" / "field-test"
    runs = work / "runs" / "field-test"
    shutil.rmtree(runs, ignore_errors=True)
    started = time.perf_counter()
    lines = 0
    query_rows = duckdb.sql(
        f"SELECT \"group\", query_id FROM read_parquet('{test / 'queries.parquet'}') ORDER BY 1, 2"
    ).fetchall()
    by_group: dict[str, list[str]] = {}
    for group, query_id in query_rows:
        by_group.setdefault(group, []).append(query_id)
    for group, query_ids in by_group.items():
        pool = (
            duckdb.sql(
                f"SELECT paper_id FROM read_parquet('{test / 'pools.parquet'}') "
                f"WHERE rep = 0 AND \"group\" = '{group}' ORDER BY paper_id"
            )
            .to_arrow_table()["paper_id"]
            .to_pylist()
        )
        position = {paper_id: i for i, paper_id in enumerate(pool)}
        scores = np.linspace(1.0, 0.0, args.depth + 1, endpoint=False)[: args.depth]
        for model in args.models:
            run: dict[str, dict[str, float]] = {}
            for query_id in query_ids:
                rng = seeded_rng(args.seed, "bench-mdcr-run", model, query_id)
                take = min(len(pool), args.depth + 1)
                order = rng.choice(len(pool), size=take, replace=False)
                own = position.get(query_id)
                docs = [pool[i] for i in order if i != own][: args.depth]
                run[query_id] = dict(zip(docs, scores[: len(docs)].tolist(), strict=True))
                lines += len(docs)
            path = runs / collection_name(group, 0) / f"{model}.trec"
            path.parent.mkdir(parents=True, exist_ok=True)
            write_run(run, path, tag=model)
        log.info("runs: %s (%d queries, pool %d)", group, len(query_ids), len(pool))
    return {
        "kind": "synthetic: seeded random order of the rep-0 pool per (model, query)",
        "models": list(args.models),
        "depth": args.depth,
        "lines": lines,
        "mb": round(sum(p.stat().st_size for p in runs.rglob("*.trec")) / 1e6, 1),
        "seconds": round(time.perf_counter() - started, 2),
    }


def assert_one_field_per_query(work: Path) -> None:
    """Fail if a test query appears under two fields (the MDCR format allows one)."""
    import duckdb

    source = work / "samples" / "field-test" / "queries.parquet"
    twice = duckdb.sql(
        f'SELECT query_id, list("group" ORDER BY "group") FROM read_parquet(\'{source}\') '
        "GROUP BY 1 HAVING count(*) > 1 ORDER BY 1"
    ).fetchall()
    if twice:  # raised, not ``assert``: it must hold under ``python -O`` too
        raise AssertionError(
            f"{len(twice)} test queries appear under two fields in {source} "
            f"(citeval.sample field draws each for one field only), e.g. {twice[:5]}"
        )


def build_argv(args: argparse.Namespace, work: Path, output_dir: Path) -> list[str]:
    """``mdcr_build``'s command line under the default config (rules/mdcr.smk)."""
    argv = [sys.executable, "-m", "citeval.mdcr", "build", "--split", "test"]
    argv += ["--samples", str(work / "samples" / "field-test")]
    argv += ["--runs", str(work / "runs" / "field-test"), "--corpus", str(work / "corpus")]
    argv += ["--filtered", str(work / "filtered" / "papers.parquet")]
    argv += ["--seed", str(args.seed), "--fields", *FIELDS, "--models", *args.models]
    argv += ["--model-selection", "auto", "--num-model-types", "3", "--positives", "5"]
    argv += ["--negatives-per-type", "10", "--model-depth", "200", "--most-cited-depth", "200"]
    argv += ["--max-candidate-year", "query_year", "--shortfall", "fill_from_random"]
    argv += ["--memory-limit", args.memory_limit, "--threads", str(args.threads)]
    argv += ["--output-dir", str(output_dir)]
    return argv


def build_phases(log_path: Path, started_unix: float, seconds: float) -> dict[str, float]:
    """Seconds of the build's phases, from its log lines' timestamps.

    ``inputs`` runs from the process start to the ``model types`` line (start-up, reading
    the queries and runs, the DuckDB reads, the Jaccard table); ``construct_and_write``
    from there to the closing ``MDCR test`` line (construction, the texts, the files);
    ``exit`` the rest.
    """
    marks: dict[str, float] = {}
    for line in log_path.read_text(errors="replace").splitlines():
        stamp = line[:23]
        try:
            moment = time.mktime(time.strptime(stamp[:19], "%Y-%m-%d %H:%M:%S"))
            moment += int(stamp[20:23]) / 1000
        except ValueError:
            continue
        if "model types:" in line:
            marks["selected"] = moment - started_unix
        elif "MDCR test:" in line:
            marks["done"] = moment - started_unix
    if set(marks) != {"selected", "done"}:
        return {}
    return {
        "inputs": round(marks["selected"], 1),
        "construct_and_write": round(marks["done"] - marks["selected"], 1),
        "exit": round(seconds - marks["done"], 1),
    }


def build_outputs(output_dir: Path) -> dict:
    """What the build wrote: counts per field and the report's shortfalls."""
    benchmark = json.loads((output_dir / "mdcr_test.json").read_text())
    report = json.loads((output_dir / "mdcr_test_report.json").read_text())
    with open(output_dir / "mdcr_test_data.jsonl", "rb") as handle:
        data_lines = sum(1 for _ in handle)
    per_field = {
        name: {
            "queries": len(queries),
            "pairs": sum(len(v) for q in queries.values() for v in q.values()),
        }
        for name, queries in benchmark.items()
    }
    return {
        "fields": len(benchmark),
        "queries": sum(f["queries"] for f in per_field.values()),
        "pairs": report.get("pairs"),
        "data_lines": data_lines,
        "file_mb": {p.name: round(p.stat().st_size / 1e6, 2) for p in sorted(output_dir.iterdir())},
        "per_field": per_field,
        "report": report,
    }


def shortfalls(report: dict) -> dict:
    """Per candidate type, summed over fields: queries short and papers missing or filled."""
    out: dict[str, dict[str, int]] = {}
    for field in report["fields"].values():
        types = {"true": field["positives"], **field["negatives"]}
        for kind, counts in types.items():
            total = out.setdefault(kind, {})
            for key, value in counts.items():
                if key != "requested_per_query":
                    total[key] = total.get(key, 0) + value
    return out


def citeval_in_use() -> dict[str, str | bool | None]:
    """Where the children's ``citeval`` comes from, and its git commit (not imported here)."""
    spec = importlib.util.find_spec("citeval")
    if spec is None or not spec.submodule_search_locations:
        return {"path": None, "commit": None, "dirty": None}
    path = next(iter(spec.submodule_search_locations))

    def git(*words: str) -> str | None:
        done = subprocess.run(["git", "-C", path, *words], capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else None

    status = git("status", "--porcelain", "--untracked-files=no", "--", ".")
    return {"path": path, "commit": git("rev-parse", "HEAD"), "dirty": bool(status)}


def cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def memory_total_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-papers", type=int, default=2_000_000)
    parser.add_argument("--num-shards", type=int, default=8)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument(
        "--density",
        default="s2orc-v2020",
        choices=["default", "s2orc-v2020"],  # citeval.synth.DENSITIES, not imported here
        help="citations and abstracts per synthetic paper (citeval.synth.DENSITIES)",
    )
    parser.add_argument(
        "--reuse-data",
        type=Path,
        nargs="*",
        default=[],
        help="other data caches to take an already generated synthetic corpus from (read only)",
    )
    parser.add_argument("--queries-per-field", type=int, default=200)
    parser.add_argument("--valid-queries-per-field", type=int, default=50)
    parser.add_argument("--pool-size", type=int, default=100_000)
    parser.add_argument("--models", nargs="+", default=["bm25", "scincl", "specter"])
    parser.add_argument("--depth", type=int, default=500, help="results per query in the runs")
    parser.add_argument("--workers", type=int, default=2, help="ingest parse processes")
    parser.add_argument("--memory-limit", default="2GB")
    parser.add_argument("--threads", type=int, default=2, help="build --threads")
    parser.add_argument("--repeat", type=int, default=1, help="builds to time")
    parser.add_argument("--target-seconds", type=float, default=300.0)
    parser.add_argument("--target-rss-mb", type=float, default=4096.0)
    parser.add_argument("--fresh", action="store_true", help="redo the cached preparation")
    parser.add_argument("--output", type=Path, default=None, help="result JSON path")
    args = parser.parse_args(argv)
    logging.basicConfig(level="INFO", format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    label = str(args.num_papers) + ("" if args.density == "default" else f"-{args.density}")
    work = OUT / "data" / f"mdcr-{label}"
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    load_at_start = os.getloadavg()

    shards, corpus_source = synthetic_inputs(args)
    prep = {"corpus": corpus_source}
    prep["ingest"] = cached_step(
        work / "ingest.done.json", args.fresh, lambda: ingest(args, shards, work, env)
    )
    prep["prefilter"] = cached_step(
        work / "prefilter.done.json", args.fresh, lambda: prefilter(args, work, env)
    )
    prep["sample"] = cached_step(
        work / "sample.done.json", args.fresh, lambda: sample(args, work, env)
    )
    assert_one_field_per_query(work)
    prep["runs"] = cached_step(
        work / "runs.done.json", args.fresh, lambda: synthetic_runs(args, work)
    )
    sizes = sample_sizes(work)

    builds = []
    load_before = os.getloadavg()
    for attempt in range(args.repeat):
        output_dir = work / "mdcr"
        shutil.rmtree(output_dir, ignore_errors=True)
        log_path = work / "logs" / f"mdcr-build-{attempt + 1}.log"
        started_unix = time.time()
        stats = run_measured(
            f"mdcr build #{attempt + 1}", build_argv(args, work, output_dir), log_path, env
        )
        phases = build_phases(log_path, started_unix, stats.seconds)
        builds.append({**asdict(stats), "phases_seconds": phases})
    load_after = os.getloadavg()
    outputs = build_outputs(work / "mdcr")
    report = outputs.pop("report")
    walls = sorted(b["seconds"] for b in builds)
    cpus = sorted(round(b["user_seconds"] + b["system_seconds"], 2) for b in builds)
    seconds = statistics.median(walls)
    peak_rss = max(b["peak_rss_mb"] for b in builds)
    prefilter_report = prep["prefilter"].get("report", {})
    result = {
        "benchmark": "mdcr-build",
        "command": shlex.join(["python", *build_argv(args, work, work / "mdcr")[1:]]).replace(
            f"{REPO}/", ""
        ),
        "seconds": round(seconds, 2),
        "seconds_min": walls[0],
        "seconds_max": walls[-1],
        "cpu_seconds": round(statistics.median(cpus), 2),
        "peak_rss_mb": peak_rss,
        "builds": builds,
        "targets": {
            "seconds": args.target_seconds,
            "peak_rss_mb": args.target_rss_mb,
            "seconds_met": walls[-1] <= args.target_seconds,
            "peak_rss_met": peak_rss <= args.target_rss_mb,
        },
        "outputs": {
            **outputs,
            "model_types": report.get("model_types"),
            "dropped_without_positives": sum(
                len(f["dropped_without_positives"]) for f in report["fields"].values()
            ),
            "shortfalls": shortfalls(report),
        },
        "inputs": {
            "papers": prep["ingest"]["papers"],
            "citations": prep["ingest"]["citations"],
            "prefiltered": prefilter_report.get("papers_kept"),
            "fields_requested": len(FIELDS),
            "fields_sampled": len(sizes),
            "queries_per_field_requested": args.queries_per_field,
            "queries": sum(s["queries"] for s in sizes.values()),
            "fields_short_of_queries": {
                slug: s["queries"]
                for slug, s in sizes.items()
                if s["queries"] < args.queries_per_field
            },
            "pool_size_requested": args.pool_size,
            "pool_papers": sum(s["pool"] for s in sizes.values()),
            "per_field": sizes,
            "runs": prep["runs"],
        },
        "preparation": prep,
        "settings": {
            "num_papers": args.num_papers,
            "num_shards": args.num_shards,
            "density": args.density,
            "seed": args.seed,
            "memory_limit": args.memory_limit,
            "threads": args.threads,
            "citeval": citeval_in_use(),
        },
        "machine": {
            "cpus": os.cpu_count(),
            "cpu_model": cpu_model(),
            "memory_gib": memory_total_gib(),
            "load_avg_at_start": [round(x, 2) for x in load_at_start],
            "load_avg_before": [round(x, 2) for x in load_before],
            "load_avg_after": [round(x, 2) for x in load_after],
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "unix_time": int(time.time()),
    }
    output = args.output or OUT / f"mdcr-build-{label}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=2) + "\n")
    keys = ("seconds", "seconds_min", "seconds_max", "cpu_seconds", "peak_rss_mb", "targets")
    summary = {k: result[k] for k in keys}
    summary["outputs"] = {k: outputs[k] for k in ("fields", "queries", "pairs", "data_lines")}
    print(json.dumps(summary, indent=2))
    log.info("wrote %s", output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
