"""``python -m citeval.plots``: figures of the paper's tables (see :mod:`citeval.plots`).

    python -m citeval.plots --output-dir OUT [--table1 table1_dataset_level.tsv] \
        [--table2 table2_field_level_map.tsv] [--table4 table4_mdcr_types.tsv]

draws one figure per table given, into ``--output-dir``.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path

from citeval.cli import run_cli
from citeval.errors import InputDataError
from citeval.plots import PLOTS, read_table

LOG = logging.getLogger(__name__)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m citeval.plots",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for name in PLOTS:
        parser.add_argument(f"--{name}", type=Path, help=f"the {name} TSV to draw")
    parser.add_argument("--output-dir", required=True, type=Path)
    return parser


def command(args: argparse.Namespace) -> None:
    drawn = 0
    for name, (filename, draw) in PLOTS.items():
        source = getattr(args, name)
        if source is None:
            continue
        draw(read_table(source), args.output_dir / filename)
        LOG.info("%s -> %s", source, args.output_dir / filename)
        drawn += 1
    if not drawn:
        raise InputDataError("no table given (--table1, --table2, --table4)")


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(build_parser, command, argv)
