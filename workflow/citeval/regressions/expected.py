"""A regression file, ``regressions/<name>.yaml``: one pinned config's expected numbers.

::

    name: e2e
    description: ...            # kept by update; free text for the docs
    config: tests/data/pipeline.yaml
    command: pytest tests/test_pipeline.py ...   # what produces the run
    results: /tmp/citeval-e2e/pipeline0/first/results/e2e   # where it leaves the run
    tolerance: 0.0              # absolute, in the tables' units (x100), for every value...
    tables:
      table1_dataset_level:
        bm25:
          600 MAP: 21.543218
          600 NDCG: {value: 40.1, tolerance: 0.5}   # ...unless the value gives its own
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from citeval.errors import CitevalError
from citeval.io import write_text
from citeval.regressions.pinned import Cells

FOLDER = Path("regressions")
"""Where the regression files live, relative to the repository root."""
KEYS = ("name", "description", "config", "command", "results", "tolerance", "tables")


@dataclass(frozen=True)
class Value:
    value: float
    tolerance: float | None = None
    """None: the file's tolerance."""


@dataclass(frozen=True)
class Expected:
    name: str
    config: str
    command: str
    results: str
    tolerance: float
    tables: dict[str, dict[str, dict[str, Value]]] = field(default_factory=dict)
    description: str = ""

    def tolerance_of(self, value: Value) -> float:
        return self.tolerance if value.tolerance is None else value.tolerance

    def cells(self) -> int:
        return sum(len(columns) for rows in self.tables.values() for columns in rows.values())

    def updated(self, tables: dict[str, Cells]) -> Expected:
        """The run's ``tables`` as the expected values; a cell that keeps its place keeps
        its own tolerance."""
        new = {
            table: {
                row: {
                    column: Value(value, self._own_tolerance(table, row, column))
                    for column, value in columns.items()
                }
                for row, columns in rows.items()
            }
            for table, rows in tables.items()
        }
        return replace(self, tables=new)

    def _own_tolerance(self, table: str, row: str, column: str) -> float | None:
        old = self.tables.get(table, {}).get(row, {}).get(column)
        return None if old is None else old.tolerance


def path_of(name: str, folder: Path = FOLDER) -> Path:
    return folder / f"{name}.yaml"


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CitevalError(f"{where}: expected a number, got {value!r}")
    return float(value)


def _value(raw: Any, where: str) -> Value:
    if isinstance(raw, dict):
        unknown = set(raw) - {"value", "tolerance"}
        if unknown or "value" not in raw:
            raise CitevalError(f"{where}: a value is a number or {{value, tolerance}}")
        tolerance = raw.get("tolerance")
        return Value(
            _number(raw["value"], where),
            None if tolerance is None else _number(tolerance, f"{where}.tolerance"),
        )
    return Value(_number(raw, where))


def read(path: Path) -> Expected:
    """A regression file, checked; errors name the file and the key."""
    if not path.is_file():
        raise CitevalError(f"{path}: no such regression file")
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(raw, dict):
        raise CitevalError(f"{path}: not a regression file (a mapping of {', '.join(KEYS)})")
    unknown = sorted(set(raw) - set(KEYS))
    missing = [key for key in KEYS if key not in raw and key != "description"]
    if unknown or missing:
        raise CitevalError(f"{path}: unknown keys {unknown}, missing keys {missing}")
    tables = {}
    for table, rows in (raw["tables"] or {}).items():
        tables[table] = {
            str(row): {
                str(column): _value(value, f"{path}: tables.{table}.{row}.{column}")
                for column, value in columns.items()
            }
            for row, columns in rows.items()
        }
    return Expected(
        name=str(raw["name"]),
        description=str(raw.get("description") or ""),
        config=str(raw["config"]),
        command=str(raw["command"]),
        results=str(raw["results"]),
        tolerance=_number(raw["tolerance"], f"{path}: tolerance"),
        tables=tables,
    )


def _dump(value: Value) -> Any:
    if value.tolerance is None:
        return value.value
    return {"value": value.value, "tolerance": value.tolerance}


def dumps(expected: Expected) -> str:
    """The file's text: keys in :data:`KEYS` order, tables, rows and columns as the run
    wrote them, so that an update's diff shows only the values that moved."""
    data = {
        "name": expected.name,
        "description": expected.description,
        "config": expected.config,
        "command": expected.command,
        "results": expected.results,
        "tolerance": expected.tolerance,
        "tables": {
            table: {row: {c: _dump(v) for c, v in columns.items()} for row, columns in rows.items()}
            for table, rows in expected.tables.items()
        },
    }
    header = (
        f"# Expected numbers of {expected.config}: `citeval regressions check` compares a run\n"
        "# with them, `citeval regressions update` rewrites them (docs/reproductions.md).\n"
    )
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    return header + text


def write(expected: Expected, path: Path) -> None:
    write_text(dumps(expected), path)


def find(target: Path, folder: Path = FOLDER) -> Path:
    """The regression file ``target`` names: the file itself, its name (``e2e``), or a
    config path that a file in ``folder`` pins."""
    if target.is_file():
        raw = yaml.safe_load(target.read_text(encoding="utf-8"))
        if isinstance(raw, dict) and "tables" in raw and "command" in raw:
            return target
        for path in sorted(folder.glob("*.yaml")):
            if Path(read(path).config).resolve() == target.resolve():
                return path
        raise CitevalError(f"{target}: no regression file in {folder}/ pins this config")
    candidate = path_of(str(target), folder)
    if candidate.is_file():
        return candidate
    raise CitevalError(f"{target}: no such regression file, config or name in {folder}/")
