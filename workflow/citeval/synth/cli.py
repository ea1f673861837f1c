"""``python -m citeval.synth``: generate a synthetic S2ORC v2020 metadata corpus."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence

from citeval.cli import run_cli
from citeval.stages import SYNTH
from citeval.synth.corpus import generate_corpus, shard_path
from citeval.synth.shape import DENSITIES

log = logging.getLogger(__name__)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m citeval.synth",
        description="Generate a synthetic S2ORC v2020 metadata corpus (gzip'd JSONL shards), "
        "optionally with its full text (pdf_parses shards).",
    )
    parser.add_argument(
        "--output-pattern",
        required=True,
        help="shard path with a '{shard}' placeholder (5-digit, zero-padded)",
    )
    parser.add_argument(
        "--fulltext-pattern",
        default=None,
        metavar="PATTERN",
        help="also write the papers' full text (S2ORC v2020 pdf_parses, with citation "
        "markers) to this shard path with a '{shard}' placeholder, one per metadata shard",
    )
    parser.add_argument(
        "--compresslevel",
        type=int,
        default=1,
        choices=range(0, 10),
        metavar="0-9",
        help="gzip level (isal uses at most 3; default: 1)",
    )
    parser.add_argument(
        "--density",
        choices=sorted(DENSITIES),
        default="default",
        help="references and abstracts per paper: the demo's (default) or S2ORC v2020's",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")
    SYNTH.add_to(parser)
    return parser


def command(args: argparse.Namespace) -> None:
    paths = generate_corpus(
        args.num_papers,
        args.num_shards,
        args.seed,
        args.first_year,
        args.last_year,
        args.output_pattern,
        compresslevel=args.compresslevel,
        density=DENSITIES[args.density],
        progress=not args.no_progress,
        fulltext_pattern=args.fulltext_pattern,
    )
    for path in paths:
        log.info("wrote %s", path)
    if args.fulltext_pattern is not None:
        for shard in range(len(paths)):
            log.info("wrote %s", shard_path(args.fulltext_pattern, shard))


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(build_parser, command, argv)
