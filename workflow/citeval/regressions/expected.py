"""A regression file, ``regressions/<name>.yaml``: one pinned config's expected numbers.

::

    name: e2e
    description: ...            # kept by update; free text for the docs
    config: tests/data/pipeline.yaml
    command: pytest tests/test_pipeline.py ...   # what produces the run
    results: /tmp/citeval-e2e/pipeline0/first/results/e2e   # where it leaves the run
    tolerance: 0.0              # absolute, in the tables' units (x100), for every value...
    drift:                      # ...but those of a row whose systems drift (citeval.drift)
      computed: {tolerance: 0.01, measured: "how: what moved"}
      trained: {tolerance: 1.5, measured: "..."}
    systems: {bm25: exact, tiny: computed, ce: trained}   # written by update, from the run
    tables:
      table1_dataset_level:
        bm25:
          600 MAP: 21.543218
          600 NDCG: {value: 40.1, tolerance: 0.5}   # ...and a value's own beats both

A row's drift is the loosest of the systems its label names (``bm25>ce@10``: BM25's and the
reranker's; ``chars-200 rrf``: the fusion's); a drift the file gives no tolerance takes the
file's.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from citeval.drift import DRIFTS, Drift, loosest
from citeval.errors import CitevalError
from citeval.io import write_text
from citeval.regressions.pinned import Cells
from citeval.systems import systems_in_label

FOLDER = Path("regressions")
"""Where the regression files live, relative to the repository root."""
KEYS = (
    "name", "description", "config", "command", "results", "tolerance", "drift", "systems",
    "tables",
)  # fmt: skip
OPTIONAL = ("description", "drift", "systems")


@dataclass(frozen=True)
class Value:
    value: float
    tolerance: float | None = None
    """None: the file's tolerance."""


@dataclass(frozen=True)
class DriftTolerance:
    """The tolerance of one drift's cells, and how it was measured (free text)."""

    tolerance: float
    measured: str = ""


@dataclass(frozen=True)
class Expected:
    name: str
    config: str
    command: str
    results: str
    tolerance: float
    tables: dict[str, dict[str, dict[str, Value]]] = field(default_factory=dict)
    description: str = ""
    drift: dict[str, DriftTolerance] = field(default_factory=dict)
    systems: dict[str, str] = field(default_factory=dict)
    """System name -> its drift's name (citeval.systems.drift_of, for the run's config)."""

    def row_drift(self, row: str) -> Drift:
        """The loosest drift of the systems ``row``'s label names."""
        parts = systems_in_label(row)
        return loosest([DRIFTS[self.systems[part]] for part in parts if part in self.systems])

    def tolerance_of(self, row: str, value: Value) -> float:
        if value.tolerance is not None:
            return value.tolerance
        drift = self.drift.get(self.row_drift(row).name)
        return self.tolerance if drift is None else drift.tolerance

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


def _drift_name(name: Any, where: str) -> str:
    if name not in DRIFTS:
        raise CitevalError(f"{where}: {name!r} is not a drift ({', '.join(DRIFTS)})")
    return str(name)


def _drift(raw: Any, path: Path) -> dict[str, DriftTolerance]:
    """``drift``: a tolerance per drift that may move (exact cells take the file's)."""
    where = f"{path}: drift"
    if not isinstance(raw, dict):
        raise CitevalError(f"{where}: a mapping of drift -> {{tolerance, measured}}")
    drifts = {}
    for name, entry in raw.items():
        _drift_name(name, f"{where}.{name}")
        if not isinstance(entry, dict) or set(entry) - {"tolerance", "measured"}:
            raise CitevalError(f"{where}.{name}: a mapping of tolerance and measured")
        tolerance = _number(entry.get("tolerance"), f"{where}.{name}.tolerance")
        drifts[name] = DriftTolerance(tolerance, str(entry.get("measured") or ""))
    return drifts


def _systems(raw: Any, path: Path) -> dict[str, str]:
    where = f"{path}: systems"
    if not isinstance(raw, dict):
        raise CitevalError(f"{where}: a mapping of system name -> drift")
    return {str(name): _drift_name(drift, f"{where}.{name}") for name, drift in raw.items()}


def read(path: Path) -> Expected:
    """A regression file, checked; errors name the file and the key."""
    if not path.is_file():
        raise CitevalError(f"{path}: no such regression file")
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(raw, dict):
        raise CitevalError(f"{path}: not a regression file (a mapping of {', '.join(KEYS)})")
    unknown = sorted(set(raw) - set(KEYS))
    missing = [key for key in KEYS if key not in raw and key not in OPTIONAL]
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
        drift=_drift(raw.get("drift") or {}, path),
        systems=_systems(raw.get("systems") or {}, path),
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
        "drift": {
            name: {"tolerance": drift.tolerance, "measured": drift.measured}
            for name, drift in expected.drift.items()
        },
        "systems": expected.systems,
        "tables": {
            table: {row: {c: _dump(v) for c, v in columns.items()} for row, columns in rows.items()}
            for table, rows in expected.tables.items()
        },
    }
    header = (
        f"# Expected numbers of {expected.config}: `citeval regressions check` compares a run\n"
        "# with them, `citeval regressions update` rewrites them (docs/reproductions.md).\n"
        "# A cell's tolerance follows the drift of the systems its row names (citeval.drift):\n"
        + "".join(_comment(f"- {drift.name}: {drift.why}") for drift in DRIFTS.values())
    )
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    return header + text


def _comment(text: str) -> str:
    return "".join(f"# {line}\n" for line in textwrap.wrap(text, 96, subsequent_indent="  "))


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
