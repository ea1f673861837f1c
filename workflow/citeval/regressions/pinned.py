"""Which cells of which result tables a regression file pins, and reading them from a run.

A table is read from its TSV under ``results/<dataset>/tables/`` (six decimals). A row is
named by its label columns (``model``; the local tables' ``granularity`` and ``model``,
joined by a space), a cell by its column's header.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from citeval.errors import CitevalError
from citeval.measures import MRR, RECALL

# The columns that name a row rather than hold a value, in the order tables write them.
ROW_LABELS = ("granularity", "model")
# Table 2's mean over fields is the column ``AVG``; Table 3's are ``AVG MAP``, ``AVG NDCG``, ...
MEAN = "AVG"


def every(column: str) -> bool:
    return True


def means(column: str) -> bool:
    return column == MEAN or column.startswith(f"{MEAN} ")


def labelled(*labels: str) -> Callable[[str], bool]:
    return lambda column: column in labels


@dataclass(frozen=True)
class Pinned:
    """A table (its file name's stem), what the file pins of it, and which columns."""

    table: str
    description: str
    columns: Callable[[str], bool]


PINNED: tuple[Pinned, ...] = (
    Pinned("table1_dataset_level", "Table 1: MAP, NDCG and R@k per model and pool", every),
    Pinned("table2_field_level_map", "Table 2: MAP, the mean over fields", means),
    Pinned("table3_mdcr", "Table 3: MDCR, the means over fields", means),
    Pinned("table4_mdcr_types", "Table 4: MDCR per candidate type", every),
    Pinned("table_rerank_dataset_level", "the reranking table: first stages and reranked", every),
    Pinned(
        "local_test",
        "the local table (test split): MRR and R@10",
        labelled(MRR.label, (RECALL @ 10).label),
    ),
)
"""What a regression file holds of a run, in the order it lists the tables."""

Cells = dict[str, dict[str, float]]
"""Row name -> column -> value."""


class MissingTable(CitevalError):
    """A table, row or column that a regression file pins is not in the run."""


def table_path(results: Path, table: str) -> Path:
    return results / "tables" / f"{table}.tsv"


def read_table(path: Path) -> Cells:
    """A table's TSV as row name -> column -> value."""
    if not path.is_file():
        raise MissingTable(f"{path}: no such table (is the run finished?)")
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines:
        raise MissingTable(f"{path}: empty table")
    header = lines[0].split("\t")
    labels = 0
    while labels < len(header) and header[labels] in ROW_LABELS:
        labels += 1
    if not labels:
        raise MissingTable(f"{path}: no label column ({', '.join(ROW_LABELS)}) in {header}")
    cells: Cells = {}
    for number, line in enumerate(lines[1:], start=2):
        fields = line.split("\t")
        if len(fields) != len(header):
            raise MissingTable(
                f"{path}:{number}: {len(fields)} cells, the header has {len(header)}"
            )
        row = " ".join(fields[:labels])
        try:
            cells[row] = {
                c: float(v) for c, v in zip(header[labels:], fields[labels:], strict=True)
            }
        except ValueError as error:
            raise MissingTable(f"{path}:{number}: {error}") from None
    return cells


def pinned_cells(results: Path) -> dict[str, Cells]:
    """The cells :data:`PINNED` selects from every pinned table the run wrote (a config
    without a reranker or the local task writes no such table)."""
    found = {}
    for pinned in PINNED:
        path = table_path(results, pinned.table)
        if not path.is_file():
            continue
        found[pinned.table] = {
            row: {c: v for c, v in values.items() if pinned.columns(c)}
            for row, values in read_table(path).items()
        }
    if not found:
        tables = ", ".join(p.table for p in PINNED)
        raise MissingTable(f"{results / 'tables'}: none of the pinned tables ({tables})")
    return found


def run_drifts(results: Path) -> dict[str, str]:
    """Each system of the run, by name, with its drift's name, from the config its
    provenance record holds (``tables/provenance.json``)."""
    from citeval.config import load_config
    from citeval.systems import drift_of

    path = table_path(results, "provenance").with_suffix(".json")
    if not path.is_file():
        raise MissingTable(f"{path}: no provenance record (is the run finished?)")
    config = load_config(json.loads(path.read_text(encoding="utf-8"))["config"])
    return {name: drift.name for name, drift in drift_of(config).items()}


def same(expected: float, got: float, tolerance: float) -> bool:
    """Within ``tolerance`` (absolute, in the tables' units); NaN (no queries) matches NaN."""
    if math.isnan(expected) or math.isnan(got):
        return math.isnan(expected) and math.isnan(got)
    return abs(got - expected) <= tolerance
