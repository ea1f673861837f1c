"""Sweep reranker recipes on a config's own pipeline; pick on validation, report test.

    python benchmarks/sweep_rerank.py --configfile config/islit.yaml \
        --recipes benchmarks/rerank_recipes_islit.yaml \
        --output benchmarks/out/rerank-sweep-islit.json [--cores 2]

Each recipe is a set of ``rerank`` settings under its own reranker name. The pipeline
trains it (``rerank_train``, with its validation curve on held-out training queries) and
scores MDCR's validation and test splits with it (``mdcr_score_rerank``,
``mdcr_evaluate``); the first stages, MDCR and BM25's scores are shared by every recipe
and built once. The JSON holds, per recipe: its settings, the training's wall-clock and
CPU seconds (the job's ``benchmark:`` record), the training loss at the start and end
against the base rate (the entropy of the training pairs' positive rate), the validation
curve's verdict, and MDCR MAP (all candidates, and the random type; mean over fields) on
the validation and the test split, next to BM25's. Recipes are chosen on the validation
split; the test columns are reported, not tuned on. A recipe already run is not redone
(the pipeline's outputs are kept).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow"))

from citeval.config import load_config_file  # noqa: E402
from citeval.layout import Layout  # noqa: E402
from citeval.systems import BM25_SYSTEM  # noqa: E402

SPLITS = ("valid", "test")
SUBSETS = {"all": "all", "random": "random"}


def mdcr_map(path: Path, subset: str) -> float:
    """MAP over the fields' mean (``AVG``) for one candidate subset of an evaluation TSV."""
    with path.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            if row["candidates"] == subset and row["field"] == "AVG":
                return round(float(row["map"]), 2)
    raise SystemExit(f"{path}: no {subset}/AVG row")


def base_rate_entropy(record: dict) -> float:
    """Binary cross-entropy of always predicting the training pairs' positive rate."""
    rate = record["positives"] / record["pairs"]
    return -(rate * math.log(rate) + (1 - rate) * math.log(1 - rate))


def job_seconds(benchmark: Path) -> dict[str, float]:
    with benchmark.open(encoding="utf-8") as handle:
        row = next(csv.DictReader(handle, delimiter="\t"))
    return {"wall_s": round(float(row["s"]), 1), "cpu_s": round(float(row["cpu_time"]), 1)}


def run_recipe(args: argparse.Namespace, recipe: dict, layout: Layout) -> dict:
    name = recipe["name"]
    overlay = Path(args.work) / f"{name}.yaml"
    overlay.parent.mkdir(parents=True, exist_ok=True)
    overlay.write_text(yaml.safe_dump({"rerank": {**recipe["rerank"], "name": name}}))
    targets = [layout.mdcr_eval(split, name) for split in SPLITS]
    targets += [layout.mdcr_eval(split, BM25_SYSTEM) for split in SPLITS]
    command = [
        "snakemake", "--cores", str(args.cores), "--configfile", args.configfile, str(overlay),
        "--rerun-triggers", "mtime", "params", "input", "--", *targets,
    ]  # fmt: skip
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True)
    model = Path(layout.reranker_model(name))
    record = json.loads((model / "training.json").read_text(encoding="utf-8"))
    losses = [row["loss"] for row in record["losses"]]
    validation = record["validation"]
    result = {
        "name": name,
        "description": recipe.get("description", ""),
        "rerank": recipe["rerank"],
        "pairs": record["pairs"],
        "positives": record["positives"],
        "steps": record["steps"],
        "train": job_seconds(Path(layout.timing("rerank_train"))),
        "loss_first": round(losses[0], 4) if losses else None,
        "loss_last": round(losses[-1], 4) if losses else None,
        "base_rate_loss": round(base_rate_entropy(record), 4),
        "validation": {
            "queries": validation["queries"],
            "start_map": round(100 * validation["start_map"], 1),
            "kept_map": round(100 * validation["kept_map"], 1),
            "kept_step": validation["kept_step"],
            "learned": validation["learned"],
        },
        "sweep_seconds": round(time.perf_counter() - started, 1),
    }
    for split in SPLITS:
        for label, subset in SUBSETS.items():
            path = Path(layout.mdcr_eval(split, name))
            result[f"mdcr_{split}_{label}"] = mdcr_map(path, subset)
            bm25 = Path(layout.mdcr_eval(split, BM25_SYSTEM))
            result[f"bm25_{split}_{label}"] = mdcr_map(bm25, subset)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configfile", required=True)
    parser.add_argument("--recipes", required=True, type=Path)
    parser.add_argument("--output", required=True, type=Path)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--work", default="/tmp/citeval-rerank-sweep", help="overlay configs")
    parser.add_argument("--only", nargs="*", default=None, help="run only these recipes")
    args = parser.parse_args()
    config = load_config_file(ROOT / "config" / "config.yaml", ROOT / args.configfile)
    layout = Layout.for_dataset(config.dataset)
    recipes = yaml.safe_load(args.recipes.read_text(encoding="utf-8"))
    done = {}
    if args.output.is_file():
        done = {row["name"]: row for row in json.loads(args.output.read_text())["recipes"]}
    for recipe in recipes:
        if args.only is not None and recipe["name"] not in args.only:
            continue
        if args.only is None and recipe["name"] in done:
            continue
        done[recipe["name"]] = run_recipe(args, recipe, layout)
        write(args, done, recipes)


def write(args: argparse.Namespace, done: dict, recipes: list) -> None:
    order = [r["name"] for r in recipes if r["name"] in done]
    report = {
        "command": " ".join(["python", "benchmarks/sweep_rerank.py", *sys.argv[1:]]),
        "config": args.configfile,
        "machine": {
            "cpus": os.cpu_count(),
            "processor": platform.processor() or platform.machine(),
            "python": platform.python_version(),
        },
        "selection": "validation split (held-out training queries and MDCR valid); test "
        "reported, not tuned on",
        "recipes": [done[name] for name in order],
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
