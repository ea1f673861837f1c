"""A run's tables against a regression file, cell by cell, and the report of it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from citeval.regressions.expected import Expected
from citeval.regressions.pinned import MissingTable, read_table, same, table_path


@dataclass(frozen=True)
class Cell:
    table: str
    row: str
    column: str
    expected: float
    got: float
    tolerance: float

    @property
    def ok(self) -> bool:
        return same(self.expected, self.got, self.tolerance)

    @property
    def difference(self) -> float:
        return self.got - self.expected


def compare(expected: Expected, results: Path) -> list[Cell]:
    """Every pinned cell with the run's value; a pinned table, row or column the run
    lacks raises :class:`MissingTable`, naming it."""
    cells = []
    for table, rows in expected.tables.items():
        path = table_path(results, table)
        run = read_table(path)
        for row, columns in rows.items():
            if row not in run:
                raise MissingTable(f"{path}: no row {row!r} (rows: {', '.join(run)})")
            for column, value in columns.items():
                if column not in run[row]:
                    raise MissingTable(
                        f"{path}: no column {column!r} (columns: {', '.join(run[row])})"
                    )
                tolerance = expected.tolerance_of(row, value)
                cells.append(Cell(table, row, column, value.value, run[row][column], tolerance))
    return cells


def report(expected: Expected, results: Path, cells: list[Cell], only_misses: bool) -> str:
    """One line per cell (``MISS`` or ``ok``, where, expected, got, difference, tolerance),
    then the summary line."""
    shown = [cell for cell in cells if not (only_misses and cell.ok)]
    header = ("", "table", "row", "column", "expected", "got", "diff", "tolerance")
    lines = [
        (
            "ok" if cell.ok else "MISS",
            cell.table,
            cell.row,
            cell.column,
            f"{cell.expected:.6f}",
            f"{cell.got:.6f}",
            f"{cell.difference:+.6f}",
            f"{cell.tolerance:g}",
        )
        for cell in shown
    ]
    widths = [max(len(line[i]) for line in [header, *lines]) for i in range(len(header))]
    right = {4, 5, 6, 7}

    def formatted(line: tuple[str, ...]) -> str:
        cells = [
            text.rjust(width) if i in right else text.ljust(width)
            for i, (text, width) in enumerate(zip(line, widths, strict=True))
        ]
        return "  ".join(cells).rstrip()

    text = [formatted(header), *map(formatted, lines)] if lines else []
    misses = sum(not cell.ok for cell in cells)
    where = f"{expected.name} ({expected.config}) against {results}"
    if misses:
        summary = f"FAIL {where}: {misses} of {len(cells)} cells outside their tolerance"
    else:
        summary = f"PASS {where}: all {len(cells)} cells within their tolerance"
    return "\n".join([*text, summary]) + "\n"
