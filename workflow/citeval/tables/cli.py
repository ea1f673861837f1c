"""``python -m citeval.tables``: the paper's result tables from the per-query metrics.

    python -m citeval.tables --results results/demo --setups dataset field \
        --models bm25 minilm --fields Art Biology --cutoffs 30 \
        --config-json "$(cat config.json)" --inputs resources/synthetic/demo/*.jsonl.gz \
        --output-dir results/demo/tables --baseline bm25 --permutations 10000 \
        --alpha 0.05 --seed 13

The R@k columns use the first of ``--cutoffs``; ``--baseline none`` writes the tables
without significance tests. The tables are described in :mod:`citeval.tables`; the
settings flags (config keys, defaults from the schema) come from :mod:`citeval.stages`.
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Sequence
from pathlib import Path

from citeval import stages
from citeval.cli import require_unique, run_cli
from citeval.errors import ConfigError
from citeval.io import write_json, write_text
from citeval.learning import add_trained_argument, not_learned
from citeval.measures import (
    RERANK_ADDED,
    cutoffs_for,
    rerank_table_measures,
    spoken_list,
    table1_measures,
    table_cutoff,
)
from citeval.significance import settings_for
from citeval.tables import (
    RERANK_TABLE,
    dataset_level_table,
    field_level_tables,
    provenance,
    summary_table,
)

log = logging.getLogger(__name__)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m citeval.tables",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--results", required=True, type=Path, help="results/<dataset>")
    parser.add_argument("--setups", nargs="+", choices=["dataset", "field"], required=True)
    parser.add_argument("--models", nargs="+", required=True, help="table rows, in order")
    parser.add_argument(
        "--rerank-models",
        nargs="*",
        default=[],
        help="rows of the reranking table (first stages and their reranked runs, "
        "e.g. bm25 'bm25>ce@100'); its metrics need the cutoffs "
        f"{spoken_list(map(str, cutoffs_for(RERANK_ADDED)))}",
    )
    parser.add_argument("--config-json", required=True, help="the resolved config as JSON")
    parser.add_argument("--inputs", nargs="*", default=[], help="corpus files to fingerprint")
    parser.add_argument("--output-dir", required=True, type=Path)
    add_trained_argument(parser)
    stages.TABLES.add_to(parser)
    return parser


def command(args: argparse.Namespace) -> None:
    if not args.cutoffs:
        raise ConfigError("--cutoffs is empty: the R@k columns need a cutoff")
    cutoff = table_cutoff(args.cutoffs)
    require_unique("--models", args.models)
    require_unique("--rerank-models", args.rerank_models)
    require_unique("--fields", args.fields)
    settings = settings_for(
        args.baseline, permutations=args.permutations, alpha=args.alpha, seed=args.seed
    )
    flagged = not_learned(args.trained)
    if "dataset" in args.setups:
        measures = table1_measures(cutoff)
        dataset_level_table(
            args.results, args.models, measures, args.output_dir, settings, flagged=flagged
        )
        if args.rerank_models:
            measures = rerank_table_measures(cutoff)
            dataset_level_table(
                args.results,
                args.rerank_models,
                measures,
                args.output_dir,
                settings,
                RERANK_TABLE,
                flagged=flagged,
            )
    if "field" in args.setups:
        field_level_tables(
            args.results, args.models, args.fields, cutoff, args.output_dir, settings, flagged
        )
    write_text(
        summary_table(args.results, args.setups, args.models), args.output_dir / "summary.tsv"
    )
    write_json(
        provenance(json.loads(args.config_json), args.inputs), args.output_dir / "provenance.json"
    )
    log.info("tables written to %s", args.output_dir)


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(build_parser, command, argv)
