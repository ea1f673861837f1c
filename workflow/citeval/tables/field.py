"""Tables 2, 7 and 8: field level, rows are models, columns are the fields and their mean."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from statistics import fmean

from citeval.collection_list import field_slug
from citeval.errors import CitevalError
from citeval.measures import field_table_measures
from citeval.significance import Settings, baseline_missing, stratum_weights, table_tests
from citeval.table_files import write_table
from citeval.tables.inputs import (
    check_same_queries,
    collection_means,
    collection_values,
    groups_without_queries,
    mean_over_reps,
    query_values,
)

FIELD_TABLES = (
    ("table2_field_level_map", "Table 2"),
    ("table7_field_level_ndcg", "Table 7"),
    ("table8_field_level_recall", "Table 8"),
)
"""File name and number of the tables of :func:`citeval.measures.field_table_measures`,
one per measure, in its order."""

FIELD_UNIT = (
    "query of the field (its value is the mean over the field's repetitions); AVG: "
    "(field, query), each weighted by 1 / (number of fields × the field's queries) so that "
    "the tested difference is the AVG column's"
)


def field_level_tables(
    results: Path,
    models: Sequence[str],
    fields: Sequence[str],
    cutoff: int,
    output_dir: Path,
    settings: Settings | None = None,
    flagged: Mapping[str, str] | None = None,
) -> None:
    """One table per measure of :func:`citeval.measures.field_table_measures`: rows are
    models, columns ``fields`` and their mean, AVG."""
    tables = {
        measure.name: (name, f"{number}: field-level {measure.label}")
        for measure, (name, number) in zip(field_table_measures(cutoff), FIELD_TABLES, strict=True)
    }
    values = collection_values(results, "field", models, list(tables))
    means = mean_over_reps(collection_means(values))
    present = {group for group, _ in means}
    absent = [name for name in fields if field_slug(name) not in present]
    if absent:
        raise CitevalError(
            f"--fields {absent}: no field-level collection under {results} "
            f"(its fields: {sorted(present)})"
        )
    test = settings is not None and not baseline_missing(models, settings, "field-level tables")
    if test:
        check_same_queries(values, settings.baseline)
    without_queries = groups_without_queries(results, "field")
    empty = [f for f in fields if field_slug(f) in without_queries]
    for measure, (name, title) in tables.items():
        rows = []
        for model in models:
            row = [100 * means[(field_slug(f), model)][measure] for f in fields]
            sampled = [value for f, value in zip(fields, row, strict=True) if f not in empty]
            rows.append([model, *row, fmean(sampled) if sampled else math.nan])
        tests = None
        if test:
            per_column: dict[str, dict[str, dict]] = {}
            for f in fields:
                per_column[f] = {
                    model: query_values(values, field_slug(f), model, measure) for model in models
                }
            per_column["AVG"] = {
                model: {
                    (f, qid): value for f in fields for qid, value in per_column[f][model].items()
                }
                for model in models
            }
            weights = {"AVG": stratum_weights(per_column["AVG"][settings.baseline])}
            tests = table_tests(name, per_column, settings, FIELD_UNIT, weights)
        write_table(output_dir, name, title, ["model", *fields, "AVG"], rows, tests, empty, flagged)
