"""``python -m citeval.external``: check a user's runs, vectors or MDCR scores and import
them into the pipeline's layout."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path

from citeval.cli import positive_int, run_cli, run_tag
from citeval.collection_list import collection_name, read_collection
from citeval.config import schema_node
from citeval.external.runs import MISSING_QUERIES, import_run
from citeval.external.scores import import_mdcr_scores
from citeval.external.stores import import_store
from citeval.io import write_json
from citeval.mdcr.formats import write_scores
from citeval.trec import write_run

log = logging.getLogger(__name__)

# The similarities an embeddings system may declare: the encoders' (the schema's enum).
SIMILARITIES = tuple(schema_node("systems.embeddings.*.similarity")["enum"])


def run_command(args: argparse.Namespace) -> None:
    query_ids, pool_ids = read_collection(args.queries, args.pools, args.group, args.rep)
    collection = f"collection {collection_name(args.group, args.rep)}"
    run, report = import_run(
        args.input,
        query_ids,
        pool_ids,
        k=args.k,
        missing_queries=args.missing_queries,
        collection=collection,
    )
    write_run(run, args.output, args.tag, k=args.k)
    if report["queries_missing"]:
        log.warning(
            "%s: %d of %d queries have no line and count as misses (e.g. %s)",
            args.input,
            report["queries_missing"],
            report["queries"],
            report["queries_missing_examples"],
        )
    if args.report is not None:
        write_json(report, args.report)
    log.info("imported %s: %d queries, %d lines", args.input, len(run), report["lines"])


def embeddings_command(args: argparse.Namespace) -> None:
    report = import_store(
        args.input, args.output, similarity=args.similarity, needed=args.ids, what=args.what
    )
    if args.report is not None:
        write_json(report, args.report)


def mdcr_scores_command(args: argparse.Namespace) -> None:
    scores = import_mdcr_scores(args.input, args.benchmark)
    write_scores(scores, args.output)
    log.info("imported %s: %d pairs", args.input, len(scores))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m citeval.external",
        description="Check a user's runs, vectors or MDCR scores and import them.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="one collection's TREC run")
    run.add_argument("--input", required=True, type=Path, help="the user's TREC run")
    run.add_argument("--queries", required=True, type=Path, help="the split's queries.parquet")
    run.add_argument("--pools", required=True, type=Path, help="the split's pools.parquet")
    run.add_argument("--group", required=True)
    run.add_argument("--rep", required=True, type=int)
    run.add_argument("--k", required=True, type=positive_int, help="depth the run is cut at")
    run.add_argument(
        "--missing-queries",
        choices=MISSING_QUERIES,
        default="error",
        help="a query without a line: an error, or a miss scoring 0 (default error)",
    )
    run.add_argument("--tag", required=True, type=run_tag, help="run tag (the system's name)")
    run.add_argument("--output", required=True, type=Path, help="the run to write")
    run.add_argument("--report", type=Path, default=None, help="JSON of what the run held")
    run.set_defaults(handler=run_command)

    store = commands.add_parser("embeddings", help="a store of paper or context vectors")
    store.add_argument(
        "--input", required=True, type=Path, help="a folder of shard-NNNNN.npy or a .parquet"
    )
    store.add_argument("--similarity", required=True, choices=SIMILARITIES)
    store.add_argument(
        "--ids", type=Path, default=None, help="parquet of the paper_id s that need a vector"
    )
    store.add_argument("--what", default="papers", help="what the ids are, for messages")
    store.add_argument("--output", required=True, type=Path, help="shard-00000.npy to write")
    store.add_argument("--report", type=Path, default=None, help="JSON of what was imported")
    store.set_defaults(handler=embeddings_command)

    scores = commands.add_parser("mdcr-scores", help="MDCR scores in the published format")
    scores.add_argument("--input", required=True, type=Path, help="the user's scores JSON")
    scores.add_argument("--benchmark", required=True, type=Path, help="mdcr_<split>.json")
    scores.add_argument("--output", required=True, type=Path, help="scores JSON to write")
    scores.set_defaults(handler=mdcr_scores_command)
    return parser


def command(args: argparse.Namespace) -> None:
    args.handler(args)


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(build_parser, command, argv)
