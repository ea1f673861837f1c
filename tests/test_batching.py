"""Token-budget batches and the background padding shared by the encoder and reranker."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from citeval import batching
from citeval.batching import Tokens, padded_batches, token_budget_batches
from citeval.models import ModelSpec, load_encoder


def random_tokens(seed: int, count: int, longest: int) -> Tokens:
    rng = np.random.default_rng(seed)
    rows = [rng.integers(5, 1000, size=rng.integers(1, longest + 1)).tolist() for _ in range(count)]
    types = [[index % 2 for index in range(len(row))] for row in rows]
    return Tokens.from_lists(rows, {"token_type_ids": types})


@pytest.mark.parametrize(("budget", "cap"), [(64, None), (200, 3), (1000, None), (7, None)])
def test_batches_hold_every_input_once_within_the_budget(budget: int, cap: int | None) -> None:
    lengths = random_tokens(0, 300, 40).lengths
    batches = token_budget_batches(lengths, budget, cap)
    members = np.concatenate(batches)
    assert sorted(members.tolist()) == list(range(len(lengths)))
    for batch in batches:
        padded = len(batch) * int(lengths[batch].max())
        # Only an input longer than the budget may exceed it, alone.
        assert padded <= budget or len(batch) == 1
        assert cap is None or len(batch) <= cap
    assert [int(lengths[batch[0]]) for batch in batches] == sorted(
        (int(lengths[batch[0]]) for batch in batches), reverse=True
    )


def test_an_input_longer_than_the_budget_is_a_batch_of_its_own() -> None:
    batches = token_budget_batches(np.array([3, 50, 4, 2]), 10)
    assert [batch.tolist() for batch in batches] == [[1], [2, 0], [3]]


def test_the_budget_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        token_budget_batches(np.array([3]), 0)


def test_tokens_concatenate_keeps_every_row_and_extra() -> None:
    whole = random_tokens(1, 50, 20)
    rows = [whole.ids[whole.starts[i] : whole.starts[i + 1]].tolist() for i in range(len(whole))]
    types = [[index % 2 for index in range(len(row))] for row in rows]
    parts = [
        Tokens.from_lists(rows[begin : begin + 17], {"token_type_ids": types[begin : begin + 17]})
        for begin in range(0, 50, 17)
    ]
    joined = Tokens.concatenate(parts)
    np.testing.assert_array_equal(joined.ids, whole.ids)
    np.testing.assert_array_equal(joined.starts, whole.starts)
    np.testing.assert_array_equal(joined.extra["token_type_ids"], whole.extra["token_type_ids"])


def test_padded_batches_yield_every_batch_in_order_with_its_own_tokens(monkeypatch) -> None:
    tokens = random_tokens(2, 200, 30)
    batches = token_budget_batches(tokens.lengths, 90)
    # A deep prefetch still hands batches back in order.
    monkeypatch.setattr(batching, "PREFETCH_BATCHES", 5)
    seen = []
    for members, tensors in padded_batches(
        tokens, batches, pad_id=0, device=torch.device("cpu"), extra_pad={"token_type_ids": 9}
    ):
        seen.append(members)
        for row, member in enumerate(members):
            begin, end = tokens.starts[member], tokens.starts[member + 1]
            length = end - begin
            assert tensors["input_ids"][row, :length].tolist() == tokens.ids[begin:end].tolist()
            assert tensors["input_ids"][row, length:].eq(0).all()
            assert tensors["attention_mask"][row].sum() == length
            assert tensors["token_type_ids"][row, length:].eq(9).all()
            assert (
                tensors["token_type_ids"][row, :length].tolist()
                == tokens.extra["token_type_ids"][begin:end].tolist()
            )
    assert [m.tolist() for m in seen] == [b.tolist() for b in batches]


@pytest.mark.parametrize("pooling", ["cls", "mean", "aspire"])
def test_encoder_output_does_not_depend_on_the_budget(tiny_bert_dir, pooling: str) -> None:
    titles = [f"title {i} " + "word " * (i % 7) for i in range(40)]
    abstracts = ["A study. " * (i % 13) + "The end." for i in range(40)]

    def encode(**batching_settings):
        spec = ModelSpec(
            name="tiny", path=str(tiny_bert_dir), pooling=pooling, max_length=64,
            **batching_settings,
        )  # fmt: skip
        return load_encoder(spec, device="cpu").encode(titles, abstracts)

    one_at_a_time = encode(batch_size=1)
    # A budget smaller than the longest input: those inputs are batches of their own.
    for settings in (
        {"batch_tokens": 16},
        {"batch_tokens": 300},
        {"batch_tokens": 300, "batch_size": 2},
    ):
        encoded = encode(**settings)
        np.testing.assert_array_equal(encoded.paper_index, one_at_a_time.paper_index)
        np.testing.assert_array_equal(encoded.sentence, one_at_a_time.sentence)
        np.testing.assert_allclose(encoded.vectors, one_at_a_time.vectors, atol=2e-5)


def test_tokenizer_processes_give_what_the_encoder_tokenizes_itself(tiny_bert_dir) -> None:
    from citeval.batching import TokenizerPool

    titles = [f"title {i}" for i in range(30)]
    abstracts = ["First sentence. Then a second one. " * (i % 9) for i in range(30)]
    spec = ModelSpec(name="tiny", path=str(tiny_bert_dir), pooling="aspire", max_length=64)
    encoder = load_encoder(spec, device="cpu")
    here = encoder.encode(titles, abstracts)
    # The GPU path: tokenization split over spawned worker processes.
    encoder._pool = TokenizerPool(encoder.paper_tokenizer, 2)
    try:
        tokens = encoder.prepare(titles, abstracts)
        there = encoder.run(tokens)
    finally:
        encoder._pool.close()
    expected = encoder.paper_tokenizer(titles, abstracts)
    np.testing.assert_array_equal(tokens.ids, expected.ids)
    np.testing.assert_array_equal(tokens.starts, expected.starts)
    np.testing.assert_array_equal(tokens.extra["sentence"], expected.extra["sentence"])
    np.testing.assert_array_equal(there.vectors, here.vectors)
