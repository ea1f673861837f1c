"""Sum a run's job times from its ``benchmark:`` records (``results/<dataset>/timings``).

    python benchmarks/job_times.py results/islit --output benchmarks/out/islit-job-times.json \
        [--exclude ce_demo ce_seg_]

Wall and CPU seconds per rule and in all (:func:`bench_protocol.rule_costs`): the time the
run's jobs took one after another (the lower bound of a fresh run on one machine, whose
jobs mostly take both cores each). ``--exclude`` leaves out records whose path holds one of
the words (other runs' jobs kept in the same folder, such as a sweep's recipes).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from pathlib import Path

from bench_protocol import rule_costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--output", required=True, type=Path)
    parser.add_argument("--exclude", nargs="*", default=[])
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
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: report[k] for k in ("jobs", "job_wall_s", "job_cpu_s")}))


if __name__ == "__main__":
    main()
