"""``citeval regressions``: a finished run's main numbers against those a config pins.

    citeval regressions check TARGET [--results DIR] [--misses]
    citeval regressions update NAME [--results DIR] [--config PATH --command CMD ...]
    citeval regressions docs [--output docs/reproductions.md] [--check]

TARGET is a regression file (``regressions/e2e.yaml``), its name (``e2e``) or the config
it pins (``config/config.yaml``). ``check`` exits 1 when a cell is outside its tolerance
and 2 when the run lacks a pinned table, row or column; ``update`` rewrites the file from
a run, keeping each value's own tolerance and each drift's, and writes each system's drift
from the run's config; ``docs`` writes docs/reproductions.md from
every file.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from citeval.cli import run_cli
from citeval.errors import CitevalError
from citeval.io import write_text
from citeval.regressions.compare import compare, report
from citeval.regressions.docs import OUTPUT, render_docs
from citeval.regressions.expected import FOLDER, Expected, find, path_of, read, write
from citeval.regressions.pinned import pinned_cells, run_drifts


class Failed(Exception):
    """Exit status 1: the numbers moved (or the docs are stale); already reported."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="citeval regressions",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--folder", type=Path, default=FOLDER, help=f"the regression files (default: {FOLDER})"
    )
    commands = parser.add_subparsers(dest="command", required=True)

    check = commands.add_parser("check", help="compare a finished run with a regression file")
    check.add_argument("target", type=Path, help="regression file, its name, or its config")
    check.add_argument("--results", type=Path, help="the run's results/<dataset> folder")
    check.add_argument("--misses", action="store_true", help="list only the cells that miss")

    update = commands.add_parser("update", help="rewrite a regression file from a run")
    update.add_argument("name", help="the file's name: regressions/<name>.yaml")
    update.add_argument("--results", type=Path, help="the run to read (default: the file's)")
    new = update.add_argument_group("the file's fields (required for a new file)")
    new.add_argument("--config", help="the config the run used")
    new.add_argument("--command", dest="run_command", help="the command that makes the run")
    new.add_argument("--results-in-file", help="where that command leaves the run")
    new.add_argument("--tolerance", type=float, help="the default tolerance (a new file: 0)")
    new.add_argument("--description", help="a sentence for docs/reproductions.md")

    docs = commands.add_parser("docs", help=f"write {OUTPUT} from the regression files")
    docs.add_argument("--output", type=Path, default=Path(OUTPUT))
    docs.add_argument("--check", action="store_true", help="exit 1 if it is out of date")
    return parser


def check(args: argparse.Namespace) -> None:
    expected = read(find(args.target, args.folder))
    results = args.results or Path(expected.results)
    cells = compare(expected, results)
    sys.stdout.write(report(expected, results, cells, only_misses=args.misses))
    if not all(cell.ok for cell in cells):
        raise Failed


def _fields(args: argparse.Namespace, old: Expected | None) -> Expected:
    given = {
        "config": args.config,
        "command": args.run_command,
        "results": args.results_in_file,
        "tolerance": args.tolerance,
        "description": args.description,
    }
    given = {key: value for key, value in given.items() if value is not None}
    if old is not None:
        return replace(old, **given)
    if args.results is None or args.config is None or args.run_command is None:
        raise CitevalError(
            f"{path_of(args.name, args.folder)} does not exist: a new file needs --results, "
            "--config and --command"
        )
    given.setdefault("results", str(args.results))
    given.setdefault("tolerance", 0.0)
    return Expected(name=args.name, **given)


def update(args: argparse.Namespace) -> None:
    path = path_of(args.name, args.folder)
    old = read(path) if path.is_file() else None
    expected = _fields(args, old)
    results = args.results or Path(expected.results)
    new = replace(expected.updated(pinned_cells(results)), systems=run_drifts(results))
    before = {
        (t, r, c): v.value
        for t, rows in (old.tables if old else {}).items()
        for r, columns in rows.items()
        for c, v in columns.items()
    }
    after = {
        (t, r, c): v.value
        for t, rows in new.tables.items()
        for r, columns in rows.items()
        for c, v in columns.items()
    }
    moved = sorted(k for k in before.keys() & after.keys() if repr(before[k]) != repr(after[k]))
    for table, row, column in moved:
        was, now = before[table, row, column], after[table, row, column]
        print(f"{table}  {row}  {column}: {was:.6f} -> {now:.6f} ({now - was:+.6f})")
    write(new, path)
    print(
        f"wrote {path}: {len(after)} cells, {len(moved)} changed, "
        f"{len(after.keys() - before.keys())} added, {len(before.keys() - after.keys())} removed"
    )


def docs(args: argparse.Namespace) -> None:
    files = [read(path) for path in sorted(args.folder.glob("*.yaml"))]
    text = render_docs(files)
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.is_file() else ""
        if current != text:
            print(f"{args.output} is out of date: run `citeval regressions docs`")
            raise Failed
        print(f"{args.output} is up to date ({len(files)} regression files)")
        return
    write_text(text, args.output)
    print(f"wrote {args.output} ({len(files)} regression files)")


COMMANDS = {"check": check, "update": update, "docs": docs}


def command(args: argparse.Namespace) -> None:
    COMMANDS[args.command](args)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return run_cli(build_parser, command, argv)
    except Failed:
        return 1
