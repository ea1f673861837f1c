"""Reranking a first-stage run for several K: candidate sets, orders, scoring once, errors."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
from rerank_builder import cpu_reranker, write_papers, write_ranked_run

from citeval.errors import CitevalError, InputDataError
from citeval.rerank.cli import main
from citeval.rerank.model import Reranker, load_cross_encoder
from citeval.rerank.rerank import rerank, rerank_list
from citeval.trec import rank_documents, read_run

WORDS = [
    "cell",
    "protein",
    "gene",
    "graph",
    "network",
    "model",
    "image",
    "energy",
    "water",
    "soil",
    "market",
    "brain",
]
DOCS = {
    f"d{i:02d}": (f"{WORDS[i % 12]} {WORDS[(i * 5) % 12]}", " ".join(WORDS[: 1 + i % 9]))
    for i in range(30)
}
DOCS["d07"] = DOCS["d05"]  # identical texts: a tie, broken by id descending
QUERY_TEXTS = {
    "q1": ("cell protein", "gene expression in cells"),
    "q2": ("graph network", "neural networks on graphs"),
    "q3": ("energy", "water and soil"),
}
RUN = {
    "q1": ["d05", "d01", "d07", "d11", "d02", "d13", "d03", "d20", "d21", "d04", "d22", "d23"],
    "q2": ["d10", "d09", "d08", "d14", "d15", "d16", "d17", "d18"],
    "q3": ["d24", "d25", "d26", "d27", "d28"],
}
KS = (3, 5, 10)


@pytest.fixture(scope="module")
def model_dir(tiny_bert_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(3)
    directory = tmp_path_factory.mktemp("ce") / "model"
    load_cross_encoder(str(tiny_bert_dir), query_tokens=16, candidate_tokens=16).save(
        str(directory)
    )
    return directory


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    return (
        write_ranked_run(tmp_path / "first.trec", RUN),
        write_papers(tmp_path / "papers", {**DOCS, **QUERY_TEXTS}),
    )


def _reranker(model_dir: Path) -> Reranker:
    return cpu_reranker(str(model_dir), 16, batch_size=64)


def test_rerank_list_orders_the_top_k_by_score_ties_by_id_descending() -> None:
    ranked = [("a", 9.0), ("c", 8.0), ("b", 7.0), ("e", 6.0), ("d", 5.0)]
    scores = np.array([0.1, 0.5, 0.5, 0.9], dtype=np.float32)  # only the top 4 needed
    assert rerank_list(ranked, scores, 3) == [
        ("c", 5.0), ("b", 4.0), ("a", 3.0), ("e", 2.0), ("d", 1.0)
    ]  # fmt: skip
    assert [d for d, _ in rerank_list(ranked, scores, 4)] == ["e", "c", "b", "a", "d"]


def test_each_k_reorders_only_its_top_k_and_scores_every_pair_once(
    model_dir: Path, files: tuple[Path, Path], tmp_path: Path
) -> None:
    run_path, papers = files
    reranker = _reranker(model_dir)
    seen: list[tuple[str, str]] = []
    tokenize = reranker.tokenize

    def counting_tokenize(queries, candidates):
        seen.extend(zip(queries, candidates, strict=True))
        return tokenize(queries, candidates)

    reranker.tokenize = counting_tokenize
    outputs = [tmp_path / f"k{k}.trec" for k in KS]
    timing = rerank(run_path, papers, KS, outputs, reranker=reranker,
                    timing_path=tmp_path / "timing.json", tag_prefix="ce@")  # fmt: skip
    # The top max(K) of each query, each pair once, whatever the number of Ks.
    assert reranker.pairs_scored == len(seen) == 10 + 8 + 5
    pairs = [
        (reranker.text(*QUERY_TEXTS[q]), reranker.text(*DOCS[d]))
        for q, ds in RUN.items()
        for d in ds[:10]
    ]
    assert Counter(seen) == Counter(pairs)  # texts are short: nothing was cut
    assert timing["pairs_scored"] == 23 and timing["queries"] == 3

    # Independent scores of the same pairs.
    expected = {
        qid: dict(
            zip(docs, _reranker(model_dir).score(
                [reranker.text(*QUERY_TEXTS[qid])] * len(docs),
                [reranker.text(*DOCS[d]) for d in docs]), strict=True)
        )
        for qid, docs in RUN.items()
    }  # fmt: skip
    for k, output in zip(KS, outputs, strict=True):
        lines = output.read_text().splitlines()
        assert {line.split()[5] for line in lines} == {f"ce@{k}"}
        written = read_run(output)
        for qid, first in RUN.items():
            order = [d for d, _ in rank_documents(written[qid])]
            # Ranks in the file are trec_eval's order: scores strictly decreasing.
            ranks = [line.split() for line in lines if line.split()[0] == qid]
            assert [r[2] for r in ranks] == order
            assert [int(r[3]) for r in ranks] == list(range(1, len(order) + 1))
            assert sorted(order) == sorted(first)  # the same candidates
            assert order[k:] == first[k:]  # the first stage's order below K
            head = sorted(first[:k], key=lambda d: (float(expected[qid][d]), d), reverse=True)
            assert order[:k] == head
        per_k = timing["per_k"][str(k)]
        assert per_k["pairs"] == sum(min(k, len(docs)) for docs in RUN.values())
        assert per_k["seconds"] == pytest.approx(per_k["pairs"] / timing["pairs_per_second"])
    saved = json.loads((tmp_path / "timing.json").read_text())
    assert saved["per_k"].keys() == {"3", "5", "10"} and saved["model_load_seconds"] >= 0
    # The tie (identical texts) is broken by id descending within q1's top 3.
    q1 = [d for d, _ in rank_documents(read_run(outputs[0])["q1"])]
    assert q1.index("d07") < q1.index("d05")


def test_the_command_line_writes_every_output(
    model_dir: Path, files: tuple[Path, Path], tmp_path: Path
) -> None:
    run_path, papers = files
    argv = ["rerank", "--model", str(model_dir), "--papers", str(papers), "--run",
            str(run_path), "--ks", "5", "12", "--outputs", str(tmp_path / "a.trec"),
            str(tmp_path / "b.trec"), "--timing", str(tmp_path / "t.json"),
            "--query-tokens", "16", "--candidate-tokens", "16", "--device", "cpu"]  # fmt: skip
    assert main(argv) == 0
    # K = 12 reaches q1's whole list: every candidate reranked, none dropped.
    assert {q: sorted(d) for q, d in read_run(tmp_path / "b.trec").items()} == {
        q: sorted(d) for q, d in RUN.items()
    }
    assert json.loads((tmp_path / "t.json").read_text())["pairs_scored"] == 12 + 8 + 5


def test_a_k_deeper_than_the_run_is_refused(
    model_dir: Path, files: tuple[Path, Path], tmp_path: Path, capsys
) -> None:
    run_path, papers = files
    with pytest.raises(CitevalError, match=r"K=13 is larger than the depth of run .*first.trec"):
        rerank(run_path, papers, [5, 13], [tmp_path / "a", tmp_path / "b"], model="unused")
    argv = ["rerank", "--model", str(model_dir), "--papers", str(papers), "--run",
            str(run_path), "--ks", "13", "--outputs", str(tmp_path / "a.trec"),
            "--timing", str(tmp_path / "t.json")]  # fmt: skip
    assert main(argv) == 2
    assert "K=13" in capsys.readouterr().err
    assert not (tmp_path / "a.trec").exists()


def test_an_empty_run_gives_empty_reranked_runs(model_dir: Path, tmp_path: Path) -> None:
    """A collection that sampling left without queries has an empty first-stage run."""
    run_path = write_ranked_run(tmp_path / "empty.trec", {})
    papers = write_papers(tmp_path / "papers", DOCS)
    outputs = [tmp_path / "a.trec", tmp_path / "b.trec"]
    timing = rerank(run_path, papers, [5, 10], outputs, reranker=_reranker(model_dir))
    assert [path.read_text() for path in outputs] == ["", ""]
    assert (timing["queries"], timing["pairs_scored"]) == (0, 0)


def test_a_candidate_outside_the_corpus_is_located(files: tuple[Path, Path], tmp_path: Path):
    run_path, papers = files
    text = run_path.read_text().replace("q2 Q0 d14", "q2 Q0 ghost")
    run_path.write_text(text)
    with pytest.raises(InputDataError) as error:
        rerank(run_path, papers, [5], [tmp_path / "a.trec"], model="unused")
    line = next(i for i, row in enumerate(text.splitlines(), 1) if " ghost " in row)
    assert (error.value.path, error.value.line, error.value.field) == (
        str(run_path), line, "docid"
    )  # fmt: skip
    assert "'ghost'" in str(error.value)


def test_chunks_of_queries_give_the_same_scores(model_dir: Path) -> None:
    from citeval.rerank.rerank import score_pairs

    run = {q: [(d, 0.0) for d in docs] for q, docs in RUN.items()}
    texts = {**DOCS, **QUERY_TEXTS}
    whole = score_pairs(run, texts, _reranker(model_dir), depth=6)
    chunked_reranker = _reranker(model_dir)
    chunked = score_pairs(run, texts, chunked_reranker, depth=6, chunk_pairs=4)
    assert chunked_reranker.pairs_scored == 6 + 6 + 5
    for qid in RUN:
        np.testing.assert_allclose(chunked[qid], whole[qid], rtol=1e-5, atol=1e-7)
