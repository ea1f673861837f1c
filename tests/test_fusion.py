"""Reciprocal rank fusion on hand-computed examples, and its command line."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from pathlib import Path

import pytest

from citeval.errors import ConfigError
from citeval.fusion import cli as fusion
from citeval.fusion import reciprocal_rank_fusion
from citeval.trec import read_run, write_run


def test_rrf_hand_computed() -> None:
    # Run A ranks a, b, c; run B ranks c, a, d.
    run_a = {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}
    run_b = {"q": {"c": 0.9, "a": 0.5, "d": 0.1}}
    fused = reciprocal_rank_fusion([run_a, run_b], k=60)["q"]
    assert fused == pytest.approx(
        {
            "a": 1 / 61 + 1 / 62,
            "c": 1 / 63 + 1 / 61,
            "b": 1 / 62,
            "d": 1 / 63,
        }
    )
    assert list(fused) == ["a", "c", "b", "d"]


def test_rrf_ranks_follow_trec_tie_order_and_depth() -> None:
    # Tied scores: trec_eval ranks doc ids descending, so "y" is rank 1 and "x" rank 2.
    run_a = {"q": {"x": 1.0, "y": 1.0, "z": 0.0}}
    run_b = {"q": {"x": 5.0}, "other": {"x": 1.0}}
    fused = reciprocal_rank_fusion([run_a, run_b], k=0, depth=2)
    assert fused["q"] == {"x": 1 / 2 + 1 / 1, "y": 1 / 1}
    assert fused["other"] == {"x": 1.0}
    # Equal fused scores come out doc id descending.
    tied = reciprocal_rank_fusion([{"q": {"a": 2.0, "b": 1.0}}, {"q": {"b": 2.0, "a": 1.0}}], k=1)
    assert list(tied["q"]) == ["b", "a"] and tied["q"]["a"] == tied["q"]["b"]


def test_rrf_does_not_depend_on_run_order() -> None:
    runs = [{"q": {f"d{i}": float((i * 7 + j) % 13) for i in range(40)}} for j in range(5)]
    forward = reciprocal_rank_fusion(runs, k=60)
    backward = reciprocal_rank_fusion(runs[::-1], k=60)
    assert forward == backward
    assert list(forward["q"]) == list(backward["q"])


def test_rrf_rejects_bad_parameters() -> None:
    with pytest.raises(ConfigError):
        reciprocal_rank_fusion([{}], k=-1)
    with pytest.raises(ConfigError):
        reciprocal_rank_fusion([{}], k=60, depth=0)


def test_fusion_cli(tmp_path: Path) -> None:
    write_run({"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"e": 1.0}}, tmp_path / "a.trec", "A")
    write_run({"q1": {"c": 0.9, "a": 0.5, "d": 0.1}}, tmp_path / "b.trec", "B")
    out = tmp_path / "fused.trec"
    argv = [
        "--runs",
        str(tmp_path / "a.trec"),
        str(tmp_path / "b.trec"),
        "--k",
        "60",
        "--depth",
        "3",
        "--output",
        str(out),
        "--tag",
        "rrf",
    ]
    assert fusion.main(argv) == 0
    lines = out.read_text().splitlines()
    assert [line.split()[:4] for line in lines] == [
        ["q1", "Q0", "a", "1"],
        ["q1", "Q0", "c", "2"],
        ["q1", "Q0", "b", "3"],
        ["q2", "Q0", "e", "1"],
    ]
    assert all(line.endswith(" rrf") for line in lines)
    assert read_run(out)["q1"]["a"] == pytest.approx(1 / 61 + 1 / 62)
    first = out.read_bytes()
    assert fusion.main(argv) == 0
    assert out.read_bytes() == first
    assert fusion.main(["--runs", str(tmp_path / "a.trec"), "--output", str(out)]) == 2
