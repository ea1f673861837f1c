"""How far the end-to-end run's pinned numbers move between CPUs, per drift.

Runs the shared end-to-end config (tests/pipeline_runs.py, the tiny BERT of
tests/conftest.py) once per variant and compares every cell regressions/e2e.yaml pins with
the reference variant's, grouped by the drift of the systems its row names
(citeval.drift): exact cells must not move, the others' largest move is what their
tolerance must cover. A variant is torch's vector kernels (``ATEN_CPU_CAPABILITY``: what
another CPU of the same kind picks), more threads per job, or a deliberate change that the
tolerances must still catch (a trained model's learning rate).

    python benchmarks/bench_drift.py --variants native avx2 default threads2 lr \\
        --output benchmarks/out/drift-e2e.json

Variants run two at a time (one core each, as the test suite's workers give); the first is
the reference.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import conftest  # noqa: E402  (the tiny BERT)
import pipeline_runs  # noqa: E402

from citeval.drift import DRIFTS  # noqa: E402
from citeval.regressions.expected import Expected  # noqa: E402
from citeval.regressions.pinned import pinned_cells, run_drifts  # noqa: E402


def more_threads(config: dict) -> None:
    config["jobs"]["threads"] = 2


def other_learning_rates(config: dict) -> None:
    config["rerank"]["train"]["learning_rate"] *= 2
    config["train"]["fit"]["learning_rate"] *= 2


# name -> (environment, config change, cores)
VARIANTS = {
    "native": ({}, None, 1),
    "avx2": ({"ATEN_CPU_CAPABILITY": "avx2"}, None, 1),
    "avx512": ({"ATEN_CPU_CAPABILITY": "avx512"}, None, 1),
    "default": ({"ATEN_CPU_CAPABILITY": "default"}, None, 1),
    "threads2": ({}, more_threads, 2),
    "lr": ({}, other_learning_rates, 1),
}


def run_variant(name: str, root: Path, tiny: Path) -> tuple[Path, float]:
    environment, change, cores = VARIANTS[name]
    config = pipeline_runs.shared_config(tiny)
    if change is not None:
        change(config)
    workdir = pipeline_runs.prepare(root / name, config)
    command = pipeline_runs.snakemake_command(workdir)
    command[command.index("--cores") + 1] = str(cores)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", **environment}
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if result.returncode != 0:
        sys.exit(f"variant {name} failed:\n{result.stderr[-4000:]}")
    return workdir / "results" / "e2e", time.monotonic() - started


def differences(reference: Path, other: Path) -> dict:
    """Per drift: how many cells, how many moved, the largest move and where."""
    expected = Expected("", "", "", "", 0.0, systems=run_drifts(reference))
    ours, theirs = pinned_cells(reference), pinned_cells(other)
    found = {name: {"cells": 0, "moved": 0, "max_abs": 0.0, "worst": None} for name in DRIFTS}
    for table, rows in ours.items():
        for row, columns in rows.items():
            drift = found[expected.row_drift(row).name]
            for column, value in columns.items():
                move = abs(theirs[table][row][column] - value)
                drift["cells"] += 1
                drift["moved"] += move > 0
                if move > drift["max_abs"]:
                    drift["max_abs"], drift["worst"] = move, [table, row, column]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=["native"])
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--keep", type=Path, help="run here and keep the runs")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="citeval-drift-"))
    tiny = conftest.build_tiny_bert(root / "tiny-bert")
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = dict(
            zip(
                args.variants,
                pool.map(lambda n: run_variant(n, root, tiny), args.variants),
                strict=True,
            )
        )
    reference = runs[args.variants[0]][0]
    report = {
        "benchmark": "drift-e2e",
        "commit": subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT
        ).stdout.strip(),
        "reference": args.variants[0],
        "variants": {
            name: {
                "environment": VARIANTS[name][0],
                "seconds": round(seconds, 1),
                "drift": differences(reference, results),
            }
            for name, (results, seconds) in runs.items()
        },
        "machine": {
            "cpus": os.cpu_count(),
            "cpu": next(
                (
                    line.split(":", 1)[1].strip()
                    for line in Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("model name")
                ),
                platform.processor(),
            ),
            "python": platform.python_version(),
        },
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({n: v["drift"] for n, v in report["variants"].items()}, indent=1))


if __name__ == "__main__":
    main()
