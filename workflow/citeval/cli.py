"""Shared command-line plumbing: logging set-up and error reporting for ``python -m`` tools."""

from __future__ import annotations

import argparse
import logging
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from citeval.errors import CitevalError
from citeval.memory import memory_bytes

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


def probability(text: str) -> float:
    """argparse type for a level such as alpha: a number strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {value}")
    return value


def memory_size(text: str) -> str:
    """argparse type for a memory size (see :func:`citeval.memory.memory_bytes`); returns it
    unchanged."""
    try:
        memory_bytes(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def named_path(text: str) -> tuple[str, Path]:
    """argparse type for ``NAME=PATH`` (a system's file)."""
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"expected NAME=PATH, got {text!r}")
    return name, Path(path)


def run_tag(text: str) -> str:
    """A TREC run's tag (or tag prefix): the one-token check that writing a run applies,
    made before any work."""
    from citeval.trec import check_token  # trec imports pyarrow: only when a flag needs it

    try:
        check_token(text, "a run tag")
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def require_unique(flag: str, names: Sequence[str]) -> None:
    """A flag's names each once: a second would hide or repeat a table row."""
    twice = sorted(name for name, count in Counter(names).items() if count > 1)
    if twice:
        raise CitevalError(f"{flag} names {twice} more than once: {list(names)}")


def run_cli(
    build_parser: Callable[[], argparse.ArgumentParser],
    command: Callable[[argparse.Namespace], None],
    argv: Sequence[str] | None = None,
) -> int:
    """Parse arguments, configure logging and run ``command``.

    A :class:`CitevalError` is printed as one clear line and exits with status 2 instead of
    a traceback: it describes bad input or config, not a bug. So is a file the system
    cannot open (missing, a folder, not writable: the error names it) and a file pattern
    DuckDB finds nothing for; ``--log-level DEBUG`` adds their tracebacks. The line goes to
    stderr once, as ``error: ...``, not also through logging: a job's log and a user's
    terminal are both stderr, and would show it twice.
    """
    parser = build_parser()
    add_common_arguments(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level, format=LOG_FORMAT, stream=sys.stderr)
    log = logging.getLogger("citeval")
    try:
        command(args)
    except CitevalError as error:
        message = str(error)
    except OSError as error:
        if error.filename is None:
            raise
        message = f"{error.filename}: {error.strerror}"
        log.debug("traceback", exc_info=True)
    except Exception as error:
        # DuckDB is imported only by the stages that use it; its missing-file error.
        duckdb = sys.modules.get("duckdb")
        if duckdb is None or not isinstance(error, duckdb.IOException):
            raise
        message = str(error).splitlines()[0]  # the rest quotes the SQL it ran
        log.debug("traceback", exc_info=True)
    else:
        return 0
    print(f"error: {message}", file=sys.stderr)
    return 2
