"""Expected numbers per config: regression files, ``citeval regressions check|update|docs``
on small fabricated tables, and docs/reproductions.md against the committed files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from citeval.regressions import compare, pinned_cells, read, read_table, render_docs
from citeval.regressions.cli import main

REPO = Path(__file__).resolve().parents[1]

TABLE1 = """model\t600 MAP\t600 NDCG\t600 R@30
bm25\t21.500000\t40.250000\t55.000000
tiny\t3.125000\t12.000000\t10.000000
"""
TABLE2 = """model\tBiology\tArt\tAVG
bm25\t20.000000\tnan\t20.000000
tiny\t2.000000\tnan\t2.000000
"""
TABLE3 = """model\tBiology MAP\tAVG MAP\tAVG NDCG\tAVG R@5
bm25\t30.000000\t30.000000\t50.000000\t40.000000
"""
LOCAL = """granularity\tmodel\tMRR\tR@1\tR@10\tNDCG@10\tMAP
chars-200\tbm25\t41.000000\t30.000000\t70.000000\t45.000000\t35.000000
chars-200\tbm25>ce@20\t42.000000\t31.000000\t70.000000\t46.000000\t36.000000
"""


# The run's config as its provenance record holds it: BM25, a computed encoder, an encoder
# fine-tuned on the graph (the record's registry lists it too) and the cross-encoder the
# pipeline trains (the local table's `bm25>ce@20`).
CONFIG = {
    "dataset": "e2e",
    "seed": 3,
    "corpus": {"format": "parquet", "paths": ["papers.parquet"]},
    "models": {
        "tiny": {"path": "tiny-bert", "pooling": "cls"},
        "tiny_scincl": {"path": "results/e2e/train/tiny_scincl/model", "pooling": "cls"},
    },
    "encode": {"models": ["tiny", "tiny_scincl"]},
    "train": {"models": {"tiny_scincl": {"sampler": "scincl", "base": "tiny"}}},
    "rerank": {"enabled": True, "model": "tiny-bert", "ks": [20]},
}


@pytest.fixture
def results(tmp_path: Path) -> Path:
    tables = tmp_path / "results" / "e2e" / "tables"
    tables.mkdir(parents=True)
    (tables / "provenance.json").write_text(json.dumps({"config": CONFIG}))
    for name, text in (
        ("table1_dataset_level", TABLE1),
        ("table2_field_level_map", TABLE2),
        ("table3_mdcr", TABLE3),
        ("local_test", LOCAL),
        ("tradeoff", "first_stage\tK\ts/query\n"),  # timed: never pinned
    ):
        (tables / f"{name}.tsv").write_text(text)
    return tables.parent


def new_file(tmp_path: Path, results: Path, *extra: str) -> Path:
    folder = tmp_path / "regressions"
    argv = ["--folder", str(folder), "update", "e2e", "--results", str(results)]
    argv += ["--config", "tests/data/pipeline.yaml", "--command", "pytest tests/x.py", *extra]
    assert main(argv) == 0
    return folder / "e2e.yaml"


def set_cell(results: Path, table: str, old: str, new: str) -> None:
    path = results / "tables" / f"{table}.tsv"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_the_pinned_cells_are_the_main_tables_columns(results):
    cells = pinned_cells(results)
    assert list(cells) == ["table1_dataset_level", "table2_field_level_map", "table3_mdcr",
                           "local_test"]  # fmt: skip
    assert cells["table1_dataset_level"]["bm25"] == {
        "600 MAP": 21.5, "600 NDCG": 40.25, "600 R@30": 55.0
    }  # fmt: skip
    assert cells["table2_field_level_map"]["tiny"] == {"AVG": 2.0}
    assert list(cells["table3_mdcr"]["bm25"]) == ["AVG MAP", "AVG NDCG", "AVG R@5"]
    assert cells["local_test"]["chars-200 bm25>ce@20"] == {"MRR": 42.0, "R@10": 70.0}


def test_update_writes_a_file_that_check_passes(tmp_path, results, capsys):
    path = new_file(tmp_path, results)
    expected = read(path)
    assert (expected.name, expected.config, expected.tolerance) == (
        "e2e", "tests/data/pipeline.yaml", 0.0
    )  # fmt: skip
    assert expected.results == str(results)
    capsys.readouterr()
    assert main(["--folder", str(path.parent), "check", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1].startswith("PASS e2e (tests/data/pipeline.yaml)")
    assert "all 15 cells within their tolerance" in out
    assert out.splitlines()[1].split()[:3] == ["ok", "table1_dataset_level", "bm25"]


def test_a_moved_cell_fails_with_a_readable_diff(tmp_path, results, capsys):
    path = new_file(tmp_path, results)
    set_cell(results, "table1_dataset_level", "21.500000", "21.600000")
    capsys.readouterr()
    assert main(["--folder", str(path.parent), "check", str(path), "--misses"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["table", "row", "column", "expected", "got", "diff", "tolerance"]
    assert lines[1].split() == [
        "MISS", "table1_dataset_level", "bm25", "600", "MAP",
        "21.500000", "21.600000", "+0.100000", "0",
    ]  # fmt: skip
    assert lines[2] == (
        f"FAIL e2e (tests/data/pipeline.yaml) against {results}: "
        "1 of 15 cells outside their tolerance"
    )


def test_tolerances_per_file_and_per_value(tmp_path, results):
    path = new_file(tmp_path, results, "--tolerance", "0.05")
    set_cell(results, "table3_mdcr", "50.000000", "50.040000")
    assert [cell.ok for cell in compare(read(path), results) if not cell.ok] == []
    set_cell(results, "table3_mdcr", "50.040000", "50.200000")
    (miss,) = [cell for cell in compare(read(path), results) if not cell.ok]
    assert (miss.row, miss.column, miss.tolerance) == ("bm25", "AVG NDCG", 0.05)
    text = path.read_text().replace("AVG NDCG: 50.0", "AVG NDCG: {value: 50.0, tolerance: 0.5}")
    path.write_text(text)
    assert all(cell.ok for cell in compare(read(path), results))


def test_update_writes_each_systems_drift_from_the_runs_config(tmp_path, results):
    expected = read(new_file(tmp_path, results))
    assert expected.systems == {
        "bm25": "exact", "tiny": "computed", "tiny_scincl": "trained", "ce": "trained"
    }  # fmt: skip
    assert [expected.row_drift(row).name for row in ("bm25", "tiny", "chars-200 bm25>ce@20")] == [
        "exact", "computed", "trained"
    ]  # fmt: skip


def test_a_rows_tolerance_is_its_loosest_systems_drifts(tmp_path, results):
    """Exact cells keep the file's tolerance; a row that names a computed or trained system
    gets that drift's, however few of its cells moved."""
    path = new_file(tmp_path, results)
    text = path.read_text().replace(
        "drift: {}", "drift:\n  computed: {tolerance: 0.1}\n  trained:\n    tolerance: 2\n"
        "    measured: avx2 against avx512"
    )  # fmt: skip
    path.write_text(text)
    expected = read(path)
    assert expected.drift["trained"].measured == "avx2 against avx512"
    set_cell(results, "local_test", "42.000000", "43.500000")  # bm25>ce@20 MRR: trained
    set_cell(results, "table1_dataset_level", "3.125000", "3.200000")  # tiny: computed
    assert all(cell.ok for cell in compare(expected, results))
    set_cell(results, "table1_dataset_level", "3.200000", "3.300000")
    set_cell(results, "table1_dataset_level", "21.500000", "21.500001")  # bm25: exact
    misses = [(cell.row, cell.column, cell.tolerance) for cell in compare(expected, results)
              if not cell.ok]  # fmt: skip
    assert misses == [("bm25", "600 MAP", 0.0), ("tiny", "600 MAP", 0.1)]
    # update keeps the drifts' tolerances and what they say of their measurement
    assert main(["--folder", str(path.parent), "update", "e2e"]) == 0
    assert read(path).drift == expected.drift


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("drift", {"noisy": {"tolerance": 1}}, "drift.noisy: 'noisy' is not a drift"),
        ("drift", {"trained": {"tolerance": "big"}}, "drift.trained.tolerance: expected a number"),
        ("drift", {"trained": 1}, "drift.trained: a mapping of tolerance and measured"),
        ("systems", {"bm25": "counted"}, "systems.bm25: 'counted' is not a drift"),
    ],
)
def test_a_malformed_drift_is_named(tmp_path, results, capsys, key, value, message):
    path = new_file(tmp_path, results)
    raw = yaml.safe_load(path.read_text())
    raw[key] = value
    path.write_text(yaml.safe_dump(raw))
    capsys.readouterr()
    assert main(["--folder", str(path.parent), "check", str(path)]) == 2
    assert message in capsys.readouterr().err


def test_update_keeps_tolerances_and_reports_what_moved(tmp_path, results, capsys):
    path = new_file(tmp_path, results, "--tolerance", "0.1")
    text = path.read_text().replace("600 NDCG: 40.25", "600 NDCG: {value: 40.25, tolerance: 1}")
    path.write_text(text)
    set_cell(results, "table1_dataset_level", "40.250000", "40.750000")
    set_cell(results, "local_test", "41.000000", "40.000000")
    capsys.readouterr()
    assert main(["--folder", str(path.parent), "update", "e2e"]) == 0
    out = capsys.readouterr().out
    assert "table1_dataset_level  bm25  600 NDCG: 40.250000 -> 40.750000 (+0.500000)" in out
    assert "local_test  chars-200 bm25  MRR: 41.000000 -> 40.000000 (-1.000000)" in out
    assert out.splitlines()[-1].endswith("15 cells, 2 changed, 0 added, 0 removed")
    expected = read(path)
    assert expected.tolerance == 0.1 and expected.config == "tests/data/pipeline.yaml"
    value = expected.tables["table1_dataset_level"]["bm25"]["600 NDCG"]
    assert (value.value, value.tolerance) == (40.75, 1.0)
    assert expected.tables["local_test"]["chars-200 bm25"]["MRR"].tolerance is None


def test_nan_cells_match_nan(tmp_path, results):
    set_cell(results, "table2_field_level_map", "2.000000\n", "nan\n")
    path = new_file(tmp_path, results)
    assert "AVG: .nan" in path.read_text()
    assert all(cell.ok for cell in compare(read(path), results))
    set_cell(results, "table2_field_level_map", "\tnan\n", "\t1.000000\n")
    assert [cell.row for cell in compare(read(path), results) if not cell.ok] == ["tiny"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda tables: (tables / "table3_mdcr.tsv").unlink(), "table3_mdcr.tsv: no such table"),
        (lambda tables: set_cell(tables.parent, "table1_dataset_level", "\ntiny", "\nother"),
         "table1_dataset_level.tsv: no row 'tiny'"),
        (lambda tables: set_cell(tables.parent, "local_test", "\tR@10", "\tR@20"),
         "local_test.tsv: no column 'R@10'"),
    ],
)  # fmt: skip
def test_a_missing_table_row_or_column_exits_2_naming_it(
    tmp_path, results, capsys, change, message
):
    path = new_file(tmp_path, results)
    change(results / "tables")
    capsys.readouterr()
    assert main(["--folder", str(path.parent), "check", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_check_finds_the_file_by_name_or_by_config(tmp_path, results, monkeypatch, capsys):
    config = tmp_path / "pipeline.yaml"
    config.write_text("dataset: e2e\n")
    path = new_file(tmp_path, results, "--config", str(config))
    folder = ["--folder", str(path.parent)]
    assert main([*folder, "check", "e2e"]) == 0
    assert main([*folder, "check", str(config)]) == 0
    capsys.readouterr()
    assert main([*folder, "check", "nothing"]) == 2
    assert "no such regression file, config or name" in capsys.readouterr().err


def test_a_new_file_needs_its_config_and_command(tmp_path, results, capsys):
    argv = ["--folder", str(tmp_path), "update", "new", "--results", str(results)]
    assert main(argv) == 2
    assert "a new file needs --results, --config and --command" in capsys.readouterr().err


def test_a_malformed_value_is_named(tmp_path, results, capsys):
    path = new_file(tmp_path, results)
    path.write_text(path.read_text().replace("600 MAP: 21.5", "600 MAP: high"))
    capsys.readouterr()
    assert main(["--folder", str(path.parent), "check", str(path)]) == 2
    assert "tables.table1_dataset_level.bm25.600 MAP: expected a number" in capsys.readouterr().err


def test_read_table_names_rows_by_their_label_columns(results):
    rows = read_table(results / "tables" / "local_test.tsv")
    assert list(rows) == ["chars-200 bm25", "chars-200 bm25>ce@20"]


def test_the_docs_list_every_file_with_its_command_and_table(tmp_path, results):
    expected = read(new_file(tmp_path, results))
    text = render_docs([expected])
    assert "## e2e" in text and "- run: `pytest tests/x.py`" in text
    assert "| bm25 | 21.50 | 40.25 | 55.00 |" in text


def test_the_committed_reproductions_page_is_up_to_date(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    assert main(["docs", "--check"]) == 0, capsys.readouterr().out


def test_docs_check_fails_on_a_stale_page(tmp_path, results, capsys):
    path = new_file(tmp_path, results)
    page = tmp_path / "reproductions.md"
    folder = ["--folder", str(path.parent)]
    assert main([*folder, "docs", "--output", str(page)]) == 0
    assert main([*folder, "docs", "--output", str(page), "--check"]) == 0
    path.write_text(path.read_text().replace("600 MAP: 21.5", "600 MAP: 22.5"))
    capsys.readouterr()
    assert main([*folder, "docs", "--output", str(page), "--check"]) == 1
    assert "is out of date: run `citeval regressions docs`" in capsys.readouterr().out
