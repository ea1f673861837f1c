"""Metrics: hand-computed values on small runs, citeval's own rules, and the TSV contract."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from citeval.errors import InputDataError
from citeval.metrics import (
    evaluate,
    mean_over_queries,
    measures_for,
    parse_measure,
    read_per_query_tsv,
)
from citeval.metrics.cli import main
from citeval.trec import read_run, write_qrels, write_run

ALL = measures_for([1, 2, 5])


def test_hand_computed_values() -> None:
    # Ranking d1, d2, d3, d4; relevant d2 (rank 2), d4 (rank 4) and d9 (never retrieved).
    run = {"q": {"d1": 3.0, "d2": 2.0, "d3": 1.0, "d4": 0.5}}
    qrels = {"q": {"d2": 1, "d4": 1, "d9": 1, "d3": 0}}
    values = evaluate(run, qrels, ALL)["q"]
    expected = {
        "map": (1 / 2 + 2 / 4) / 3,
        "recip_rank": 1 / 2,
        "ndcg": (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3) + 1 / 2),
        "P_1": 0.0,
        "recall_1": 0.0,
        "f1_1": 0.0,
        "ndcg_cut_1": 0.0,
        "P_2": 1 / 2,
        "recall_2": 1 / 3,
        "f1_2": 2 / 5,
        "ndcg_cut_2": (1 / math.log2(3)) / (1 + 1 / math.log2(3)),
        # Fewer than k retrieved: P@k still divides by k.
        "P_5": 2 / 5,
        "recall_5": 2 / 3,
        "f1_5": 1 / 2,
        "ndcg_cut_5": (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3) + 1 / 2),
    }
    assert list(values) == ALL
    assert values == pytest.approx(expected, abs=1e-12)


def test_graded_and_negative_judgements() -> None:
    run = {"graded": {"d2": 2.0, "d1": 1.0}, "negative": {"d1": 2.0, "d2": 1.0}}
    qrels = {"graded": {"d1": 2, "d2": 1}, "negative": {"d1": -1, "d2": 1}}
    values = evaluate(run, qrels, ["ndcg", "map", "P_1"])
    # Gain is the relevance level; the ideal ranking puts d1 (gain 2) first.
    assert values["graded"]["ndcg"] == pytest.approx(
        (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))
    )
    assert values["graded"]["map"] == 1.0
    # A negative judgement is not relevant and adds no gain.
    assert values["negative"]["map"] == pytest.approx(1 / 2)
    assert values["negative"]["ndcg"] == pytest.approx(1 / math.log2(3))
    assert values["negative"]["P_1"] == 0.0


def test_f1_is_derived_from_precision_and_recall() -> None:
    run = {"q": {f"d{i}": float(10 - i) for i in range(10)}}
    qrels = {"q": {"d0": 1, "d4": 1, "d20": 1, "d21": 1}}
    values = evaluate(run, qrels, ["P_5", "recall_5", "f1_5", "f1_1", "f1_3"])["q"]
    p, r = values["P_5"], values["recall_5"]
    assert (p, r) == (2 / 5, 2 / 4)
    assert values["f1_5"] == 2.0 * p * r / (p + r)
    assert values["f1_1"] == pytest.approx(2 * 1 * (1 / 4) / (1 + 1 / 4))
    assert values["f1_3"] == pytest.approx(2 * (1 / 3) * (1 / 4) / (1 / 3 + 1 / 4))


def test_ties_break_by_docid_descending_as_strings() -> None:
    # Equal scores: "9" ranks above "10" because "9" > "10" as strings.
    run = {"q": {"10": 1.0, "9": 1.0}}
    assert evaluate(run, {"q": {"9": 1}}, ["P_1"])["q"]["P_1"] == 1.0
    assert evaluate(run, {"q": {"10": 1}}, ["P_1"])["q"]["P_1"] == 0.0
    assert evaluate(run, {"q": {"10": 1}}, ["recip_rank"])["q"]["recip_rank"] == 0.5


def test_scores_closer_than_float32_keep_their_float64_order() -> None:
    # Equal as float32, so trec_eval alone would tie them and put "b" first.
    run = {"q": {"a": 1.0 + 1e-12, "b": 1.0}}
    assert evaluate(run, {"q": {"a": 1}}, ["P_1"])["q"]["P_1"] == 1.0
    assert evaluate(run, {"q": {"b": 1}}, ["P_1"])["q"]["P_1"] == 0.0


def test_written_run_evaluates_like_the_in_memory_run(tmp_path: Path) -> None:
    run = {
        "q1": {"d1": 0.1, "d2": 0.1, "d3": 1e-300, "d4": -2.5, "d10": 0.1},
        "q2": {"x": float(np.float32(0.3)), "y": 0.3},
    }
    qrels = {"q1": {"d10": 1, "d4": 1}, "q2": {"y": 1}}
    write_run(run, tmp_path / "r.trec", tag="t")
    back = read_run(tmp_path / "r.trec")
    assert evaluate(back, qrels, ALL) == evaluate(run, qrels, ALL)
    # d2 > d10 > d1 among the 0.1 ties.
    assert evaluate(run, qrels, ["recip_rank"])["q1"]["recip_rank"] == 1 / 2


def test_queries_that_score_zero() -> None:
    run = {
        "empty": {},  # in the run with no documents
        "none-relevant": {"a": 1.0, "b": 0.5},  # nothing relevant retrieved
        "zero-rel": {"a": 1.0},  # judged, but nothing relevant in the qrels
        "negative-only": {},  # no documents and only a negative judgement
        "unjudged": {"a": 1.0},  # in the qrels without any judgement
        "only-in-run": {"a": 1.0},
    }
    qrels = {
        "empty": {"a": 1},
        "none-relevant": {"z": 1},
        "zero-rel": {"a": 0},
        "negative-only": {"a": -1},
        "unjudged": {},
        "only-in-qrels": {"a": 1},
    }
    values = evaluate(run, qrels, ALL)
    assert list(values) == sorted(run.keys() & qrels.keys())
    for row in values.values():
        assert row == dict.fromkeys(ALL, 0.0)


def test_runs_longer_than_1000_are_not_truncated() -> None:
    run = {"q": {f"d{i:05d}": -float(i) for i in range(1500)}}
    qrels = {"q": {"d01200": 1, "d00003": 2}}
    values = evaluate(run, qrels, ["recall_1500", "recall_1000", "map"])["q"]
    assert values["recall_1500"] == 1.0
    assert values["recall_1000"] == 0.5
    assert values["map"] == pytest.approx((1 / 4 + 2 / 1201) / 2)


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="NaN"):
        evaluate({"q": {"a": math.nan}}, {"q": {"a": 1}}, ["map"])
    with pytest.raises(TypeError):
        evaluate({"q": {"a": 1.0}}, {"q": {"a": 1.0}}, ["map"])  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="unknown measure"):
        evaluate({"q": {"a": 1.0}}, {"q": {"a": 1}}, ["mrr"])
    # numpy integers are integers.
    values = evaluate({"q": {"a": 1.0}}, {"q": {"a": np.int64(1)}}, ["map"])  # type: ignore[dict-item]
    assert values == {"q": {"map": 1.0}}


def test_mean_over_queries() -> None:
    per_query = {"a": {"map": 0.5, "P_1": 1.0}, "b": {"map": 0.25, "P_1": 0.0}}
    assert mean_over_queries(per_query) == {"map": 0.375, "P_1": 0.5}
    assert mean_over_queries(per_query, queries=["a", "c"]) == {"map": 0.5, "P_1": 1.0}
    assert mean_over_queries(per_query, queries=["a", "b", "c", "d"], missing_as_zero=True) == {
        "map": 0.1875,
        "P_1": 0.25,
    }
    assert math.isnan(mean_over_queries(per_query, queries=["c"], measures=["map"])["map"])
    with pytest.raises(ValueError, match="no value"):
        mean_over_queries(per_query, measures=["ndcg"])
    # fsum: the mean does not depend on the order of the queries.
    tiny = {str(i): {"m": v} for i, v in enumerate([1e16, 1.0, -1e16, 1.0])}
    assert mean_over_queries(tiny) == {"m": 0.5}


def test_measure_names() -> None:
    assert measures_for([30, 10, 30]) == [
        "map",
        "ndcg",
        "recip_rank",
        "recall_10",
        "P_10",
        "f1_10",
        "ndcg_cut_10",
        "recall_30",
        "P_30",
        "f1_30",
        "ndcg_cut_30",
    ]
    assert str(parse_measure("ndcg_cut_5")) == "ndcg_cut_5"
    for bad in ("P_0", "P_05", "p_5", "mrr", "recall", "ndcg_cut_x"):
        with pytest.raises(ValueError, match="unknown measure"):
            parse_measure(bad)


# q1 ties d2 and d3; the rank column says d2 first, the docid order puts d3 first, so its
# relevant documents are at ranks 1 and 3. q2 has no relevant document, q3 no run, x no qrels.
RUN_TEXT = """\
q1 Q0 d1 1 2.0 t
q1 Q0 d2 2 1.0 t
q1 Q0 d3 3 1.0 t
q2 Q0 d2 1 5.0 t
x Q0 d1 1 1.0 t
"""
QRELS_TEXT = """\
q1 0 d1 1
q1 0 d2 1
q2 0 d2 0
q3 0 d1 1
"""
Q1_ROWS = """\
q1\tP_2\t0.5000000000
q1\tf1_2\t0.5000000000
q1\tmap\t0.8333333333
q1\tndcg\t0.9197207891
q1\tndcg_cut_2\t0.6131471928
q1\trecall_2\t0.5000000000
q1\trecip_rank\t1.0000000000
"""
Q2_ROWS = """\
q2\tP_2\t0.0000000000
q2\tf1_2\t0.0000000000
q2\tmap\t0.0000000000
q2\tndcg\t0.0000000000
q2\tndcg_cut_2\t0.0000000000
q2\trecall_2\t0.0000000000
q2\trecip_rank\t0.0000000000
"""


def run_cli(tmp_path: Path, *extra: str) -> tuple[int, Path]:
    (tmp_path / "run.trec").write_text(RUN_TEXT)
    (tmp_path / "q.qrels").write_text(QRELS_TEXT)
    output = tmp_path / "out" / "metrics.tsv"
    args = ["--run", str(tmp_path / "run.trec"), "--qrels", str(tmp_path / "q.qrels")]
    status = main([*args, "--cutoffs", "2", *extra, "--output", str(output)])
    return status, output


def test_cli_writes_the_per_query_tsv(tmp_path: Path) -> None:
    status, output = run_cli(tmp_path)
    assert status == 0
    # q3 is left out of the mean: the mean is over q1 and q2.
    assert output.read_text() == (
        "query_id\tmeasure\tvalue\n" + Q1_ROWS + Q2_ROWS + "all\tP_2\t0.2500000000\n"
        "all\tf1_2\t0.2500000000\n"
        "all\tmap\t0.4166666667\n"
        "all\tndcg\t0.4598603946\n"
        "all\tndcg_cut_2\t0.3065735964\n"
        "all\trecall_2\t0.2500000000\n"
        "all\trecip_rank\t0.5000000000\n"
    )
    table = read_per_query_tsv(output)
    assert table["all"]["map"] == pytest.approx(5 / 12, abs=1e-10)


def test_cli_missing_as_zero(tmp_path: Path) -> None:
    status, output = run_cli(tmp_path, "--missing-as-zero")
    assert status == 0
    q3_rows = Q2_ROWS.replace("q2", "q3")
    assert output.read_text() == (
        "query_id\tmeasure\tvalue\n" + Q1_ROWS + Q2_ROWS + q3_rows + "all\tP_2\t0.1666666667\n"
        "all\tf1_2\t0.1666666667\n"
        "all\tmap\t0.2777777778\n"
        "all\tndcg\t0.3065735964\n"
        "all\tndcg_cut_2\t0.2043823976\n"
        "all\trecall_2\t0.1666666667\n"
        "all\trecip_rank\t0.3333333333\n"
    )


def test_cli_reports_bad_run_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_path = tmp_path / "run.trec"
    write_run({"q1": {"d1": 1.0, "d2": 0.5}}, run_path, tag="t")
    write_qrels({"q1": {"d1": 1}}, tmp_path / "q.qrels")
    with run_path.open("a") as handle:
        handle.write("q1 Q0 broken\n")
    output = tmp_path / "metrics.tsv"
    args = ["--run", str(run_path), "--qrels", str(tmp_path / "q.qrels"), "--cutoffs", "10"]
    assert main([*args, "--output", str(output)]) == 2
    assert f"{run_path}:3" in capsys.readouterr().err
    assert not output.exists()


def test_cli_rejects_disjoint_run_and_qrels(tmp_path: Path) -> None:
    write_run({"a": {"1": 1.0}}, tmp_path / "r.trec", tag="t")
    write_qrels({"b": {"1": 1}}, tmp_path / "q.qrels")
    args = ["--run", str(tmp_path / "r.trec"), "--qrels", str(tmp_path / "q.qrels")]
    assert main([*args, "--cutoffs", "1", "--output", str(tmp_path / "m.tsv")]) == 2
    assert not (tmp_path / "m.tsv").exists()


def test_cli_rejects_a_query_named_all(tmp_path: Path) -> None:
    write_run({"all": {"1": 1.0}}, tmp_path / "r.trec", tag="t")
    write_qrels({"all": {"1": 1}}, tmp_path / "q.qrels")
    args = ["--run", str(tmp_path / "r.trec"), "--qrels", str(tmp_path / "q.qrels")]
    assert main([*args, "--cutoffs", "1", "--output", str(tmp_path / "m.tsv")]) == 2


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("query_id\tvalue\n", 1, "expected header"),
        ("query_id\tmeasure\tvalue\nq\tmap\n", 2, "3 tab-separated"),
        ("query_id\tmeasure\tvalue\nq\tmap\tx\n", 2, "not a number"),
        ("query_id\tmeasure\tvalue\nq\tmap\t0.1\nq\tmap\t0.2\n", 3, "duplicate"),
    ],
)
def test_read_per_query_tsv_errors(tmp_path: Path, text: str, line: int, message: str) -> None:
    path = tmp_path / "m.tsv"
    path.write_text(text)
    with pytest.raises(InputDataError, match=message) as info:
        read_per_query_tsv(path)
    assert f"{path}:{line}" in str(info.value)


def test_cli_collection_without_queries_gives_nan_means(tmp_path: Path) -> None:
    """A collection that sampling left without queries: empty qrels and run, NaN means."""
    write_run({}, tmp_path / "run.trec", tag="t")
    write_qrels({}, tmp_path / "q.qrels")
    output = tmp_path / "metrics.tsv"
    args = ["--run", str(tmp_path / "run.trec"), "--qrels", str(tmp_path / "q.qrels")]
    assert main([*args, "--cutoffs", "2", "--output", str(output)]) == 0
    table = read_per_query_tsv(output)
    assert list(table) == ["all"] and all(math.isnan(v) for v in table["all"].values())
    assert sorted(table["all"]) == sorted(measures_for([2]))


def test_cli_run_without_the_qrels_queries_is_still_an_error(tmp_path: Path) -> None:
    write_run({}, tmp_path / "run.trec", tag="t")
    write_qrels({"q1": {"d1": 1}}, tmp_path / "q.qrels")
    args = ["--run", str(tmp_path / "run.trec"), "--qrels", str(tmp_path / "q.qrels")]
    assert main([*args, "--cutoffs", "2", "--output", str(tmp_path / "m.tsv")]) == 2
