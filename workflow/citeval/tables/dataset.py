"""Table 1 and the reranking table: dataset level, rows are models, columns are each pool
size's measures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from citeval.collection_list import pool_size_of
from citeval.measures import HATTEN_MEASURES, NOGUEIRA_MEASURES, Measure
from citeval.significance import Settings, baseline_missing, table_tests
from citeval.table_files import write_table
from citeval.tables.inputs import (
    check_same_queries,
    collection_means,
    collection_values,
    groups_without_queries,
    mean_over_reps,
    pool_labels,
    query_values,
)

DATASET_UNIT = (
    "query (its value is the mean over the pool size's repetitions, which share the "
    "queries and differ in their pools)"
)


TABLE1 = ("table1_dataset_level", "Table 1: dataset-level, mean over repetitions")
RERANK_TABLE = (
    "table_rerank_dataset_level",
    "Reranking: dataset-level, with the measures of Nogueira et al. "
    f"({', '.join(m.label for m in NOGUEIRA_MEASURES)}) and HAtten "
    f"({', '.join(m.label for m in HATTEN_MEASURES)}), mean over repetitions",
)


def dataset_level_table(
    results: Path,
    models: Sequence[str],
    measures: Sequence[Measure],
    output_dir: Path,
    settings: Settings | None = None,
    table: tuple[str, str] = TABLE1,
    *,
    flagged: Mapping[str, str] | None = None,
) -> list[list[object]]:
    """Rows are models, columns pool size × ``measures`` (:mod:`citeval.measures`:
    :func:`~citeval.measures.table1_measures`,
    :func:`~citeval.measures.rerank_table_measures`)."""
    name, title = table
    values = collection_values(results, "dataset", models, [m.name for m in measures])
    means = mean_over_reps(collection_means(values))
    groups = sorted({group for group, _ in means}, key=pool_size_of)
    labels = pool_labels(results)
    columns = {f"{labels[g]} {m.label}": (g, m.name) for g in groups for m in measures}
    header = ["model", *columns]
    rows = [[model] + [100 * means[(g, model)][m] for g, m in columns.values()] for model in models]
    tests = None
    if settings is not None and not baseline_missing(models, settings, name):
        check_same_queries(values, settings.baseline)
        per_column = {
            column: {model: query_values(values, g, model, m) for model in models}
            for column, (g, m) in columns.items()
        }
        tests = table_tests(name, per_column, settings, DATASET_UNIT)
    without_queries = groups_without_queries(results, "dataset")
    empty = [labels[g] for g in groups if g in without_queries]
    write_table(output_dir, name, title, header, rows, tests, empty, flagged)
    return rows
