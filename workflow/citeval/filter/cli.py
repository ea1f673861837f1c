"""``python -m citeval.filter``: the prefilter's command line."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import citeval.filter
from citeval.cli import positive_int, run_cli
from citeval.filter import PrefilterRules, prefilter
from citeval.stages import PREFILTER


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m citeval.filter",
        description=citeval.filter.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--papers", required=True, help="corpus/papers directory (ingest output)")
    parser.add_argument("--output", required=True, help="filtered papers parquet to write")
    parser.add_argument("--report", required=True, help="filter report JSON to write")
    parser.add_argument("--threads", type=positive_int, default=2, help="DuckDB threads")
    PREFILTER.add_to(parser)
    return parser


def command(args: argparse.Namespace) -> None:
    rules = PrefilterRules(
        require_year=args.require_year,
        require_title=args.require_title,
        min_abstract_chars=args.min_abstract_chars,
        min_citations=args.min_citations,
        citation_direction=args.citation_direction,
    )
    prefilter(
        args.papers,
        args.output,
        args.report,
        rules,
        memory_limit=args.memory_limit,
        threads=args.threads,
    )


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(build_parser, command, argv)
