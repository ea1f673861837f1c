"""``python -m citeval.mdcr``: build an MDCR benchmark, or evaluate a scores file on one.

    python -m citeval.mdcr evaluate --benchmark mdcr_test.json --scores scores.json \
        [--output results.tsv]

prints the overall MAP, NDCG and R@5 (×100) as the published evaluator does, and writes
one row per (candidate subset, field) to ``--output``.

    python -m citeval.mdcr check --benchmark mdcr_test.json --data mdcr_test_data.jsonl \
        [--output summary.json]

imports a published (or exported) benchmark and its data file, checks them together, and
writes the number of queries, pairs and candidates per type of each field.

    python -m citeval.mdcr build --split test --seed 13 \
        --samples results/demo/samples/field-test --runs results/demo/runs/field-test \
        --corpus results/demo/corpus --filtered results/demo/filtered/papers.parquet \
        --fields "Computer Science" Biology --models bm25 minilm rrf \
        --output-dir results/demo/mdcr

writes ``mdcr_<split>.json``, ``mdcr_<split>_data.jsonl``, ``mdcr_<split>_jaccard.tsv``
and ``mdcr_<split>_report.json`` (see docs/mdcr.md).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from citeval.cli import memory_size, positive_int, run_cli
from citeval.io import write_json
from citeval.mdcr.evaluate import evaluate_benchmark as run_evaluation
from citeval.mdcr.evaluate import format_summary, write_rows_tsv
from citeval.mdcr.formats import load_benchmark, read_benchmark, read_scores, summarize

LOG = logging.getLogger(__name__)


def evaluate_command(args: argparse.Namespace) -> None:
    benchmark = read_benchmark(args.benchmark)
    scores = read_scores(args.scores)
    rows = run_evaluation(benchmark, scores, scores_path=args.scores)
    if args.output is not None:
        write_rows_tsv(rows, args.output)
    sys.stdout.write(format_summary(rows))


def check_command(args: argparse.Namespace) -> None:
    benchmark, papers = load_benchmark(args.benchmark, args.data)
    summary = {"fields": summarize(benchmark), "papers": len(papers)}
    if args.output is not None:
        write_json(summary, args.output)
    LOG.info(
        "%d fields, %d queries, %d pairs, %d papers",
        len(benchmark),
        sum(s["queries"] for s in summary["fields"].values()),
        sum(s["pairs"] for s in summary["fields"].values()),
        len(papers),
    )


def build_command(args: argparse.Namespace) -> None:
    # Imported here so that `evaluate` does not pay for DuckDB and the construction code.
    from citeval.mdcr.build import build_split

    build_split(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m citeval.mdcr",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)

    evaluate = commands.add_parser("evaluate", help="MAP, NDCG, R@5 of a scores file")
    evaluate.add_argument("--benchmark", required=True, type=Path, help="mdcr_<split>.json")
    evaluate.add_argument(
        "--scores", required=True, type=Path, help='JSON {"<query_id>_<candidate_id>": score}'
    )
    evaluate.add_argument(
        "--output", type=Path, default=None, help="TSV of every (candidate subset, field)"
    )
    evaluate.set_defaults(handler=evaluate_command)

    check = commands.add_parser("check", help="import and check a benchmark and data file")
    check.add_argument("--benchmark", required=True, type=Path, help="mdcr_<split>.json")
    check.add_argument("--data", required=True, type=Path, help="mdcr_<split>_data.jsonl")
    check.add_argument("--output", type=Path, default=None, help="summary JSON")
    check.set_defaults(handler=check_command)

    build = commands.add_parser("build", help="construct a split's benchmark")
    build.add_argument("--split", required=True, help="sample split (test or valid)")
    build.add_argument("--seed", required=True, type=int)
    build.add_argument("--samples", required=True, type=Path, help="samples/field-<split>")
    build.add_argument("--runs", required=True, type=Path, help="runs/field-<split>")
    build.add_argument(
        "--corpus", required=True, type=Path, help="corpus dir (papers/, citations/)"
    )
    build.add_argument("--filtered", required=True, type=Path, help="filtered/papers.parquet")
    build.add_argument(
        "--fields", required=True, nargs="+", help="MAG field names, as the sample used them"
    )
    build.add_argument(
        "--models", required=True, nargs="+", help="models whose rep-0 runs are compared"
    )
    build.add_argument(
        "--model-selection",
        nargs="+",
        default=["auto"],
        help="'auto' (the --num-model-types models least alike by Jaccard) or model names",
    )
    build.add_argument("--num-model-types", type=positive_int, default=3)
    build.add_argument("--positives", type=positive_int, default=5)
    build.add_argument("--negatives-per-type", type=positive_int, default=10)
    build.add_argument(
        "--model-depth", type=positive_int, default=200, help="top non-cited results per model"
    )
    build.add_argument(
        "--most-cited-depth", type=positive_int, default=200, help="most-cited papers per field"
    )
    build.add_argument(
        "--max-candidate-year",
        choices=["query_year", "none"],
        default="query_year",
        help="candidates must be published in or before the query's year, or any year",
    )
    build.add_argument(
        "--shortfall", choices=["fill_from_random", "keep_fewer"], default="fill_from_random"
    )
    build.add_argument("--output-dir", required=True, type=Path)
    build.add_argument("--memory-limit", type=memory_size, default="2GB")
    build.add_argument("--threads", type=positive_int, default=2)
    build.set_defaults(handler=build_command)
    return parser


def command(args: argparse.Namespace) -> None:
    args.handler(args)


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(build_parser, command, argv)
