"""The paper's MDCR tables from the evaluator's TSVs, one per model.

* ``table3_mdcr`` (Table 3): rows are models; columns are each field's MAP, NDCG and R@5,
  then the same for ``AVG``, the unweighted mean over fields, over the whole candidate
  list.
* ``table4_mdcr_types`` (Table 4): rows are models; columns are MAP, NDCG and R@5 of each
  candidate type (the positives plus that type's negatives), each the mean over fields.

Both are written as TSV (six decimals) and Markdown (one decimal) with
:func:`citeval.report.write_table`, values ×100 as the evaluator writes them.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Sequence
from pathlib import Path

from citeval.errors import InputDataError
from citeval.mdcr.evaluate import ALL_CANDIDATES, MEAN_FIELD, MEASURES, TSV_COLUMNS, Row

LABELS = {"map": "MAP", "ndcg": "NDCG", "recall_5": "R@5"}
TABLE3 = ("table3_mdcr", "Table 3: MDCR, MAP, NDCG and R@5 per field and mean over fields")
TABLE4 = ("table4_mdcr_types", "Table 4: MDCR per candidate type, mean over fields")


def read_rows_tsv(path: str | os.PathLike) -> list[Row]:
    """Rows of a TSV written by ``python -m citeval.mdcr evaluate --output``."""
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle, delimiter="\t")
            if tuple(reader.fieldnames or ()) != TSV_COLUMNS:
                raise InputDataError(
                    f"expected the columns {list(TSV_COLUMNS)}, got {reader.fieldnames}",
                    path=str(path),
                )
            return [
                Row(
                    record["candidates"],
                    record["field"],
                    int(record["n_queries"]),
                    {m: float(record[m]) for m in MEASURES},
                )
                for record in reader
            ]
    except OSError as error:
        raise InputDataError(f"cannot read: {error.strerror}", path=str(path)) from None
    except ValueError as error:
        raise InputDataError(f"not an evaluation TSV: {error}", path=str(path)) from None


def _index(rows: Sequence[Row]) -> dict[tuple[str, str], Row]:
    return {(row.candidates, row.field): row for row in rows}


def _table(
    per_model: dict[str, list[Row]], columns: dict[str, tuple[str, str]], what: str
) -> tuple[list[str], list[list[object]]]:
    """Header and rows with, per column name, the measures of one (candidates, field) row."""
    header = ["model"] + [f"{name} {LABELS[m]}" for name in columns for m in MEASURES]
    rows = []
    for model, model_rows in per_model.items():
        index = _index(model_rows)
        missing = [name for name, key in columns.items() if key not in index]
        if missing:
            raise InputDataError(f"model {model}: no rows for {what} {missing}")
        values = [index[key].values[m] for key in columns.values() for m in MEASURES]
        rows.append([model, *values])
    return header, rows


def table3(per_model: dict[str, list[Row]]) -> tuple[list[str], list[list[object]]]:
    """Header and rows of Table 3; the fields are those of the first model's rows."""
    first = next(iter(per_model.values()))
    fields = [r.field for r in first if r.candidates == ALL_CANDIDATES and r.field != MEAN_FIELD]
    columns = {name: (ALL_CANDIDATES, name) for name in [*fields, MEAN_FIELD]}
    return _table(per_model, columns, "fields")


def table4(per_model: dict[str, list[Row]]) -> tuple[list[str], list[list[object]]]:
    """Header and rows of Table 4: each candidate type's mean over fields."""
    first = next(iter(per_model.values()))
    kinds = sorted(
        {r.candidates for r in first if r.candidates != ALL_CANDIDATES and r.field == MEAN_FIELD}
    )
    return _table(per_model, {kind: (kind, MEAN_FIELD) for kind in kinds}, "candidate types")


def write_tables(evaluations: Sequence[tuple[str, Path]], output_dir: str | os.PathLike) -> None:
    """Tables 3 and 4 from ``(model, evaluation TSV)`` pairs, rows in the order given."""
    from citeval.report import write_table

    if not evaluations:
        raise InputDataError("no evaluation TSV to tabulate")
    per_model = {model: read_rows_tsv(path) for model, path in evaluations}
    output = Path(output_dir)
    for (name, title), (header, rows) in ((TABLE3, table3(per_model)), (TABLE4, table4(per_model))):
        write_table(output, name, title, header, rows)
