"""``python -m citeval.fusion``: the fusion stage's command line."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path

from citeval.cli import run_cli, run_tag
from citeval.errors import ConfigError
from citeval.fusion import reciprocal_rank_fusion
from citeval.stages import FUSE
from citeval.trec import read_run, write_run

log = logging.getLogger(__name__)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m citeval.fusion",
        description="Reciprocal rank fusion of TREC runs.",
    )
    parser.add_argument(
        "--runs", required=True, nargs="+", type=Path, help="TREC runs to fuse (2 or more)"
    )
    parser.add_argument("--output", required=True, type=Path, help="fused TREC run to write")
    parser.add_argument("--tag", default="rrf", type=run_tag, help="run tag (default rrf)")
    FUSE.add_to(parser)
    return parser


def command(args: argparse.Namespace) -> None:
    if len(args.runs) < 2:
        raise ConfigError(f"--runs needs at least 2 runs to fuse, got {len(args.runs)}")
    runs = []
    for path in args.runs:
        run = read_run(path)
        log.info("read %s: %d queries", path, len(run))
        runs.append(run)
    fused = reciprocal_rank_fusion(runs, k=args.k, depth=args.depth)
    write_run(fused, args.output, args.tag, k=args.depth)
    log.info(
        "wrote %s: %d queries fused from %d runs (k=%d, depth=%d)",
        args.output,
        len(fused),
        len(runs),
        args.k,
        args.depth,
    )


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(build_parser, command, argv)
