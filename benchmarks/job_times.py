"""Sum a run's job times from its ``benchmark:`` records (``results/<dataset>/timings``).

    python benchmarks/job_times.py results/islit --output benchmarks/out/islit-job-times.json \
        [--exclude ce_demo ce_seg_] [--snakemake-log .snakemake/log/<start>.snakemake.log]

Wall and CPU seconds per rule and in all (:func:`bench_protocol.rule_costs`): the time the
run's jobs took one after another (jobs run side by side each count their own time).
``--exclude`` leaves out records whose path holds one of the words (other runs' jobs kept
in the same folder, such as a sweep's recipes). ``--snakemake-log`` adds the run's elapsed
wall time: from the start its file name records to its last write, the run's end.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from datetime import datetime
from pathlib import Path

from bench_protocol import rule_costs


def elapsed_seconds(log: Path) -> float:
    """A Snakemake run's wall time: its log is named after its start
    (``2026-12-02T065003.356341.snakemake.log``) and last written at its end."""
    started = datetime.strptime(log.name.split(".snakemake")[0], "%Y-%m-%dT%H%M%S.%f")
    return log.stat().st_mtime - started.timestamp()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--output", required=True, type=Path)
    parser.add_argument("--exclude", nargs="*", default=[])
    parser.add_argument("--snakemake-log", type=Path, default=None)
    args = parser.parse_args()
    costs = rule_costs(args.results / "timings", tuple(args.exclude))
    by_rule = dict(sorted(costs.items(), key=lambda item: -item[1]["s"]))
    report = {
        "results": str(args.results),
        "excluded": args.exclude,
        "machine": {
            "cpus": os.cpu_count(),
            "processor": platform.processor() or platform.machine(),
        },
        "jobs": sum(cost["jobs"] for cost in costs.values()),
        "job_wall_s": round(sum(cost["s"] for cost in costs.values()), 1),
        "job_cpu_s": round(sum(cost["cpu_s"] for cost in costs.values()), 1),
        "by_rule": {
            rule: {"jobs": cost["jobs"], "wall_s": cost["s"], "cpu_s": cost["cpu_s"]}
            for rule, cost in by_rule.items()
        },
    }
    if args.snakemake_log is not None:
        report["snakemake_log"] = args.snakemake_log.name
        report["elapsed_s"] = round(elapsed_seconds(args.snakemake_log), 1)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    summary = ("jobs", "job_wall_s", "job_cpu_s", "elapsed_s")
    print(json.dumps({k: report[k] for k in summary if k in report}))


if __name__ == "__main__":
    main()
