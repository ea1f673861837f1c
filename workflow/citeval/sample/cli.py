"""``python -m citeval.sample dataset|field|train|embed-ids``: the sampling command line."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from typing import Any

import citeval.sample
from citeval.cli import positive_int, run_cli
from citeval.sample import run_sampling, run_training_sampling, write_embed_ids
from citeval.stages import SAMPLE_DATASET, SAMPLE_FIELD, SAMPLE_TRAIN

log = logging.getLogger(__name__)

SETTINGS = {"dataset": SAMPLE_DATASET, "field": SAMPLE_FIELD, "train": SAMPLE_TRAIN}
HELP = {
    "dataset": "dataset-level queries and pools",
    "field": "field-level queries and pools",
    "train": "the reranker's training queries and pool",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m citeval.sample",
        description=citeval.sample.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="setup", required=True)
    for setup, settings in SETTINGS.items():
        sub = commands.add_parser(setup, help=HELP[setup])
        sub.add_argument("--filtered", required=True, help="filtered/papers.parquet")
        sub.add_argument("--corpus", required=True, help="corpus directory (papers/, citations/)")
        sub.add_argument("--output-dir", required=True, help="samples directory")
        sub.add_argument("--threads", type=positive_int, default=2, help="DuckDB threads")
        settings.add_to(sub)
    union = commands.add_parser("embed-ids", help="union of every pool and query id")
    union.add_argument("--samples", nargs="+", required=True, help="samples/<setup>-<split> dirs")
    union.add_argument("--output", required=True)
    return parser


def command(args: argparse.Namespace) -> None:
    if args.setup == "embed-ids":
        count = write_embed_ids(args.samples, args.output)
        log.info("%d distinct papers to embed", count)
        return
    common: dict[str, Any] = {
        "seed": args.seed,
        "query_year": args.query_year,
        "num_queries": args.num_queries,
        "min_query_references": args.min_query_references,
        "on_too_small": args.on_too_small,
        "exclude_query_ids": args.exclude_query_ids,
        "memory_limit": args.memory_limit,
        "threads": args.threads,
    }
    if args.setup == "train":
        run_training_sampling(
            args.filtered,
            args.corpus,
            args.output_dir,
            years_before=args.years_before,
            pool_size=args.pool_size,
            **common,
        )
    elif args.setup == "dataset":
        run_sampling(
            args.filtered,
            args.corpus,
            args.output_dir,
            setup="dataset",
            num_valid_queries=args.num_valid_queries,
            repetitions=args.repetitions,
            pool_sizes=args.pool_sizes,
            **common,
        )
    else:
        run_sampling(
            args.filtered,
            args.corpus,
            args.output_dir,
            setup="field",
            num_valid_queries=args.num_valid_queries,
            repetitions=args.repetitions,
            fields=args.fields,
            pool_size=args.pool_size,
            **common,
        )


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(build_parser, command, argv)
