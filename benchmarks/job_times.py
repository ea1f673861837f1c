"""Sum a run's job times from its ``benchmark:`` records (``results/<dataset>/timings``).

    python benchmarks/job_times.py results/islit --output benchmarks/out/islit-job-times.json \
        [--exclude ce_demo ce_seg_]

Wall and CPU seconds per rule and in all: the time the run's jobs took one after another
(the lower bound of a fresh run on one machine, whose jobs mostly take both cores each).
``--exclude`` leaves out records whose path holds one of the words (other runs' jobs kept
in the same folder, such as a sweep's recipes).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
from collections import Counter
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--output", required=True, type=Path)
    parser.add_argument("--exclude", nargs="*", default=[])
    args = parser.parse_args()
    wall, cpu, jobs = Counter(), Counter(), Counter()
    for path in sorted((args.results / "timings").rglob("*.tsv")):
        if any(word in str(path) for word in args.exclude):
            continue
        rule = path.relative_to(args.results / "timings").parts[0].removesuffix(".tsv")
        with path.open(encoding="utf-8") as handle:
            row = next(csv.DictReader(handle, delimiter="\t"))
        wall[rule] += float(row["s"])
        cpu[rule] += float(row["cpu_time"])
        jobs[rule] += 1
    report = {
        "results": str(args.results),
        "excluded": args.exclude,
        "machine": {
            "cpus": os.cpu_count(),
            "processor": platform.processor() or platform.machine(),
        },
        "jobs": sum(jobs.values()),
        "job_wall_s": round(sum(wall.values()), 1),
        "job_cpu_s": round(sum(cpu.values()), 1),
        "by_rule": {
            rule: {"jobs": jobs[rule], "wall_s": round(wall[rule], 1), "cpu_s": round(cpu[rule], 1)}
            for rule, _ in wall.most_common()
        },
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: report[k] for k in ("jobs", "job_wall_s", "job_cpu_s")}))


if __name__ == "__main__":
    main()
