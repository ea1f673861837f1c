"""MDCR scores from a trained cross-encoder: every benchmark pair, published format."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from rerank_builder import cpu_reranker

from citeval.mdcr.cli import main
from citeval.mdcr.evaluate import evaluate_benchmark, format_summary
from citeval.mdcr.formats import (
    Paper,
    iter_pairs,
    read_scores,
    score_key,
    write_benchmark,
    write_data,
)
from citeval.rerank.model import load_cross_encoder

BENCHMARK = {
    "Biology": {
        "q1": {"true": ["c1", "c2"], "bm25": ["c3"], "random": ["c4"]},
        "q2": {"true": ["c4"], "bm25": ["c1", "c3"], "random": []},
    },
    "Computer Science": {"q3": {"true": ["c5"], "bm25": ["c6"], "random": ["c2"]}},
}
TEXTS = {
    "q1": ("Protein folding", "We study folding of small proteins in water."),
    "q2": ("Gene networks", "Regulatory networks of genes in yeast cells."),
    "q3": ("Graph neural networks", "Message passing neural networks on large graphs."),
    "c1": ("Folding of proteins", "Kinetics of protein folding."),
    "c2": ("Small proteins", "Small proteins fold fast."),
    "c3": ("Water structure", "The structure of liquid water."),
    "c4": ("Yeast cells", "Cell division in yeast."),
    "c5": ("Neural message passing", "Message passing on graphs."),
    "c6": ("", ""),
}


def test_cross_encoder_scores_every_pair_and_round_trips_through_evaluate(
    tiny_bert_dir: Path, tmp_path: Path, capsys
) -> None:
    torch.manual_seed(5)
    load_cross_encoder(str(tiny_bert_dir), query_tokens=32, candidate_tokens=32).save(
        str(tmp_path / "ce")
    )
    benchmark, data = tmp_path / "mdcr_test.json", tmp_path / "mdcr_test_data.jsonl"
    write_benchmark(BENCHMARK, benchmark)
    write_data([Paper(p, t, a) for p, (t, a) in TEXTS.items()], data)
    output = tmp_path / "scores" / "ce.json"
    argv = ["score", "--benchmark", str(benchmark), "--data", str(data), "--model", "ce",
            "--kind", "cross-encoder", "--model-dir", str(tmp_path / "ce"),
            "--query-tokens", "32", "--candidate-tokens", "32", "--batch-size", "4",
            "--device", "cpu", "--output", str(output)]  # fmt: skip
    assert main(argv) == 0
    scores = read_scores(output)
    assert set(scores) == {score_key(q, c) for q, c in iter_pairs(BENCHMARK)}
    # The same p(relevant) as the reranker gives each pair.
    reranker = cpu_reranker(str(tmp_path / "ce"), 32)
    keys = sorted(scores)
    pairs = [key.split("_") for key in keys]
    expected = reranker.score(
        [reranker.text(*TEXTS[q]) for q, _ in pairs], [reranker.text(*TEXTS[c]) for _, c in pairs]
    )
    np.testing.assert_allclose([scores[k] for k in keys], expected, rtol=1e-5)
    capsys.readouterr()
    assert main(["evaluate", "--benchmark", str(benchmark), "--scores", str(output)]) == 0
    assert capsys.readouterr().out == format_summary(evaluate_benchmark(BENCHMARK, scores))


def test_a_trained_model_scores_with_its_own_budgets_and_refuses_others(
    tiny_bert_dir: Path, tmp_path: Path, capsys
) -> None:
    """A folder with a training.json scores with the budgets it records: without flags as
    with the same flags; a flag that contradicts it is one line naming both."""
    torch.manual_seed(5)
    model = tmp_path / "ce"
    load_cross_encoder(str(tiny_bert_dir), query_tokens=24, candidate_tokens=16).save(str(model))
    settings = {"query_tokens": 24, "candidate_tokens": 16}
    (model / "training.json").write_text(json.dumps({"settings": settings}))
    benchmark, data = tmp_path / "mdcr_test.json", tmp_path / "mdcr_test_data.jsonl"
    write_benchmark(BENCHMARK, benchmark)
    write_data([Paper(p, t, a) for p, (t, a) in TEXTS.items()], data)

    def score(name: str, *flags: str) -> int:
        argv = ["score", "--benchmark", str(benchmark), "--data", str(data), "--model", "ce",
                "--kind", "cross-encoder", "--model-dir", str(model), "--device", "cpu",
                "--output", str(tmp_path / name), *flags]  # fmt: skip
        return main(argv)

    assert score("plain.json") == 0
    assert score("flags.json", "--query-tokens", "24", "--candidate-tokens", "16") == 0
    plain = read_scores(tmp_path / "plain.json")
    assert plain == read_scores(tmp_path / "flags.json")
    capsys.readouterr()
    assert score("wrong.json", "--candidate-tokens", "32") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"error: --candidate-tokens 32 contradicts {model / 'training.json'}: the model was "
        "trained with candidate_tokens 16 (leave --candidate-tokens out to score as it was "
        "trained)"
    ]
    assert not (tmp_path / "wrong.json").exists()


def test_cross_encoder_kind_needs_a_model_dir(tmp_path: Path, capsys) -> None:
    benchmark, data = tmp_path / "mdcr_test.json", tmp_path / "mdcr_test_data.jsonl"
    write_benchmark(BENCHMARK, benchmark)
    write_data([Paper(p, t, a) for p, (t, a) in TEXTS.items()], data)
    argv = ["score", "--benchmark", str(benchmark), "--data", str(data), "--model", "ce",
            "--kind", "cross-encoder", "--output", str(tmp_path / "ce.json")]  # fmt: skip
    assert main(argv) == 2
    assert "--model-dir" in capsys.readouterr().err
