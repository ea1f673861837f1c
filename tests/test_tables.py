"""Aggregation into the paper's tables from per-query metric files."""

import json
import math

import pytest

from citeval.collection_list import CollectionInfo, read_collections, write_collections
from citeval.config import load_config
from citeval.metrics import write_per_query_tsv
from citeval.stages import TABLES
from citeval.tables.cli import build_parser, main

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
    # The R@k columns use the first of --cutoffs.
    config = {"dataset": "t", "seed": 1}
    status = main(
        ["--results", str(results), "--setups", "dataset", "field", "--models", "bm25",
         "dense", "--fields", "Art", "Biology", "--cutoffs", "30", "10", "--config-json",
         json.dumps(config), "--output-dir", str(results / "tables"), "--baseline", "none",
         "--seed", "1"]
    )  # fmt: skip
    assert status == 0
    return results / "tables"


def read_tsv(path):
    header, *rows = (line.split("\t") for line in path.read_text().splitlines())
    return header, {row[0]: [float(v) for v in row[1:]] for row in rows}


@pytest.mark.parametrize("tables", [{}, {"baseline": None, "significance": {"alpha": 0.01}}])
def test_the_configs_flags_parse(tables):
    corpus = {"format": "s2orc_v2020", "paths": ["s2orc-*.jsonl.gz"]}
    config = load_config({"dataset": "t", "seed": 3, "corpus": corpus, "tables": tables})
    wiring = ["--results", "r", "--setups", "field", "--models", "bm25", "--config-json", "{}"]
    args = build_parser().parse_args([*wiring, "--output-dir", "o", *TABLES.argv(config)])
    assert args.models == ["bm25"]  # the table rows (wiring), not a config key
    assert args.fields == config.sampling.field_level.fields
    assert args.cutoffs == config.metrics.cutoffs
    assert (args.baseline, args.permutations, args.alpha, args.seed) == (
        config.tables.baseline,
        config.tables.significance.permutations,
        config.tables.significance.alpha,
        3,
    )


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


def test_a_field_without_queries_is_a_dash_left_out_of_the_average(results):
    """A field that sampling left without queries keeps its column: NaN in the TSV, a
    dash in the Markdown with a note, and the AVG column over the other fields."""
    directory = results / "samples" / "field-test"
    listed = [
        *read_collections(directory),
        CollectionInfo("field", "test", "history", 0, 0, 40, 50),
    ]
    write_collections(listed, directory)
    for model in ("bm25", "dense"):
        path = results / "metrics" / "field-test" / "history.rep0" / f"{model}.tsv"
        write_per_query_tsv({}, dict.fromkeys(MEASURES, math.nan), path)
    status = main(
        ["--results", str(results), "--setups", "field", "--models", "bm25", "dense",
         "--fields", "Art", "Biology", "History", "--config-json", "{}", "--output-dir",
         str(results / "tables"), "--baseline", "bm25", "--seed", "1"]
    )  # fmt: skip
    assert status == 0
    tables = results / "tables"
    header, rows = read_tsv(tables / "table2_field_level_map.tsv")
    assert header == ["model", "Art", "Biology", "History", "AVG"]
    assert rows["bm25"][:2] + rows["bm25"][3:] == pytest.approx([10.0, 50.0, 30.0])
    assert math.isnan(rows["bm25"][2])
    markdown = (tables / "table2_field_level_map.md").read_text()
    assert "| bm25 | 10.0 | 50.0 | — | 30.0 |" in markdown
    assert "— no queries: sampling found none for History" in markdown
    pvalues = (tables / "table2_field_level_map_pvalues.tsv").read_text()
    assert "History" not in pvalues and "Biology" in pvalues


def test_a_field_without_collections_and_a_row_named_twice_are_errors(results, capsys):
    def tables(*models_and_fields: str) -> int:
        return main(
            ["--results", str(results), "--setups", "field", *models_and_fields,
             "--config-json", "{}", "--output-dir", str(results / "tables"), "--seed", "1"]
        )  # fmt: skip

    assert tables("--models", "bm25", "dense", "--fields", "Art", "Biologgy") == 2
    assert "--fields ['Biologgy']: no field-level collection" in capsys.readouterr().err
    assert tables("--models", "bm25", "bm25", "--fields", "Art", "Biology") == 2
    assert "--models names ['bm25'] more than once" in capsys.readouterr().err
    assert not (results / "tables").exists()


def test_missing_metrics_file_is_a_clear_error(results, capsys):
    (results / "metrics" / "field-test" / "art.rep0" / "dense.tsv").unlink()
    status = main(
        ["--results", str(results), "--setups", "field", "--models", "bm25", "dense",
         "--fields", "Art", "Biology", "--config-json", "{}", "--output-dir",
         str(results / "tables"), "--baseline", "none", "--seed", "1"]
    )  # fmt: skip
    assert status == 2
    assert "dense.tsv" in capsys.readouterr().err


# --- significance against a baseline ---------------------------------------------------

QUERIES = [f"q{i:02d}" for i in range(12)]
NOISE = [0.05, -0.03, 0.08, -0.06, 0.02, -0.01, 0.07, -0.04, 0.03, -0.08, 0.06, -0.02]


def write_varied(results, setup, collections, models):
    """collections: (group, rep, pool size, queries); models: name -> offset of every
    query's value from bm25's (a float, or a per-query list)."""
    listed = []
    for group, rep, size, queries in collections:
        listed.append(CollectionInfo(setup, "test", group, rep, len(queries), size, size))
        for model, offset in models.items():
            per_query = {}
            for qid in queries:
                i = QUERIES.index(qid)
                shift = offset[i] if isinstance(offset, list) else offset
                value = 0.3 + 0.02 * i + 0.01 * rep + shift
                per_query[qid] = {m: value for m in MEASURES}
            mean = {m: sum(v[m] for v in per_query.values()) / len(per_query) for m in MEASURES}
            path = results / "metrics" / f"{setup}-test" / f"{group}.rep{rep}" / f"{model}.tsv"
            write_per_query_tsv(per_query, mean, path)
    write_collections(listed, results / "samples" / f"{setup}-test")


@pytest.fixture
def varied(tmp_path):
    models = {"bm25": 0.0, "better": [0.1 + n for n in NOISE], "same": NOISE}
    write_varied(
        tmp_path,
        "dataset",
        [("pool-100", 0, 100, QUERIES), ("pool-100", 1, 100, QUERIES)],
        models,
    )
    write_varied(
        tmp_path,
        "field",
        [("art", 0, 50, QUERIES[:4]), ("biology", 0, 50, QUERIES[4:])],
        models,
    )
    return tmp_path


def run_tested(results, *extra, models=("bm25", "better", "same")):
    status = main(
        ["--results", str(results), "--setups", "dataset", "field", "--models", *models,
         "--fields", "Art", "Biology", "--config-json", "{}", "--output-dir",
         str(results / "tables"), "--baseline", "bm25", "--permutations", "500",
         "--seed", "7", *extra]
    )  # fmt: skip
    assert status == 0
    return results / "tables"


def read_pvalues(path):
    header, *rows = (line.split("\t") for line in path.read_text().splitlines())
    return [dict(zip(header, row, strict=True)) for row in rows]


def markdown_cells(path):
    """(model, column) -> cell text of a Markdown table written by write_table."""
    lines = [line for line in path.read_text().splitlines() if line.startswith("| ")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    cells = {}
    for line in lines[1:]:
        row = [cell.strip() for cell in line.strip("|").split("|")]
        cells.update(
            {(row[0], column): cell for column, cell in zip(header[1:], row[1:], strict=True)}
        )
    return cells


def test_pvalues_and_markers_of_every_table(varied):
    tables = run_tested(varied)
    for name in ("table1_dataset_level", "table2_field_level_map", "table7_field_level_ndcg",
                 "table8_field_level_recall"):  # fmt: skip
        pvalues = read_pvalues(tables / f"{name}_pvalues.tsv")
        header, rows = read_tsv(tables / f"{name}.tsv")
        assert [(p["column"], p["model"]) for p in pvalues] == [
            (column, model) for column in header[1:] for model in ("better", "same")
        ]
        cells = markdown_cells(tables / f"{name}.md")
        for p in pvalues:
            assert p["baseline"] == "bm25"
            significant = float(p["p_perm_holm"]) < 0.05
            assert p["significant"] == str(int(significant))
            assert cells[(p["model"], p["column"])].endswith("†") == significant
            # The tested difference is the table's.
            column = header.index(p["column"]) - 1
            expected = rows[p["model"]][column] - rows["bm25"][column]
            assert float(p["mean_diff"]) == pytest.approx(expected, abs=1e-5)
        assert not any(cells[("bm25", column)].endswith("†") for column in header[1:])
        assert {p["model"] for p in pvalues if p["significant"] == "1"} == {"better"}
        markdown = (tables / f"{name}.md").read_text()
        assert "† p < 0.05 against `bm25`" in markdown and "Holm" in markdown
        assert f"`{name}_pvalues.tsv`" in markdown


def test_pairing_units_of_the_columns(varied):
    tables = run_tested(varied)
    table1 = read_pvalues(tables / "table1_dataset_level_pvalues.tsv")
    # Dataset level: one unit per query (its mean over the two repetitions).
    assert {p["n_units"] for p in table1} == {"12"}
    table2 = {
        (p["column"], p["model"]): p
        for p in read_pvalues(tables / "table2_field_level_map_pvalues.tsv")
    }
    assert table2[("Art", "better")]["n_units"] == "4"
    assert table2[("Biology", "better")]["n_units"] == "8"
    # AVG: every (field, query), weighted so the difference is the mean over fields.
    assert table2[("AVG", "better")]["n_units"] == "12"
    # 4 queries: 16 sign flips, enumerated: the smallest p is 2/16.
    assert float(table2[("Art", "better")]["p_perm"]) == pytest.approx(2 / 16)


def test_significance_is_deterministic_and_seeded(varied):
    first = {p.name: p.read_bytes() for p in run_tested(varied).iterdir()}
    second = {p.name: p.read_bytes() for p in run_tested(varied).iterdir()}
    assert first == second
    other = {p.name: p.read_bytes() for p in run_tested(varied, "--seed", "8").iterdir()}
    assert other["table1_dataset_level.tsv"] == first["table1_dataset_level.tsv"]
    assert other["table1_dataset_level_pvalues.tsv"] != first["table1_dataset_level_pvalues.tsv"]


def test_without_the_baseline_tables_have_no_pvalues(varied, caplog):
    tables = run_tested(varied)
    assert (tables / "table1_dataset_level_pvalues.tsv").exists()
    tables = run_tested(varied, models=("better", "same"))
    assert not list(tables.glob("*_pvalues.tsv"))  # the earlier run's are removed
    assert "†" not in (tables / "table1_dataset_level.md").read_text()
    assert "baseline 'bm25' is not among the models" in caplog.text


def test_misaligned_queries_are_an_error(varied, capsys):
    path = varied / "metrics" / "dataset-test" / "pool-100.rep1" / "same.tsv"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(line for line in lines if not line.startswith("q03\t")))
    status = main(
        ["--results", str(varied), "--setups", "dataset", "--models", "bm25", "same",
         "--config-json", "{}", "--output-dir", str(varied / "tables"), "--baseline", "bm25",
         "--seed", "1"]
    )  # fmt: skip
    assert status == 2
    assert "pool-100.rep1: model 'same' and baseline 'bm25' have different queries" in (
        capsys.readouterr().err
    )
