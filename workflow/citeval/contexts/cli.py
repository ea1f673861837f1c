"""``python -m citeval.contexts extract|merge``: the command line of both steps."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from citeval.cli import positive_int, run_cli
from citeval.contexts.extract import extract_contexts
from citeval.contexts.merge import merge_contexts
from citeval.stages import CONTEXTS, CONTEXTS_MERGE


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m citeval.contexts",
        description="Local citation contexts: extract each input file, then merge.",
    )
    sub = parser.add_subparsers(dest="step", required=True)
    extract = sub.add_parser("extract", help="the raw contexts of one input file")
    extract.add_argument("--input", required=True, help="JSONL or JSONL.gz file")
    extract.add_argument("--output", required=True, help="contexts parquet of this file")
    extract.add_argument("--report", required=True, help="report JSON of this file")
    CONTEXTS.add_to(extract)
    merge = sub.add_parser("merge", help="filter the contexts against the corpus, as one table")
    merge.add_argument("--staging", nargs="+", required=True, help="extract outputs")
    merge.add_argument("--reports", nargs="+", required=True, help="extract reports")
    merge.add_argument("--papers", required=True, help="corpus papers folder (parquet parts)")
    merge.add_argument("--output", required=True, help="contexts.parquet to write")
    merge.add_argument("--report", required=True, help="contexts_report.json to write")
    merge.add_argument("--threads", type=positive_int, default=2, help="DuckDB threads (default 2)")
    merge.add_argument(
        "--temp-dir", default=None, help="where DuckDB spills (default: next to the output)"
    )
    CONTEXTS_MERGE.add_to(merge)
    return parser


def command(args: argparse.Namespace) -> None:
    if args.step == "extract":
        extract_contexts(
            args.input,
            args.output,
            args.report,
            fmt=args.format,
            window_unit=args.window_unit,
            window_chars=args.window_chars,
            window_sentences=args.window_sentences,
            marker_token=args.marker_token,
            max_bad_fraction=args.max_bad_fraction,
        )
    else:
        merge_contexts(
            args.staging,
            args.reports,
            args.papers,
            args.output,
            args.report,
            memory_limit=args.memory_limit,
            threads=args.threads,
            temp_dir=args.temp_dir,
        )


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(build_parser, command, argv)
