"""Run the paper's BM25 protocol through the whole pipeline and report every stage's cost.

The pipeline (``snakemake --cores N``) runs on an existing S2ORC v2020-format corpus (a
``citeval.synth`` output, e.g. ``--density s2orc-v2020``) with the protocol's sizes, each
pool size scaled by ``--scale`` for corpora smaller than S2ORC:

* dataset level: 3,800 test queries, pools of 200k, 500k, 1M and 2M papers × ``--scale``,
  3 repetitions; 1,000 validation queries;
* field level: the 19 fields × 200 test queries, pools of 100k × ``--scale``, 3
  repetitions; 50 validation queries per field;
* BM25 tuned on the validation splits over the default config's k1 × b grid;
* MDCR built from BM25 alone as the model-based type (``mdcr.models: [bm25]``, one type).

Encoders, fusion, the reranker and the local task are off: they need a GPU (and the local
task full text) at this size. Everything else is the default config.
``sampling.on_too_small: cap`` keeps a field that cannot supply its queries (its
collections stay, with fewer queries; the sample report says so).

    python benchmarks/bench_protocol.py \
        --corpus 'benchmarks/out/data/synth-10000000x40-seed13-s2orc-v2020/s2orc-*.jsonl.gz' \
        --name protocol-10m

Writes ``benchmarks/out/<name>.json``: the run's wall seconds against ``--target-hours``
(2), every rule's job count, summed wall and CPU seconds and largest peak RSS from the
``benchmark:`` files against ``--target-rss-mb`` (8192), the corpus, ingest, prefilter
and sample sizes, the config overlay, the machine and its load average before and after.
The run's folder (``benchmarks/out/data/<name>``) is kept; a rerun resumes it.
"""

from __future__ import annotations

import argparse
import csv
import glob
import json
import os
import platform
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
FIELDS = [
    "Art", "Biology", "Business", "Chemistry", "Computer Science", "Economics", "Engineering",
    "Environmental Science", "Geography", "Geology", "History", "Materials Science",
    "Mathematics", "Medicine", "Philosophy", "Physics", "Political Science", "Psychology",
    "Sociology",
]  # fmt: skip
DATASET_POOLS = (200_000, 500_000, 1_000_000, 2_000_000)
FIELD_POOL = 100_000


def overlay(name: str, corpus: list[str], scale: float, threads: int) -> dict:
    """The config the run adds to config/config.yaml: the protocol's sizes, BM25 only."""
    return {
        "dataset": name,
        "corpus": {"format": "s2orc_v2020", "paths": corpus, "synthetic": None},
        "sampling": {
            "on_too_small": "cap",
            "dataset_level": {
                "num_queries": 3800,
                "pool_sizes": [max(1, round(size * scale)) for size in DATASET_POOLS],
                "repetitions": 3,
            },
            "field_level": {
                "fields": FIELDS,
                "queries_per_field": 200,
                "pool_size": max(1, round(FIELD_POOL * scale)),
                "repetitions": 3,
            },
            "validation": {"num_queries": 1000, "queries_per_field": 50},
        },
        "jobs": {"threads": threads, "memory_limit": "4GB"},
        "encode": {"models": []},
        "fusion": [],
        "ltr": [],
        "systems": {"embeddings": [], "runs": []},
        "rerank": {"enabled": False},
        "local": {"enabled": False},
        "mdcr": {"models": ["bm25"], "num_model_types": 1},
    }


def rule_costs(benchmarks: Path, exclude: tuple[str, ...] = ()) -> dict[str, dict]:
    """Per rule: jobs, summed wall and CPU seconds, and the largest peak RSS (MB), of the
    benchmark records whose path holds none of the words in ``exclude``."""
    costs: dict[str, dict] = defaultdict(
        lambda: {"jobs": 0, "s": 0.0, "cpu_s": 0.0, "max_rss_mb": 0.0}
    )
    for path in sorted(benchmarks.rglob("*.tsv")):
        if any(word in str(path) for word in exclude):
            continue
        with open(path, newline="") as handle:
            rows = list(csv.DictReader(handle, delimiter="\t"))
        if not rows:
            continue
        rule = path.relative_to(benchmarks).parts[0].removesuffix(".tsv")
        row = rows[-1]
        cost = costs[rule]
        cost["jobs"] += 1
        cost["s"] += float(row["s"])
        cost["cpu_s"] += (
            float(row["cpu_time"]) if row.get("cpu_time") not in (None, "", "NA") else 0.0
        )
        rss = row.get("max_rss")
        if rss not in (None, "", "NA", "-"):
            cost["max_rss_mb"] = max(cost["max_rss_mb"], float(rss))
    return {rule: {k: round(v, 1) for k, v in cost.items()} for rule, cost in sorted(costs.items())}


def read_json(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", required=True, help="glob of the S2ORC v2020 JSONL shards")
    parser.add_argument("--scale", type=float, default=1.0, help="factor on every pool size")
    parser.add_argument("--name", required=True, help="dataset name, run folder and JSON name")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--target-hours", type=float, default=2.0)
    parser.add_argument("--target-rss-mb", type=float, default=8192.0)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)

    corpus = sorted(str(Path(p).resolve()) for p in glob.glob(args.corpus))
    if not corpus:
        parser.error(f"--corpus {args.corpus!r} matches no file")
    workdir = ROOT / "benchmarks" / "out" / "data" / args.name
    workdir.mkdir(parents=True, exist_ok=True)
    if not (workdir / "config").exists():
        (workdir / "config").symlink_to(ROOT / "config")
    config = overlay(args.name, corpus, args.scale, args.cores)
    (workdir / "protocol.yaml").write_text(yaml.safe_dump(config, sort_keys=False))

    load_before = os.getloadavg()
    command = [
        sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"),
        "--directory", str(workdir), "--configfile", str(workdir / "protocol.yaml"),
        "--cores", str(args.cores),
    ]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    began = time.perf_counter()
    with open(workdir / "snakemake.log", "w") as log:
        status = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, env=env).returncode
    seconds = time.perf_counter() - began

    results = workdir / "results" / args.name
    costs = rule_costs(results / "timings")
    peak = max((cost["max_rss_mb"] for cost in costs.values()), default=0.0)
    ingest = read_json(results / "corpus" / "ingest_report.json") or {}
    prefilter = read_json(results / "filtered" / "filter_report.json") or {}
    samples = {
        setup: read_json(results / "samples" / f"{setup}-report.json")
        for setup in ("dataset", "field")
    }
    summary = {
        "benchmark": "protocol",
        "name": args.name,
        "status": status,
        "corpus_files": len(corpus),
        "scale": args.scale,
        "overlay": config,
        "wall_seconds": round(seconds, 1),
        "targets": {
            "wall_seconds": args.target_hours * 3600,
            "met_wall": status == 0 and seconds <= args.target_hours * 3600,
            "max_rss_mb": args.target_rss_mb,
            "met_rss": peak <= args.target_rss_mb,
        },
        "peak_rss_mb": peak,
        "job_seconds": round(sum(cost["s"] for cost in costs.values()), 1),
        "rules": costs,
        "sizes": {
            "ingest": {k: v for k, v in ingest.items() if isinstance(v, (int, float))},
            "prefilter": {k: v for k, v in prefilter.items() if isinstance(v, (int, float))},
            "samples": {
                setup: None
                if report is None
                else {
                    "candidates": report.get("candidates"),
                    "eligible_queries": report.get("eligible_queries"),
                    "warnings": len(report.get("warnings", [])),
                }
                for setup, report in samples.items()
            },
        },
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "load_avg_before": load_before,
        "load_avg_after": os.getloadavg(),
    }
    output = args.output or ROOT / "benchmarks" / "out" / f"{args.name}.json"
    output.write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps({k: summary[k] for k in ("status", "wall_seconds", "peak_rss_mb")}))
    return status


if __name__ == "__main__":
    sys.exit(main())
