"""Time the README's two commands in a fresh clone, as a new user or CI runs them.

Clones this repository (its committed ``HEAD``, or ``--commit``) into a temporary folder
and runs, there,
the install (``scripts/install.sh``) and then either the default pipeline
(``snakemake --cores 2``) or the test suite (``.ci/run``, which installs again: a no-op).
pip uses the local cache, so the install time is that of a warm cache.

    python benchmarks/bench_fresh_clone.py demo  --output benchmarks/out/fresh-clone-demo.json
    python benchmarks/bench_fresh_clone.py tests --output benchmarks/out/fresh-clone-tests.json

With ``ATEN_CPU_CAPABILITY=avx2`` (or ``avx512``, ``default``) in the environment the
clone computes with the vector kernels another CPU would pick; the JSON records it.

Writes the wall and CPU seconds of each step (the CPU time of all its processes), the exit
status, the last lines of the test summary, the commit, and the machine's load average
before and after. Two commits measured one after the other compare the suite's speed:

    python benchmarks/bench_fresh_clone.py tests --commit OLD --output old.json
    python benchmarks/bench_fresh_clone.py tests --output new.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNEL_SETTINGS = ("ATEN_CPU_CAPABILITY",)
STEPS = {
    "demo": [
        ("install", "bash scripts/install.sh"),
        ("snakemake", ". .venv/bin/activate && snakemake --cores 2"),
    ],
    "tests": [
        ("install", "bash scripts/install.sh"),
        ("ci", "CI=true bash .ci/run"),
    ],
}


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_step(command: str, cwd: Path, log_path: Path) -> tuple[float, float, int]:
    """Run ``command`` in bash; its output goes to ``log_path``.

    Returns (wall seconds, CPU seconds of the command and every process it waited for,
    exit status).
    """
    start, cpu_start = time.perf_counter(), children_cpu_seconds()
    with log_path.open("w") as log:
        status = subprocess.run(
            ["bash", "-c", command], cwd=cwd, stdout=log, stderr=subprocess.STDOUT
        ).returncode
    wall = time.perf_counter() - start
    return round(wall, 1), round(children_cpu_seconds() - cpu_start, 1), status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=sorted(STEPS))
    parser.add_argument("--output", type=Path, required=True, help="result JSON path")
    parser.add_argument(
        "--keep-results",
        type=Path,
        default=None,
        help="copy the clone's results/ here before it is deleted (tables, logs, benchmarks)",
    )
    parser.add_argument("--commit", default="HEAD", help="the commit to clone (default: HEAD)")
    args = parser.parse_args(argv)

    resolved = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{args.commit}^{{commit}}"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if resolved.returncode != 0:
        parser.error(f"--commit {args.commit}: no such commit in {ROOT}")
    commit = resolved.stdout.strip()
    result: dict = {
        "benchmark": f"fresh-clone-{args.what}",
        "commit": commit,
        "load_avg_before": [round(x, 2) for x in os.getloadavg()],
        # torch's vector kernels, when forced (another CPU's choice: docs/reproductions.md)
        "environment": {key: os.environ[key] for key in KERNEL_SETTINGS if key in os.environ},
        "steps": {},
    }
    with tempfile.TemporaryDirectory(prefix="citeval-fresh-") as tmp:
        clone = Path(tmp) / "citeval"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        subprocess.run(["git", "checkout", "--quiet", commit], cwd=clone, check=True)
        for name, command in STEPS[args.what]:
            log_path = Path(tmp) / f"{name}.log"
            seconds, cpu_seconds, status = run_step(command, clone, log_path)
            tail = log_path.read_text(errors="replace").splitlines()[-3:]
            result["steps"][name] = {
                "command": command,
                "seconds": seconds,
                "cpu_seconds": cpu_seconds,
                "status": status,
                "tail": tail,
            }
            if status != 0:
                break
        if args.keep_results is not None and (clone / "results").is_dir():
            shutil.rmtree(args.keep_results, ignore_errors=True)
            shutil.copytree(clone / "results", args.keep_results)
    result["load_avg_after"] = [round(x, 2) for x in os.getloadavg()]
    result["machine"] = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["steps"], indent=2))
    return max(step["status"] for step in result["steps"].values())


if __name__ == "__main__":
    sys.exit(main())
