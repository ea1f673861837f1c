"""Shared command-line plumbing: logging set-up and error reporting for ``python -m`` tools."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence

from citeval.errors import CitevalError

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--log-level",
        default="INFO",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="logging verbosity (default: INFO)",
    )


def positive_int(text: str) -> int:
    """argparse type for counts and cutoffs: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def run_cli(
    build_parser: Callable[[], argparse.ArgumentParser],
    command: Callable[[argparse.Namespace], None],
    argv: Sequence[str] | None = None,
) -> int:
    """Parse arguments, configure logging and run ``command``.

    A :class:`CitevalError` is printed as one clear line and exits with status 2 instead of
    a traceback: it describes bad input or config, not a bug.
    """
    parser = build_parser()
    add_common_arguments(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level, format=LOG_FORMAT, stream=sys.stderr)
    try:
        command(args)
    except CitevalError as error:
        logging.getLogger("citeval").error("%s", error)
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0
