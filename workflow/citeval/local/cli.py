"""``python -m citeval.local sample|tables``: the local task's command line."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence

from citeval.cli import positive_int, require_unique, run_cli
from citeval.learning import add_trained_argument, not_learned
from citeval.local.oracle import write_oracle_run
from citeval.local.sample import sample_local
from citeval.local.tables import local_table
from citeval.local.triplets import mine_triplets
from citeval.significance import settings_for
from citeval.stages import LOCAL_SAMPLE, LOCAL_TABLES, LOCAL_TRIPLETS

log = logging.getLogger(__name__)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m citeval.local",
        description="Local citation recommendation: test and validation samples, tables.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    sample = commands.add_parser(
        "sample",
        help="split contexts by time and write samples/local-{test,valid}",
        description="Write samples/local-test and samples/local-valid (docs/local.md).",
    )
    sample.add_argument("--contexts", required=True, help="local/contexts.parquet")
    sample.add_argument("--filtered", required=True, help="filtered/papers.parquet")
    sample.add_argument("--papers", required=True, help="corpus/papers folder")
    sample.add_argument("--output-dir", required=True, help="samples folder")
    sample.add_argument(
        "--query-year",
        type=int,
        required=True,
        help="citing papers of this year are the queries (local.query_year, else "
        "sampling.query_year)",
    )
    sample.add_argument("--threads", type=positive_int, default=2, help="DuckDB threads")
    LOCAL_SAMPLE.add_to(sample)
    triplets = commands.add_parser(
        "triplets",
        help="the prefetcher's training triplets from the training split's first-stage run",
        description="Training triplets (context, cited paper, negative) of the local "
        "prefetcher (citeval.local.triplets).",
    )
    triplets.add_argument("--run", required=True, help="the training split's first-stage run")
    triplets.add_argument("--qrels", required=True, help="the training split's qrels")
    triplets.add_argument("--query-papers", required=True, help="samples/local-train/query_papers")
    triplets.add_argument("--pools", required=True, help="samples/local-train/pools.parquet")
    triplets.add_argument("--output-dir", required=True, help="train/<name>")
    LOCAL_TRIPLETS.add_to(triplets)
    oracle = commands.add_parser(
        "oracle",
        help="HAtten's oracle prefetch: the run with every cited paper in its top K",
        description="A first-stage run whose top K holds every cited paper "
        "(citeval.local.oracle); rerank it at K and label it as an oracle.",
    )
    oracle.add_argument("--run", required=True, help="a first stage's run")
    oracle.add_argument("--qrels", required=True, help="the split's qrels")
    oracle.add_argument("--k", required=True, type=positive_int, help="the reranking depth")
    oracle.add_argument("--output", required=True, help="the oracle run to write")
    tables = commands.add_parser(
        "tables",
        help="a split's table, one section per granularity",
        description="A split's local table from the per-query metrics of each model.",
    )
    tables.add_argument(
        "--metrics",
        nargs=2,
        action="append",
        metavar=("MODEL", "TSV"),
        required=True,
        help="a model (row, in order) and its per-query metrics on the split",
    )
    tables.add_argument("--query-papers", required=True, help="samples/local-<split>/query_papers")
    tables.add_argument("--output", required=True, help="tables/local_<split>.tsv")
    tables.add_argument("--title", required=True)
    add_trained_argument(tables)
    LOCAL_TABLES.add_to(tables)
    return parser


def command(args: argparse.Namespace) -> None:
    if args.command == "sample":
        report = sample_local(
            args.contexts,
            args.filtered,
            args.papers,
            args.output_dir,
            seed=args.seed,
            query_year=args.query_year,
            valid_fraction=args.valid_fraction,
            num_queries=args.num_queries,
            num_valid_queries=args.num_valid_queries,
            num_train_queries=args.num_train_queries,
            pool_size=args.pool_size,
            global_context=args.global_context,
            on_too_small=args.on_too_small,
            memory_limit=args.memory_limit,
            threads=args.threads,
        )
        for split, counts in report["splits"].items():
            log.info(
                "local %s: %d queries, pool of %d", split, counts["queries"], counts["pool_size"]
            )
        return
    if args.command == "oracle":
        write_oracle_run(args.run, args.qrels, args.k, args.output)
        return
    if args.command == "triplets":
        mine_triplets(
            args.run,
            args.qrels,
            args.query_papers,
            args.pools,
            args.output_dir,
            per_query=args.per_query,
            hard_negatives=args.hard_negatives,
            top=args.top,
            seed=args.seed,
        )
        return
    require_unique("--metrics", [model for model, _ in args.metrics])
    settings = settings_for(
        args.baseline, permutations=args.permutations, alpha=args.alpha, seed=args.seed
    )
    local_table(
        dict(args.metrics),
        args.query_papers,
        args.cutoffs,
        args.output,
        args.title,
        settings,
        not_learned(args.trained),
    )


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(build_parser, command, argv)
