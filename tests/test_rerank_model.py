"""The cross-encoder's per-side token budgets, loading and length-sorted scoring."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from rerank_builder import cpu_reranker

from citeval.errors import CitevalError
from citeval.rerank.model import Reranker, load_cross_encoder


@pytest.fixture(scope="module")
def small(tiny_bert_dir: Path) -> Reranker:
    torch.manual_seed(0)
    return cpu_reranker(str(tiny_bert_dir), 8)


def _sides(reranker: Reranker, query: str, candidate: str) -> tuple[list[int], list[int]]:
    """The token ids of the query and candidate segments of the model's input."""
    features = reranker.features([query], [candidate])
    ids = features["input_ids"][0][features["attention_mask"][0].bool()].tolist()
    tokenizer = reranker.tokenizer
    assert ids[0] == tokenizer.cls_token_id and ids[-1] == tokenizer.sep_token_id
    types = features["token_type_ids"][0][: len(ids)].tolist()
    first = types.index(1)
    return ids[1 : first - 1], ids[first:-1]


def test_small_budgets_keep_exact_token_counts_on_each_side(small: Reranker) -> None:
    long_query = "cell " * 50
    long_candidate = "graph " * 50
    query, candidate = _sides(small, long_query, long_candidate)
    # 8 + 8 tokens in all: [CLS] + 6 query tokens + [SEP] | 7 candidate tokens + [SEP].
    assert len(query) == 6 and len(candidate) == 7
    cell, graph = small.tokenizer.convert_tokens_to_ids(["cell", "graph"])
    assert query == [cell] * 6 and candidate == [graph] * 7
    features = small.features([long_query], [long_candidate])
    assert int(features["attention_mask"].sum()) == 16


def test_a_long_query_never_pushes_the_candidate_out(small: Reranker) -> None:
    query, candidate = _sides(small, "protein " * 500, "gene cell")
    assert len(query) == 6
    assert small.tokenizer.convert_ids_to_tokens(candidate) == ["gene", "cell"]
    # A short query leaves its unused share unused: the candidate keeps its own budget.
    query, candidate = _sides(small, "gene", "cell " * 100)
    assert len(query) == 1 and len(candidate) == 7


def test_a_cut_inside_a_word_keeps_exactly_the_budget(small: Reranker) -> None:
    # Unknown words split into single-letter word pieces; the cut falls mid-word.
    query, candidate = _sides(small, "zyxwvutsrq " * 3, "qwertyuiop")
    assert len(query) == 6 and len(candidate) == 7
    alone = small.tokenizer("zyxwvutsrq", add_special_tokens=False)["input_ids"]
    assert query == alone[:6]


def test_the_paper_budgets_keep_both_sides_of_long_papers(tiny_bert_dir: Path) -> None:
    reranker = cpu_reranker(str(tiny_bert_dir), 256)
    title, abstract = "graph neural networks", "message passing " * 400
    query, candidate = _sides(
        reranker, reranker.text(title, abstract), reranker.text("cell science", "cells " * 400)
    )
    assert len(query) == 254 and len(candidate) == 255
    tokens = reranker.tokenizer.convert_ids_to_tokens(candidate)
    # title [SEP] abstract: the candidate's title and separator are there.
    assert tokens[:3] == ["cell", "science", "[SEP]"]


def test_budgets_above_the_models_positions_are_refused(tiny_bert_dir: Path) -> None:
    with pytest.raises(CitevalError, match="exceeds the model's 512 positions"):
        load_cross_encoder(str(tiny_bert_dir), query_tokens=300, candidate_tokens=300)


def test_scores_come_back_in_input_order_whatever_the_batching(small: Reranker) -> None:
    queries = ["cell " * n for n in (1, 9, 3, 7, 2, 5)]
    candidates = ["graph " * n for n in (4, 1, 8, 2, 6, 3)]
    one_by_one = np.array(
        [small.score([q], [c])[0] for q, c in zip(queries, candidates, strict=True)]
    )
    small.batch_size = 4
    before = small.pairs_scored
    together = small.score(queries, candidates)
    assert small.pairs_scored - before == len(queries)
    np.testing.assert_allclose(together, one_by_one, rtol=1e-5, atol=1e-6)
    assert np.all((together > 0) & (together < 1))  # p(relevant): a sigmoid


def test_a_saved_model_loads_back_with_the_same_scores(
    small: Reranker, tiny_bert_dir: Path, tmp_path: Path
) -> None:
    small.model.save(str(tmp_path / "ce"))
    loaded = cpu_reranker(str(tmp_path / "ce"), 8)
    pairs = (["cell graph", "the model"], ["graph", "protein model"])
    np.testing.assert_allclose(loaded.score(*pairs), small.score(*pairs), rtol=1e-6)


PAIR_TEXTS = (
    ["cell biology", "protein " * 40, "gene", "graph networks for citations " * 5] * 6,
    ["graph " * 30, "gene cell", "protein folding " * 9, "b"] * 6,
)


def _reranker(path: str, dtype: str, batch_tokens: int = 2048) -> Reranker:
    torch.manual_seed(0)
    return cpu_reranker(path, 12, dtype=dtype, batch_tokens=batch_tokens, batch_size=None)


def test_tokenize_gives_the_inputs_crossencoder_makes_of_the_cut_texts(
    tiny_bert_dir: Path,
) -> None:
    reranker = _reranker(str(tiny_bert_dir), "float32")
    queries, candidates = PAIR_TEXTS
    tokens = reranker.tokenize(queries, candidates)
    features = reranker.features(queries, candidates)
    for row in range(len(queries)):
        length = int(features["attention_mask"][row].sum())
        begin, end = tokens.starts[row], tokens.starts[row + 1]
        assert end - begin == length
        assert tokens.ids[begin:end].tolist() == features["input_ids"][row, :length].tolist()
        assert (
            tokens.extra["token_type_ids"][begin:end].tolist()
            == features["token_type_ids"][row, :length].tolist()
        )


def test_scores_equal_crossencoder_predict_on_the_cut_pairs_in_input_order(
    tiny_bert_dir: Path,
) -> None:
    reranker = _reranker(str(tiny_bert_dir), "float32", batch_tokens=40)
    queries, candidates = PAIR_TEXTS
    pairs, _ = reranker.prepare(queries, candidates)
    expected = reranker.model.predict(pairs, batch_size=1, convert_to_numpy=True)
    np.testing.assert_allclose(reranker.score(queries, candidates), expected, atol=1e-6)
    assert reranker.pairs_scored == len(pairs)


@pytest.mark.parametrize("half", ["bfloat16", "float16"])
def test_half_precision_scores_equal_float32_scores_within_tolerance(
    tiny_bert_dir: Path, half: str
) -> None:
    queries, candidates = PAIR_TEXTS
    full = _reranker(str(tiny_bert_dir), "float32")
    reduced = _reranker(str(tiny_bert_dir), half)
    assert next(reduced.model.parameters()).dtype == getattr(torch, half)
    scores = reduced.score(queries, candidates)
    assert scores.dtype == np.float32
    np.testing.assert_allclose(scores, full.score(queries, candidates), atol=1e-2)


def test_pairs_tokenized_in_a_worker_process_equal_those_tokenized_here(
    tiny_bert_dir: Path,
) -> None:
    from citeval.batching import TokenizerPool

    reranker = _reranker(str(tiny_bert_dir), "float32")
    queries, candidates = PAIR_TEXTS
    pool = TokenizerPool(reranker.pairs, 1)
    try:
        there = pool.submit("tokenize", queries, candidates).result()
    finally:
        pool.close()
    here = reranker.tokenize(queries, candidates)
    np.testing.assert_array_equal(there.ids, here.ids)
    np.testing.assert_array_equal(there.starts, here.starts)
    np.testing.assert_array_equal(there.extra["token_type_ids"], here.extra["token_type_ids"])


def test_a_tokenizer_that_is_not_prefix_stable_is_cut_a_token_earlier(
    tiny_bert_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reranker = _reranker(str(tiny_bert_dir), "float32")
    pairs = reranker.pairs
    tokenize_ids = pairs._ids

    def grows_once_cut(texts, limit):
        # As if re-tokenizing a cut text gave one token more than it kept.
        grown = [
            [*ids, ids[-1]] if len(ids) == limit else ids for ids in tokenize_ids(texts, limit)
        ]
        return grown

    monkeypatch.setattr(pairs, "_ids", grows_once_cut)
    texts, ids = pairs.truncate(["protein " * 40], 6)
    assert len(ids[0]) <= 6 and texts[0] == "protein " * 4 + "protein"


def test_the_pair_template_keeps_each_special_tokens_own_type() -> None:
    # XLNet's layout: A <sep> B <sep> <cls>, token types 0 0 1 1 2.
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    from citeval.rerank.model import CANDIDATE, QUERY, pair_template

    vocab = {"<unk>": 0, "<sep>": 1, "<cls>": 2, "query": 3, "candidate": 4}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = processors.TemplateProcessing(
        single="$A:0 <sep>:0 <cls>:2",
        pair="$A:0 <sep>:0 $B:1 <sep>:1 <cls>:2",
        special_tokens=[("<sep>", 1), ("<cls>", 2)],
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, sep_token="<sep>", cls_token="<cls>", unk_token="<unk>",
        model_input_names=["input_ids", "token_type_ids", "attention_mask"],
    )  # fmt: skip
    template = [
        (segment if isinstance(segment, str) else segment.tolist(), token_type)
        for segment, token_type in pair_template(tokenizer)
    ]
    assert template == [(QUERY, 0), ([1], 0), (CANDIDATE, 1), ([1], 1), ([2], 2)]
