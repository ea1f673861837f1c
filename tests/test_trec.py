"""TREC run/qrels I/O: trec_eval's ranking order, exact round-trips, stable bytes, errors."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from citeval.errors import InputDataError
from citeval.trec import (
    format_run,
    rank_documents,
    read_qrels,
    read_run,
    write_qrels,
    write_run,
)


def test_rank_documents_orders_by_score_then_docid_descending_as_strings() -> None:
    scores = {"9": 1.0, "10": 1.0, "100": 1.0, "a": 2.0, "b": 0.5, "B": 0.5}
    ranked = rank_documents(scores)
    # "9" > "100" > "10" as strings; "b" > "B" by code point.
    assert ranked == [
        ("a", 2.0),
        ("9", 1.0),
        ("100", 1.0),
        ("10", 1.0),
        ("b", 0.5),
        ("B", 0.5),
    ]


@pytest.mark.parametrize("seed", range(5))
def test_rank_documents_top_k_is_prefix_of_full_ranking(seed: int) -> None:
    rng = random.Random(seed)
    scores = {str(rng.randrange(10_000)): float(rng.randrange(5)) for _ in range(300)}
    full = rank_documents(scores)
    assert len(full) == len(scores)
    for k in (0, 1, 7, 50, len(scores), len(scores) + 10):
        assert rank_documents(scores, k) == full[:k]


def test_rank_documents_rejects_nan_and_negative_k() -> None:
    with pytest.raises(ValueError, match="NaN"):
        rank_documents({"a": 1.0, "b": float("nan")})
    with pytest.raises(ValueError, match="k must be"):
        rank_documents({"a": 1.0}, k=-1)


def test_write_run_layout(tmp_path: Path) -> None:
    run = {"q2": {"d1": 0.5, "d2": 3.0}, "q10": {"x": 1.0, "y": 1.0}}
    path = tmp_path / "runs" / "model.trec"
    write_run(run, path, tag="bm25")
    assert path.read_text() == (
        "q10 Q0 y 1 1.0 bm25\nq10 Q0 x 2 1.0 bm25\nq2 Q0 d2 1 3.0 bm25\nq2 Q0 d1 2 0.5 bm25\n"
    )
    write_run(run, path, tag="bm25", k=1)
    assert path.read_text() == "q10 Q0 y 1 1.0 bm25\nq2 Q0 d2 1 3.0 bm25\n"


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_run_round_trip_is_exact(tmp_path: Path, dtype: type) -> None:
    rng = np.random.default_rng(7)
    run = {
        f"q{q}": {
            f"d{d}": score
            for d, score in zip(
                rng.choice(10_000, size=60, replace=False),
                rng.normal(size=60).astype(dtype),
                strict=True,
            )
        }
        for q in range(20)
    }
    run["q0"]["tie1"] = run["q0"]["tie2"] = dtype(0.25)
    path = tmp_path / "run.trec"
    write_run(run, path, tag="t")
    back = read_run(path)
    assert back == {q: {d: float(s) for d, s in docs.items()} for q, docs in run.items()}
    for qid in run:
        assert rank_documents(back[qid]) == rank_documents(run[qid])
    # Reading and writing again changes nothing.
    again = tmp_path / "again.trec"
    write_run(back, again, tag="t")
    assert again.read_bytes() == path.read_bytes()


def test_run_bytes_do_not_depend_on_insertion_order(tmp_path: Path) -> None:
    rng = random.Random(3)
    items = [
        (f"q{rng.randrange(50)}", str(rng.randrange(1000)), rng.choice([0.1, 1 / 3, 2.0, -1e-9]))
        for _ in range(500)
    ]
    forward: dict[str, dict[str, float]] = {}
    for qid, doc, score in items:
        forward.setdefault(qid, {})[doc] = score
    backward: dict[str, dict[str, float]] = {}
    for qid in reversed(list(forward)):
        backward[qid] = dict(reversed(list(forward[qid].items())))
    write_run(forward, tmp_path / "a.trec", tag="x", k=5)
    write_run(backward, tmp_path / "b.trec", tag="x", k=5)
    assert (tmp_path / "a.trec").read_bytes() == (tmp_path / "b.trec").read_bytes()
    assert format_run(forward, "x", 5) == (tmp_path / "a.trec").read_text()


def test_write_run_rejects_whitespace_in_ids(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="document id"):
        write_run({"q": {"a b": 1.0}}, tmp_path / "r.trec", tag="t")
    with pytest.raises(ValueError, match="run tag"):
        write_run({"q": {"a": 1.0}}, tmp_path / "r.trec", tag="my tag")
    assert not (tmp_path / "r.trec").exists()


def test_read_run_skips_blank_lines_and_ignores_rank_column(tmp_path: Path) -> None:
    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 a 5 0.5 t\n\nq1 0 b 1 1e-3 t\n  \nq2 Q0 c 1 -inf t\n")
    assert read_run(path) == {"q1": {"a": 0.5, "b": 0.001}, "q2": {"c": float("-inf")}}


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("q1 Q0 a 1 0.5 t\nq1 Q0 b 2 0.4\n", 2, "expected 6 fields"),
        ("q1 Q0 a one 0.5 t\n", 1, "rank is not an integer"),
        ("q1 Q0 a 1 0.5 t\n\nq1 Q0 b 2 high t\n", 3, "score is not a number"),
        ("q1 Q0 a 1 nan t\n", 1, "score is not a number"),
        ("q1 Q0 a 1 0.5 t\nq2 Q0 a 1 0.5 t\nq1 Q0 a 2 0.1 t\n", 3, "first at line 1"),
    ],
)
def test_read_run_errors_name_file_and_line(
    tmp_path: Path, text: str, line: int, message: str
) -> None:
    path = tmp_path / "bad.trec"
    path.write_text(text)
    with pytest.raises(InputDataError, match=message) as info:
        read_run(path)
    assert info.value.line == line
    assert f"{path}:{line}" in str(info.value)


def test_read_run_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputDataError, match="cannot read") as info:
        read_run(tmp_path / "absent.trec")
    assert str(tmp_path / "absent.trec") in str(info.value)


def test_qrels_round_trip_and_layout(tmp_path: Path) -> None:
    qrels = {"q2": {"b": 1, "a": 0}, "q10": {"z": 2, "10": 1, "9": -1}}
    path = tmp_path / "x.qrels"
    write_qrels(qrels, path)
    assert path.read_text() == ("q10 0 10 1\nq10 0 9 -1\nq10 0 z 2\nq2 0 a 0\nq2 0 b 1\n")
    assert read_qrels(path) == qrels
    reordered = {q: dict(reversed(list(d.items()))) for q, d in reversed(list(qrels.items()))}
    write_qrels(reordered, tmp_path / "y.qrels")
    assert (tmp_path / "y.qrels").read_bytes() == path.read_bytes()


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("q1 0 a 1\nq1 0 b\n", 2, "expected 4 fields"),
        ("q1 0 a 1\nq1 0 b 0.5\n", 2, "relevance is not an integer"),
        ("q1 0 a 1\nq1 0 a 1\n", 2, "duplicate judgement"),
    ],
)
def test_read_qrels_errors_name_file_and_line(
    tmp_path: Path, text: str, line: int, message: str
) -> None:
    path = tmp_path / "bad.qrels"
    path.write_text(text)
    with pytest.raises(InputDataError, match=message) as info:
        read_qrels(path)
    assert f"{path}:{line}" in str(info.value)
