"""``python -m citeval.learning``: the trained models' validation curves, as a table and a
figure (see :mod:`citeval.learning`).

    python -m citeval.learning --trained NAME TRAINING_JSON [--trained ...] \
        --tables-dir results/<dataset>/tables --plot results/<dataset>/plots/learning.png
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path

from citeval.cli import run_cli
from citeval.errors import CitevalError
from citeval.learning import add_trained_argument, read_trained, write_learning

LOG = logging.getLogger(__name__)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m citeval.learning",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_trained_argument(parser)
    parser.add_argument("--tables-dir", required=True, type=Path)
    parser.add_argument("--plot", required=True, type=Path, help="the figure (PNG) to write")
    return parser


def command(args: argparse.Namespace) -> None:
    if not args.trained:
        raise CitevalError("no --trained model: nothing to tabulate")
    models = [read_trained(name, path) for name, path in args.trained]
    write_learning(models, args.tables_dir, args.plot)
    for model in models:
        model.curve.log(model.name)
    LOG.info("%d curves -> %s, %s", len(models), args.tables_dir, args.plot)


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(build_parser, command, argv)
