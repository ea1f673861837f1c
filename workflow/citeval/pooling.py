"""Token vectors to a paper's vector: [CLS], the masked mean, and ASPIRE's per-sentence
means over the mean of every layer. Computed in float32 whatever the model's dtype."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def cls_pool(last_hidden: Any) -> Any:
    """The first position of the last layer, [CLS] for BERT-style tokenizers."""
    return last_hidden[:, 0].float()


def mean_pool(last_hidden: Any, attention_mask: Any) -> Any:
    """Attention-masked mean of the last layer, computed in float32."""
    mask = attention_mask.unsqueeze(-1).float()
    summed = (last_hidden.float() * mask).sum(dim=1)
    return summed / mask.sum(dim=1).clamp(min=1.0)


def layer_mean(hidden_states: Sequence[Any]) -> Any:
    """Mean over every entry of ``hidden_states`` (embedding output included), in float32.

    A running sum keeps one float32 copy instead of stacking all layers.
    """
    total = hidden_states[0].float()
    for hidden in hidden_states[1:]:
        total = total + hidden.float()
    return total / len(hidden_states)


def aspire_pool(
    token_states: Any, token_sentence: Any, attention_mask: Any
) -> tuple[Any, Any, Any]:
    """Per-sentence token means.

    ``token_states`` is (batch, length, dim), ``token_sentence`` (batch, length) holds a
    sentence index or -1. Returns ``(vectors, row, sentence)``: one vector per (row,
    sentence) pair that has at least one token, ordered by row then sentence; a row
    without any sentence token falls back to its masked mean as sentence 0.
    """
    import torch

    batch, _, dim = token_states.shape
    device = token_states.device
    valid = token_sentence >= 0
    num_sentences = max(int(token_sentence.max().item()) + 1, 1)
    rows = torch.arange(batch, device=device).unsqueeze(1).expand_as(token_sentence)
    group = (rows * num_sentences + token_sentence.clamp(min=0))[valid]
    states = token_states.float()
    sums = torch.zeros(batch * num_sentences, dim, device=device, dtype=torch.float32)
    sums.index_add_(0, group, states[valid])
    counts = torch.zeros(batch * num_sentences, device=device, dtype=torch.float32)
    counts.index_add_(0, group, torch.ones_like(group, dtype=torch.float32))

    empty_rows = torch.nonzero(~valid.any(dim=1)).flatten()
    if len(empty_rows):
        fallback = mean_pool(states[empty_rows], attention_mask[empty_rows])
        slots = empty_rows * num_sentences
        sums[slots] = fallback
        counts[slots] = 1.0
    kept = torch.nonzero(counts > 0).flatten()
    vectors = sums[kept] / counts[kept].unsqueeze(1)
    return vectors, kept // num_sentences, kept % num_sentences
