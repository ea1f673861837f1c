"""Aggregation into the paper's tables from per-query metric files."""

import json

import pytest

from citeval.collections import CollectionInfo, write_collections
from citeval.metrics import write_per_query_tsv
from citeval.report import main

MEASURES = ["map", "ndcg", "recall_30"]


def write_collection(results, setup, rows):
    """rows: (group, rep, pool_size, requested, {model: map value})."""
    directory = results / "samples" / f"{setup}-test"
    listed = []
    for group, rep, size, requested, values in rows:
        listed.append(CollectionInfo(setup, "test", group, rep, 2, size, requested))
        for model, value in values.items():
            per_query = {
                "q1": {m: value - 0.1 for m in MEASURES},
                "q2": {m: value + 0.1 for m in MEASURES},
            }
            mean = {m: value for m in MEASURES}
            path = results / "metrics" / f"{setup}-test" / f"{group}.rep{rep}" / f"{model}.tsv"
            write_per_query_tsv(per_query, mean, path)
    write_collections(listed, directory)


@pytest.fixture
def results(tmp_path):
    write_collection(
        tmp_path,
        "dataset",
        [
            ("pool-100", 0, 100, 100, {"bm25": 0.5, "dense": 0.3}),
            ("pool-100", 1, 100, 100, {"bm25": 0.7, "dense": 0.5}),
            ("pool-5000", 0, 900, 5000, {"bm25": 0.2, "dense": 0.1}),
        ],
    )
    write_collection(
        tmp_path,
        "field",
        [
            ("biology", 0, 50, 50, {"bm25": 0.4, "dense": 0.2}),
            ("biology", 1, 50, 50, {"bm25": 0.6, "dense": 0.4}),
            ("art", 0, 30, 50, {"bm25": 0.1, "dense": 0.3}),
        ],
    )
    return tmp_path


def run_report(results):
    config = {"dataset": "t", "seed": 1}
    status = main(
        ["--results", str(results), "--setups", "dataset", "field", "--models", "bm25",
         "dense", "--fields", "Art", "Biology", "--cutoff", "30", "--config-json",
         json.dumps(config), "--output-dir", str(results / "tables")]
    )  # fmt: skip
    assert status == 0
    return results / "tables"


def read_tsv(path):
    header, *rows = (line.split("\t") for line in path.read_text().splitlines())
    return header, {row[0]: [float(v) for v in row[1:]] for row in rows}


def test_table1_means_over_repetitions_and_labels_capped_pools(results):
    header, rows = read_tsv(run_report(results) / "table1_dataset_level.tsv")
    assert header == ["model", "100 MAP", "100 NDCG", "100 R@30",
                      "900 (capped) MAP", "900 (capped) NDCG", "900 (capped) R@30"]  # fmt: skip
    assert rows["bm25"] == pytest.approx([60.0, 60.0, 60.0, 20.0, 20.0, 20.0])
    assert rows["dense"] == pytest.approx([40.0, 40.0, 40.0, 10.0, 10.0, 10.0])


def test_field_tables_average_fields_after_repetitions(results):
    tables = run_report(results)
    header, rows = read_tsv(tables / "table2_field_level_map.tsv")
    assert header == ["model", "Art", "Biology", "AVG"]
    assert rows["bm25"] == pytest.approx([10.0, 50.0, 30.0])
    assert rows["dense"] == pytest.approx([30.0, 30.0, 30.0])
    assert (
        (tables / "table8_field_level_recall.md")
        .read_text()
        .startswith("### Table 8: field-level R@30")
    )


def test_report_is_deterministic_and_records_provenance(results, tmp_path):
    first = {p.name: p.read_bytes() for p in run_report(results).iterdir()}
    second = {p.name: p.read_bytes() for p in run_report(results).iterdir()}
    assert first == second
    provenance = json.loads(first["provenance.json"])
    assert provenance["seed"] == 1
    assert len(provenance["config_sha256"]) == 64
    assert "duckdb" in provenance["packages"]


def test_missing_metrics_file_is_a_clear_error(results, capsys):
    (results / "metrics" / "field-test" / "art.rep0" / "dense.tsv").unlink()
    status = main(
        ["--results", str(results), "--setups", "field", "--models", "bm25", "dense",
         "--fields", "Art", "Biology", "--config-json", "{}", "--output-dir",
         str(results / "tables")]
    )  # fmt: skip
    assert status == 2
    assert "dense.tsv" in capsys.readouterr().err
