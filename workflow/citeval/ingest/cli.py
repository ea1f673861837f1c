"""``python -m citeval.ingest parse|merge``: the command line of both steps."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from citeval.cli import positive_int, run_cli
from citeval.ingest.formats import FORMATS
from citeval.ingest.merge import merge_staging
from citeval.ingest.parse import parse_shard
from citeval.ingest.staging import STAGING_ROWS_PER_PART
from citeval.stages import INGEST_MERGE, INGEST_PARSE


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m citeval.ingest",
        description="Ingest S2ORC/S2AG shards: parse each into staging, then merge.",
    )
    sub = parser.add_subparsers(dest="step", required=True)
    parse = sub.add_parser("parse", help="stage one input file as parquet parts")
    parse.add_argument("--format", required=True, choices=FORMATS)
    parse.add_argument("--input", required=True, help="JSONL, JSONL.gz or parquet file")
    parse.add_argument("--output-dir", required=True, help="staging directory of this shard")
    # Rows per staging part: a tuning knob of the tests, not a config setting.
    parse.add_argument(
        "--rows-per-part", type=positive_int, default=STAGING_ROWS_PER_PART, help=argparse.SUPPRESS
    )
    INGEST_PARSE.add_to(parse)
    merge = sub.add_parser("merge", help="merge staging directories into corpus tables")
    merge.add_argument(
        "--staging", nargs="+", required=True, help="staging directories, in input order"
    )
    merge.add_argument("--output-dir", required=True, help="corpus directory to write")
    merge.add_argument("--threads", type=positive_int, default=2, help="DuckDB threads (default 2)")
    merge.add_argument(
        "--temp-dir", default=None, help="where DuckDB spills (default: next to the output)"
    )
    INGEST_MERGE.add_to(merge)
    return parser


def command(args: argparse.Namespace) -> None:
    if args.step == "parse":
        parse_shard(
            args.input,
            args.format,
            args.output_dir,
            max_bad_fraction=args.max_bad_fraction,
            rows_per_part=args.rows_per_part,
        )
    else:
        merge_staging(
            args.staging,
            args.output_dir,
            on_duplicate=args.on_duplicate,
            rows_per_part=args.rows_per_part,
            memory_limit=args.memory_limit,
            threads=args.threads,
            temp_dir=args.temp_dir,
        )


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(build_parser, command, argv)
