"""Expected numbers per config (pyserini's 2CR idea, in our own format).

A file per pinned config in ``regressions/`` (:mod:`citeval.regressions.expected`) holds
the main tables' values of one run of it (:data:`citeval.regressions.pinned.PINNED` says
which) with their tolerances. The command line is :mod:`citeval.regressions.cli`
(``citeval regressions check|update|docs``); the cell-by-cell comparison is
:mod:`citeval.regressions.compare`, the generated docs/reproductions.md
:mod:`citeval.regressions.docs`.
"""

from __future__ import annotations

from citeval.regressions.compare import Cell, compare, report
from citeval.regressions.docs import render_docs
from citeval.regressions.expected import Expected, Value, find, read, write
from citeval.regressions.pinned import PINNED, MissingTable, pinned_cells, read_table

__all__ = [
    "PINNED",
    "Cell",
    "Expected",
    "MissingTable",
    "Value",
    "compare",
    "find",
    "pinned_cells",
    "read",
    "read_table",
    "render_docs",
    "report",
    "write",
]
