"""MDCR file formats and evaluator: round trips, bad input, and agreement with pytrec_eval."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import pytrec_eval

from citeval.errors import InputDataError
from citeval.mdcr.cli import main
from citeval.mdcr.evaluate import evaluate_benchmark, format_rows_tsv
from citeval.mdcr.formats import (
    Paper,
    check_data_covers,
    load_benchmark,
    read_benchmark,
    read_data,
    read_scores,
    write_benchmark,
    write_data,
    write_scores,
)

BENCHMARK = {
    "Art": {
        "q1": {"true": ["a", "b"], "bm25": ["c", "d"], "random": ["e"]},
        "q2": {"true": ["a"], "bm25": ["f"], "random": ["g", "h"]},
    },
    "Biology": {
        "q3": {"true": ["x", "y"], "bm25": ["z"], "random": []},
    },
}
SCORES = {
    "q1_a": 0.9,
    "q1_b": 0.1,
    "q1_c": 0.95,
    "q1_d": 0.2,
    "q1_e": 0.05,
    "q2_a": 0.3,
    "q2_f": 0.4,
    "q2_g": 0.1,
    "q2_h": 0.35,
    "q3_x": 2.0,
    "q3_y": 1.0,
    "q3_z": 1.5,
}


def direct_pytrec_eval(benchmark, scores, kind=None):
    """The published evaluator's arithmetic, written out independently of citeval."""
    field_values = []
    for field_name in sorted(benchmark):
        qrels, run = {}, {}
        for qid, candidates in benchmark[field_name].items():
            if kind is not None and kind not in candidates:
                continue
            kinds = list(candidates) if kind is None else ["true", kind]
            qrels[qid] = {c: int(t == "true") for t in kinds for c in candidates[t]}
            run[qid] = {c: scores[f"{qid}_{c}"] for t in kinds for c in candidates[t]}
        result = pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg", "recall.5"}).evaluate(run)
        field_values.append(
            {
                m: sum(v[m] for v in result.values()) / len(result)
                for m in ("map", "ndcg", "recall_5")
            }
        )
    return {m: 100 * sum(f[m] for f in field_values) / len(field_values) for m in field_values[0]}


def test_agrees_with_direct_pytrec_eval() -> None:
    rows = evaluate_benchmark(BENCHMARK, SCORES)
    overall = {r.candidates: r.values for r in rows if r.field == "AVG"}
    assert set(overall) == {"all", "bm25", "random"}
    for kind, values in overall.items():
        expected = direct_pytrec_eval(BENCHMARK, SCORES, None if kind == "all" else kind)
        for measure in ("map", "ndcg", "recall_5"):
            assert values[measure] == pytest.approx(expected[measure], abs=1e-9)


def test_hand_computed_map() -> None:
    # Art q1: c a d b e -> positives at ranks 2 and 4: AP = (1/2 + 2/4) / 2.
    # Art q2: f h a g -> positive at rank 3: AP = 1/3.  Biology q3: x z y: AP = (1 + 2/3) / 2.
    rows = {(r.candidates, r.field): r for r in evaluate_benchmark(BENCHMARK, SCORES)}
    art = ((1 / 2 + 2 / 4) / 2 + 1 / 3) / 2
    biology = (1 + 2 / 3) / 2
    assert rows["all", "Art"].values["map"] == pytest.approx(100 * art)
    assert rows["all", "Biology"].values["map"] == pytest.approx(100 * biology)
    # Unweighted over fields, not over queries.
    assert rows["all", "AVG"].values["map"] == pytest.approx(100 * (art + biology) / 2)
    assert rows["all", "AVG"].n_queries == 3
    # Subset "random" of q3 is empty: ranked on its positives alone, AP = 1.
    assert rows["random", "Biology"].values["map"] == pytest.approx(100.0)
    assert rows["all", "Art"].values["recall_5"] == pytest.approx(100.0)


def test_ties_follow_trec_eval_docid_order() -> None:
    # All scores equal: trec_eval ranks by docid descending, so "b" before "a".
    benchmark = {"F": {"q": {"true": ["a"], "neg": ["b"]}}}
    rows = evaluate_benchmark(benchmark, {"q_a": 1.0, "q_b": 1.0})
    assert rows[0].values["map"] == pytest.approx(50.0)
    assert direct_pytrec_eval(benchmark, {"q_a": 1.0, "q_b": 1.0})["map"] == pytest.approx(50.0)


def test_missing_score_names_the_pair() -> None:
    scores = dict(SCORES)
    del scores["q2_h"]
    with pytest.raises(InputDataError, match="'q2_h'"):
        evaluate_benchmark(BENCHMARK, scores)


def test_ambiguous_scores_keys_are_refused() -> None:
    benchmark = {"F": {"a_b": {"true": ["c"]}, "a": {"true": ["b_c"]}}}
    with pytest.raises(InputDataError, match="share the scores key 'a_b_c'"):
        evaluate_benchmark(benchmark, {"a_b_c": 1.0})


def test_scores_round_trip_exactly(tmp_path: Path) -> None:
    scores = {**SCORES, "q1_a": 0.1 + 0.2, "q1_b": -1e-300, "q1_c": 3}
    write_scores(scores, tmp_path / "s.json")
    back = read_scores(tmp_path / "s.json")
    assert back == {k: float(v) for k, v in scores.items()}
    assert json.loads((tmp_path / "s.json").read_text()) == back
    write_scores(back, tmp_path / "t.json")
    assert (tmp_path / "s.json").read_bytes() == (tmp_path / "t.json").read_bytes()
    with pytest.raises(ValueError, match="not finite"):
        write_scores({"q_a": math.nan}, tmp_path / "nan.json")


def test_benchmark_and_data_round_trip(tmp_path: Path) -> None:
    papers = {
        pid: Paper(pid, f"title {pid}", f"abstract ü {pid}")
        for pid in [*"abcdefghxyz", "q1", "q2", "q3"]
    }
    write_benchmark(BENCHMARK, tmp_path / "b.json")
    write_data(papers.values(), tmp_path / "d.jsonl")
    benchmark, data = load_benchmark(tmp_path / "b.json", tmp_path / "d.jsonl")
    assert benchmark == BENCHMARK
    assert data == papers
    lines = (tmp_path / "d.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["paper_id"] for line in lines] == sorted(papers)
    assert list(json.loads(lines[0])) == ["paper_id", "title", "abstract"]
    # Importing the exported files gives the numbers computed before export.
    assert evaluate_benchmark(benchmark, SCORES) == evaluate_benchmark(BENCHMARK, SCORES)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[]", "non-empty JSON object"),
        ('{"Art": {}}', "Art"),
        ('{"Art": {"q": {"bm25": ["a"]}}}', "no 'true' list"),
        ('{"Art": {"q": {"true": "a"}}}', "Art/q/true"),
        ('{"Art": {"q": {"true": ["a", "a"]}}}', "repeated"),
        ('{"Art": {"q": {"true": ["q"]}}}', "its own candidate"),
        ('{"Art": {"q": {"true": ["a"], "bm25": ["a"]}}}', "both"),
        ('{"Art": {"q": {"true": [1]}}}', "non-empty string"),
        ('{"A": {"q": {"true": ["a"]}}, "B": {"q": {"true": ["b"]}}}', "also listed"),
        ('{"Art": {"q": {"true": ["a"]}', "not valid JSON"),
    ],
)
def test_malformed_benchmark(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "b.json"
    path.write_text(content)
    with pytest.raises(InputDataError, match=message) as error:
        read_benchmark(path)
    assert str(path) in str(error.value)


def test_check_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_benchmark(BENCHMARK, tmp_path / "b.json")
    ids = [*"abcdefghxyz", "q1", "q2", "q3"]
    write_data([Paper(p, "t", "a") for p in ids], tmp_path / "d.jsonl")
    args = ["check", "--benchmark", str(tmp_path / "b.json"), "--data", str(tmp_path / "d.jsonl")]
    assert main([*args, "--output", str(tmp_path / "s.json")]) == 0
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["papers"] == 14
    assert summary["fields"]["Art"] == {
        "queries": 2,
        "pairs": 9,
        "candidates_per_type": {"bm25": 3, "random": 3, "true": 3},
    }
    write_data([Paper(p, "t", "a") for p in ids if p != "q2"], tmp_path / "d.jsonl")
    assert main(args) == 2
    assert "q2 (Art/q2/query)" in capsys.readouterr().err


def test_candidate_missing_from_data_file(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    write_data([Paper(p, "t", "a") for p in [*"abcdefghxy", "q1", "q2", "q3"]], path)
    with pytest.raises(InputDataError, match=r"z \(Biology/q3/bm25\)"):
        check_data_covers(BENCHMARK, read_data(path), path)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", ":2"),
        ('{"title": "t"}', "paper_id"),
        ('{"paper_id": "a", "title": 3}', "title"),
        ('{"paper_id": "x"}', "listed twice"),
    ],
)
def test_malformed_data_file(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"paper_id": "x", "title": null, "abstract": "a"}\n' + line + "\n")
    with pytest.raises(InputDataError, match=message):
        read_data(path)


@pytest.mark.parametrize("content", ['{"q_a": "high"}', '{"q_a": true}', "[1, 2]"])
def test_malformed_scores_file(tmp_path: Path, content: str) -> None:
    path = tmp_path / "s.json"
    path.write_text(content)
    with pytest.raises(InputDataError, match=r"s\.json"):
        read_scores(path)


def test_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_benchmark(BENCHMARK, tmp_path / "b.json")
    write_scores(SCORES, tmp_path / "s.json")
    args = ["evaluate", "--benchmark", str(tmp_path / "b.json"), "--scores"]
    assert main([*args, str(tmp_path / "s.json"), "--output", str(tmp_path / "r.tsv")]) == 0
    out = capsys.readouterr().out
    expected = direct_pytrec_eval(BENCHMARK, SCORES)
    assert out.splitlines()[0] == f"AVG map {expected['map']:.4f}"
    rows = evaluate_benchmark(BENCHMARK, SCORES)
    assert (tmp_path / "r.tsv").read_text() == format_rows_tsv(rows)
    assert (
        (tmp_path / "r.tsv")
        .read_text()
        .startswith("candidates\tfield\tn_queries\tmap\tndcg\trecall_5\nall\tArt\t2\t")
    )
    # A missing pair: exit status 2 and the pair named.
    write_scores({k: v for k, v in SCORES.items() if k != "q1_e"}, tmp_path / "short.json")
    assert main([*args, str(tmp_path / "short.json")]) == 2
    assert "'q1_e'" in capsys.readouterr().err
