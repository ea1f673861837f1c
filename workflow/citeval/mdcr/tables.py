"""The paper's MDCR tables from the evaluator's TSVs, one per model.

* ``table3_mdcr`` (Table 3): rows are models; columns are each field's MAP, NDCG and R@5,
  then the same for ``AVG``, the unweighted mean over fields, over the whole candidate
  list.
* ``table4_mdcr_types`` (Table 4): rows are models; columns are MAP, NDCG and R@5 of each
  candidate type (the positives plus that type's negatives), each the mean over fields.

Both are written as TSV (six decimals) and Markdown (one decimal) with
:func:`citeval.table_files.write_table`, values ×100 as the evaluator writes them.

With a baseline and every model's per-query TSV (``evaluate --per-query-output``), every
other model is tested against the baseline per column (:mod:`citeval.significance`): a
field's column pairs the field's queries; an ``AVG`` column (Table 3's, and every column
of Table 4) pairs the (field, query) units of its subset, weighted so that the tested
difference is the unweighted mean over fields that the column shows.
"""

from __future__ import annotations

import csv
import logging
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from citeval.errors import ConfigError, InputDataError
from citeval.mdcr.evaluate import (
    ALL_CANDIDATES,
    MEAN_FIELD,
    MEASURES,
    QUERY_TSV_COLUMNS,
    TSV_COLUMNS,
    PerQuery,
    Row,
)
from citeval.measures import MDCR_MEASURES, spoken_list
from citeval.significance import (
    Settings,
    TableTests,
    baseline_missing,
    stratum_weights,
    table_tests,
)
from citeval.table_files import write_table

log = logging.getLogger(__name__)

LABELS = {m.name: m.label for m in MDCR_MEASURES}
TABLE3 = (
    "table3_mdcr",
    f"Table 3: MDCR, {spoken_list(LABELS.values())} per field and mean over fields",
)
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
            rows = []
            for record in reader:
                try:
                    values = {m: float(record[m]) for m in MEASURES}
                    n_queries = int(record["n_queries"])
                except (TypeError, ValueError) as error:  # a short row gives None
                    raise InputDataError(
                        f"not an evaluation TSV row: {error}", path=str(path), line=reader.line_num
                    ) from None
                rows.append(Row(record["candidates"], record["field"], n_queries, values))
            return rows
    except OSError as error:
        raise InputDataError(f"cannot read: {error.strerror}", path=str(path)) from None


def read_queries_tsv(path: str | os.PathLike) -> PerQuery:
    """Values (×100, as written) of ``python -m citeval.mdcr evaluate --per-query-output``."""
    per_query: PerQuery = {}
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle, delimiter="\t")
            if tuple(reader.fieldnames or ()) != QUERY_TSV_COLUMNS:
                raise InputDataError(
                    f"expected the columns {list(QUERY_TSV_COLUMNS)}, got {reader.fieldnames}",
                    path=str(path),
                )
            for record in reader:
                queries = per_query.setdefault((record["candidates"], record["field"]), {})
                if record["query_id"] in queries:
                    raise InputDataError(
                        f"query {record['query_id']!r} repeated in {record['candidates']} "
                        f"{record['field']}",
                        path=str(path),
                    )
                queries[record["query_id"]] = {m: float(record[m]) for m in MEASURES}
    except OSError as error:
        raise InputDataError(f"cannot read: {error.strerror}", path=str(path)) from None
    except (TypeError, ValueError) as error:
        raise InputDataError(f"not a per-query evaluation TSV: {error}", path=str(path)) from None
    return per_query


def _index(rows: Sequence[Row]) -> dict[tuple[str, str], Row]:
    return {(row.candidates, row.field): row for row in rows}


def _columns(per_model: dict[str, list[Row]], columns: dict[str, tuple[str, str]]) -> dict:
    """Header column name -> (candidates, field, measure)."""
    return {f"{name} {LABELS[m]}": (*key, m) for name, key in columns.items() for m in MEASURES}


def _table(
    per_model: dict[str, list[Row]], columns: dict[str, tuple[str, str]], what: str
) -> tuple[list[str], list[list[object]]]:
    """Header and rows with, per column name, the measures of one (candidates, field) row."""
    header = ["model", *_columns(per_model, columns)]
    rows = []
    for model, model_rows in per_model.items():
        index = _index(model_rows)
        missing = [name for name, key in columns.items() if key not in index]
        if missing:
            raise InputDataError(f"model {model}: no rows for {what} {missing}")
        values = [index[key].values[m] for key in columns.values() for m in MEASURES]
        rows.append([model, *values])
    return header, rows


def column_units(per_query: PerQuery, candidates: str, field: str, measure: str) -> dict:
    """A column's pairing units: the field's query ids, or for ``AVG`` (field, query id)."""
    if field != MEAN_FIELD:
        return {q: v[measure] for q, v in per_query.get((candidates, field), {}).items()}
    return {
        (f, q): v[measure]
        for (kind, f), values in per_query.items()
        if kind == candidates
        for q, v in values.items()
    }


def check_consistent(model: str, rows: Sequence[Row], per_query: PerQuery) -> None:
    """The per-query TSV belongs with the evaluation TSV: same fields, same means."""
    for row in rows:
        if row.field == MEAN_FIELD:
            continue
        values = per_query.get((row.candidates, row.field), {})
        for m in MEASURES:
            mean = math.fsum(v[m] for v in values.values()) / len(values) if values else math.nan
            if len(values) != row.n_queries or not math.isclose(mean, row.values[m], abs_tol=1e-6):
                raise InputDataError(
                    f"model {model}: the per-query values of {row.candidates} {row.field} do "
                    "not match its evaluation TSV (a different benchmark or scores file?)"
                )


def significance(
    name: str,
    per_model: dict[str, list[Row]],
    columns: dict[str, tuple[str, str]],
    per_query: Mapping[str, PerQuery],
    settings: Settings,
) -> TableTests:
    """The tests of one table, every column against ``settings.baseline``."""
    per_column, weights = {}, {}
    for column, (candidates, field, measure) in _columns(per_model, columns).items():
        per_column[column] = {
            model: column_units(per_query[model], candidates, field, measure) for model in per_model
        }
        if field == MEAN_FIELD:
            weights[column] = stratum_weights(per_column[column][settings.baseline])
    return table_tests(name, per_column, settings, UNIT, weights)


UNIT = (
    "query of the field; AVG columns (Table 3's AVG, every Table 4 column): (field, query), "
    "each weighted by 1 / (number of fields × the field's queries) so that the tested "
    "difference is the column's mean over fields"
)


def table3_columns(per_model: dict[str, list[Row]]) -> dict[str, tuple[str, str]]:
    """Table 3's (candidates, field) per column name; the fields are the first model's."""
    first = next(iter(per_model.values()))
    fields = [r.field for r in first if r.candidates == ALL_CANDIDATES and r.field != MEAN_FIELD]
    return {name: (ALL_CANDIDATES, name) for name in [*fields, MEAN_FIELD]}


def table4_columns(per_model: dict[str, list[Row]]) -> dict[str, tuple[str, str]]:
    """Table 4's (candidates, field) per column name: each type's mean over fields."""
    first = next(iter(per_model.values()))
    kinds = sorted(
        {r.candidates for r in first if r.candidates != ALL_CANDIDATES and r.field == MEAN_FIELD}
    )
    return {kind: (kind, MEAN_FIELD) for kind in kinds}


def table3(per_model: dict[str, list[Row]]) -> tuple[list[str], list[list[object]]]:
    """Header and rows of Table 3; the fields are those of the first model's rows."""
    return _table(per_model, table3_columns(per_model), "fields")


def table4(per_model: dict[str, list[Row]]) -> tuple[list[str], list[list[object]]]:
    """Header and rows of Table 4: each candidate type's mean over fields."""
    return _table(per_model, table4_columns(per_model), "candidate types")


def _per_query(
    models: Sequence[str], per_query_paths: Sequence[tuple[str, Path]], settings: Settings | None
) -> dict[str, PerQuery] | None:
    """Every model's per-query values, or None (logged) when the tables get no p-values."""
    if settings is None or baseline_missing(models, settings, "MDCR tables"):
        return None
    if not per_query_paths:
        log.warning("MDCR tables: no --per-query TSVs; written without p-values")
        return None
    paths = dict(per_query_paths)
    if sorted(paths) != sorted(models):
        raise ConfigError(
            f"--per-query names the models {sorted(paths)}, --evaluations {sorted(models)}"
        )
    return {model: read_queries_tsv(paths[model]) for model in models}


def write_tables(
    evaluations: Sequence[tuple[str, Path]],
    output_dir: str | os.PathLike,
    settings: Settings | None = None,
    per_query_paths: Sequence[tuple[str, Path]] = (),
    flagged: Mapping[str, str] | None = None,
) -> None:
    """Tables 3 and 4 from ``(model, evaluation TSV)`` pairs, rows in the order given.

    With ``settings`` and every model's ``(model, per-query TSV)``, also the tests against
    ``settings.baseline`` (see the module docstring).
    """
    if not evaluations:
        raise InputDataError("no evaluation TSV to tabulate")
    per_model = {model: read_rows_tsv(path) for model, path in evaluations}
    per_query = _per_query(list(per_model), per_query_paths, settings)
    if per_query is not None:
        for model, rows in per_model.items():
            check_consistent(model, rows, per_query[model])
    output = Path(output_dir)
    for (name, title), columns in (
        (TABLE3, table3_columns(per_model)),
        (TABLE4, table4_columns(per_model)),
    ):
        what = "fields" if name == TABLE3[0] else "candidate types"
        header, rows = _table(per_model, columns, what)
        tests = None
        if per_query is not None:
            tests = significance(name, per_model, columns, per_query, settings)
        write_table(output, name, title, header, rows, tests, not_learned=flagged)
