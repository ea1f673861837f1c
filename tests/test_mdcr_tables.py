"""MDCR Tables 3 and 4 with per-query significance tests against a baseline."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from citeval.errors import InputDataError
from citeval.mdcr.cli import main
from citeval.mdcr.evaluate import (
    TSV_COLUMNS,
    evaluate_benchmark,
    evaluate_queries,
    format_rows_tsv,
)
from citeval.mdcr.formats import write_benchmark, write_scores
from citeval.mdcr.tables import read_queries_tsv, read_rows_tsv

# Two fields of unequal size (12 and 5 queries), so that AVG's weighting matters.
FIELDS = {"Art": 12, "Biology": 5}


def benchmark():
    fields = {}
    for name, count in FIELDS.items():
        fields[name] = {
            f"{name[0]}{q}": {
                "true": [f"{name[0]}{q}t{i}" for i in range(2)],
                "bm25": [f"{name[0]}{q}b{i}" for i in range(3)],
                "random": [f"{name[0]}{q}r{i}" for i in range(3)],
            }
            for q in range(count)
        }
    return fields


def scores(seed, boost):
    """Random scores; ``boost`` is added to every positive's."""
    rng = np.random.default_rng(seed)
    result = {}
    for queries in benchmark().values():
        for qid, candidates in queries.items():
            for kind, ids in candidates.items():
                for c in ids:
                    result[f"{qid}_{c}"] = float(rng.random()) + (boost if kind == "true" else 0)
    return result


@pytest.fixture
def evaluated(tmp_path: Path) -> Path:
    write_benchmark(benchmark(), tmp_path / "b.json")
    for model, seed, boost in (("bm25", 1, 0.0), ("better", 2, 0.6), ("same", 3, 0.0)):
        write_scores(scores(seed, boost), tmp_path / f"{model}.json")
        args = ["evaluate", "--benchmark", str(tmp_path / "b.json"), "--scores",
                str(tmp_path / f"{model}.json"), "--output", str(tmp_path / f"{model}.tsv"),
                "--per-query-output", str(tmp_path / f"{model}.per_query.tsv")]  # fmt: skip
        assert main(args) == 0
    return tmp_path


def run_tables(directory: Path, *extra: str, models=("bm25", "better", "same")) -> int:
    if "--seed" not in extra:
        extra = (*extra, "--seed", "3")
    return main(
        ["tables", "--evaluations", *(f"{m}={directory / m}.tsv" for m in models),
         "--per-query", *(f"{m}={directory / m}.per_query.tsv" for m in models),
         "--output-dir", str(directory / "tables"), *extra]
    )  # fmt: skip


def read_tsv(path: Path) -> list[dict[str, str]]:
    header, *rows = (line.split("\t") for line in path.read_text().splitlines())
    return [dict(zip(header, row, strict=True)) for row in rows]


def test_per_query_output_leaves_the_evaluation_unchanged(evaluated: Path) -> None:
    from citeval.mdcr.formats import read_benchmark, read_scores

    bench = read_benchmark(evaluated / "b.json")
    bm25 = read_scores(evaluated / "bm25.json")
    assert (evaluated / "bm25.tsv").read_text() == format_rows_tsv(evaluate_benchmark(bench, bm25))
    per_query = read_queries_tsv(evaluated / "bm25.per_query.tsv")
    expected = evaluate_queries(bench, bm25)
    assert list(per_query) == list(expected)
    for key, values in expected.items():
        assert list(per_query[key]) == sorted(values)
        for qid, row in values.items():
            assert per_query[key][qid] == pytest.approx({m: 100 * v for m, v in row.items()})
    # Each field's row is the mean of its per-query values.
    for row in read_rows_tsv(evaluated / "bm25.tsv"):
        if row.field != "AVG":
            values = per_query[(row.candidates, row.field)]
            assert row.values["map"] == pytest.approx(
                sum(v["map"] for v in values.values()) / len(values), abs=1e-8
            )


def test_tables_mark_what_the_tests_find(evaluated: Path) -> None:
    assert run_tables(evaluated, "--baseline", "bm25", "--permutations", "2000", "--seed", "3") == 0
    tables = evaluated / "tables"
    for name in ("table3_mdcr", "table4_mdcr_types"):
        table = {row["model"]: row for row in read_tsv(tables / f"{name}.tsv")}
        pvalues = read_tsv(tables / f"{name}_pvalues.tsv")
        columns = [c for c in table["bm25"] if c != "model"]
        assert [(p["column"], p["model"]) for p in pvalues] == [
            (c, m) for c in columns for m in ("better", "same")
        ]
        markdown = (tables / f"{name}.md").read_text()
        rows = {
            line.split("|")[1].strip(): [c.strip() for c in line.strip().strip("|").split("|")[1:]]
            for line in markdown.splitlines()
            if line.startswith("| ") and not line.startswith("| model")
        }
        for p in pvalues:
            significant = float(p["p_perm_holm"]) < 0.05
            assert p["significant"] == str(int(significant))
            assert rows[p["model"]][columns.index(p["column"])].endswith("†") == significant
            # Field columns and AVG columns (weighted over unequal fields) alike: the
            # tested difference is the table's.
            expected = float(table[p["model"]][p["column"]]) - float(table["bm25"][p["column"]])
            assert float(p["mean_diff"]) == pytest.approx(expected, abs=1e-5)
        assert not any(cell.endswith("†") for cell in rows["bm25"])
        assert any(p["significant"] == "1" for p in pvalues if p["model"] == "better")
        assert "Holm" in markdown and f"`{name}_pvalues.tsv`" in markdown
    table3 = {(p["column"], p["model"]): p for p in read_tsv(tables / "table3_mdcr_pvalues.tsv")}
    assert table3[("Art MAP", "better")]["n_units"] == "12"
    assert table3[("Biology MAP", "better")]["n_units"] == "5"
    assert table3[("AVG MAP", "better")]["n_units"] == "17"
    # Deterministic: the same arguments give the same bytes.
    first = {p.name: p.read_bytes() for p in tables.iterdir()}
    assert run_tables(evaluated, "--baseline", "bm25", "--permutations", "2000", "--seed", "3") == 0
    assert first == {p.name: p.read_bytes() for p in tables.iterdir()}


def test_without_baseline_or_per_query_files_no_pvalues(
    evaluated: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert run_tables(evaluated, "--baseline", "scincl") == 0
    assert not list((evaluated / "tables").glob("*_pvalues.tsv"))
    assert "baseline 'scincl' is not among the models" in caplog.text
    assert run_tables(evaluated, "--baseline", "none") == 0  # no tests
    assert not list((evaluated / "tables").glob("*_pvalues.tsv"))
    assert "†" not in (evaluated / "tables" / "table3_mdcr.md").read_text()


def test_per_query_files_must_match_the_evaluations(
    evaluated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A per-query file of another model: its means do not match the evaluation TSV.
    (evaluated / "same.per_query.tsv").write_bytes(
        (evaluated / "better.per_query.tsv").read_bytes()
    )
    assert run_tables(evaluated, "--baseline", "bm25") == 2
    assert "do not match its evaluation TSV" in capsys.readouterr().err


def test_a_short_or_non_numeric_evaluation_row_is_named_by_line(tmp_path: Path) -> None:
    header = "\t".join(TSV_COLUMNS)
    good = "\t".join(["all", "Art", "2"] + ["50.0"] * (len(TSV_COLUMNS) - 3))
    for bad in ("all\tArt\t2", good.replace("50.0", "high", 1)):
        path = tmp_path / "eval.tsv"
        path.write_text(f"{header}\n{good}\n{bad}\n")
        with pytest.raises(InputDataError, match=r"eval.tsv:3: not an evaluation TSV row"):
            read_rows_tsv(path)
