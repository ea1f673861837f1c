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

Each table's measures are declared in :mod:`citeval.measures`; the tables are written by
:mod:`citeval.table_files`. The code: :mod:`citeval.tables.inputs` (the per-query metrics of
the test collections), :mod:`citeval.tables.dataset` (Table 1, the reranking table),
:mod:`citeval.tables.field` (Tables 2, 7, 8), :mod:`citeval.tables.summary` (summary and
provenance). The command line is :mod:`citeval.tables.cli` (``python -m citeval.tables``).
"""

from citeval.table_files import NO_QUERIES, render, write_table
from citeval.tables.dataset import DATASET_UNIT, RERANK_TABLE, TABLE1, dataset_level_table
from citeval.tables.field import FIELD_TABLES, FIELD_UNIT, field_level_tables
from citeval.tables.inputs import (
    check_same_queries,
    collection_means,
    collection_values,
    collections_of_test_split,
    groups_without_queries,
    mean_over_reps,
    metrics_path,
    pool_labels,
    query_values,
)
from citeval.tables.summary import PACKAGES, package_versions, provenance, summary_table

__all__ = [
    "DATASET_UNIT",
    "FIELD_TABLES",
    "FIELD_UNIT",
    "NO_QUERIES",
    "PACKAGES",
    "RERANK_TABLE",
    "TABLE1",
    "check_same_queries",
    "collection_means",
    "collection_values",
    "collections_of_test_split",
    "dataset_level_table",
    "field_level_tables",
    "groups_without_queries",
    "mean_over_reps",
    "metrics_path",
    "package_versions",
    "pool_labels",
    "provenance",
    "query_values",
    "render",
    "summary_table",
    "write_table",
]
