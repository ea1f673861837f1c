"""What each feature group gives an ltr system: retrained without it, scored on MDCR.

    python benchmarks/ltr_ablation.py --configfile config/islit.yaml \\
        --output benchmarks/out/ltr-ablation-islit.json

Run in a checkout whose ``results/<dataset>/`` holds a finished run of the config. For its
first ltr system, trains the model on the same training split with the same settings
(:mod:`citeval.ltr.model`) on every feature, then without the citation count
(``cited_before``), then without any paper feature (the systems' scores and ranks only),
and scores MDCR's test pairs with each. Writes, per variant, the kept trees, the held-out
curve's MAP at step 0 and at the kept point, and MDCR's mean MAP over the fields for all
candidates and for each candidate type (:func:`citeval.mdcr.evaluate.evaluate_benchmark`).
The variant "all features" is the pipeline's own model, retrained: its numbers are the
run's.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from citeval.config import load_config_file
from citeval.ltr.features import CITED_BEFORE, PAPER_FEATURES, feature_names, paper_reader
from citeval.ltr.model import LtrSettings, Pairs, train
from citeval.ltr.rank import mdcr_pairs, pair_scores, run_pairs
from citeval.mdcr.evaluate import ALL_CANDIDATES, MEAN_FIELD, evaluate_benchmark
from citeval.mdcr.formats import read_benchmark
from citeval.mdcr.score import query_candidates
from citeval.plan import Plan
from citeval.rerank.data import read_ranked_run
from citeval.trec import read_qrels

VARIANTS = {
    "all features": (),
    "without cited_before": (CITED_BEFORE.name,),
    "scores and ranks only": tuple(feature.name for feature in PAPER_FEATURES),
}


def keep_columns(
    pairs: Pairs, names: list[str], dropped: tuple[str, ...]
) -> tuple[Pairs, list[str]]:
    keep = [i for i, name in enumerate(names) if name not in dropped]
    sliced = Pairs(pairs.query_ids, pairs.candidates, pairs.features[:, keep])
    return sliced, [names[i] for i in keep]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configfile", required=True, nargs="+")
    parser.add_argument("--output", required=True, type=Path)
    args = parser.parse_args()
    config = load_config_file("config/config.yaml", *args.configfile)
    plan = Plan.from_config(config)
    name = plan.ltr.names[0]
    entry = plan.ltr.entries[name]
    settings = LtrSettings(**plan.ltr.settings(name), seed=config.seed)
    files = plan.ltr.training_files(name)
    papers = f"{plan.layout.root}/corpus/papers"
    read_papers = paper_reader(plan.layout.train_graph, papers, None, config.jobs.memory_limit)
    first_stage = read_ranked_run(files["first_stage"])
    training = run_pairs(first_stage, files["features"], settings.k, read_papers)
    qrels = read_qrels(files["qrels"])
    benchmark = read_benchmark(plan.mdcr.files("test")["benchmark"])
    scored = mdcr_pairs(benchmark, plan.ltr.mdcr_scores(name, "test"), read_papers)
    names = feature_names(list(entry.features))
    variants = {}
    for variant, dropped in VARIANTS.items():
        start = time.perf_counter()
        fit_pairs, kept_names = keep_columns(training, names, dropped)
        booster, curve, _ = train(fit_pairs, qrels, settings, kept_names)
        seconds = time.perf_counter() - start
        mdcr, _ = keep_columns(scored, names, dropped)
        scores = pair_scores(mdcr, booster.predict(mdcr.features, num_threads=1))
        rows = evaluate_benchmark(benchmark, scores)
        means = {
            row.candidates: round(row.values["map"], 2) for row in rows if row.field == MEAN_FIELD
        }
        variants[variant] = {
            "dropped": list(dropped),
            "trees": curve.kept.step,
            "held_out_map_step0": round(100 * curve.start.map, 2),
            "held_out_map_kept": round(100 * curve.kept.map, 2),
            "learned": curve.learned,
            "train_seconds": round(seconds, 2),
            "mdcr_test_map": means,
        }
        print(variant, variants[variant]["mdcr_test_map"].get(ALL_CANDIDATES), flush=True)
    report = {
        "config": args.configfile,
        "ltr": name,
        "first_stage": entry.first_stage,
        "features": list(entry.features),
        "machine": {
            "cpus": os.cpu_count(),
            "processor": platform.processor() or platform.machine(),
        },
        "variants": variants,
        "mdcr_queries": len(query_candidates(benchmark)),
        "mean_candidates": float(np.mean([len(v) for v in query_candidates(benchmark).values()])),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
