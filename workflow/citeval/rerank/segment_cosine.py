"""The ``mean_segments`` head's modules (:mod:`citeval.rerank.heads`): sentence-transformers
modules, saved with the model and loaded by their class paths.

* :class:`SegmentTransformer` is the base's Transformer, run with every token type 0:
  a sentence-transformers encoder such as all-MiniLM never saw type 1, and its vectors for
  a candidate marked type 1 rank worse (``benchmarks/bench_segment_pooling.py``).
  The given types stay in the features: they tell the head which tokens are whose.
* :class:`SegmentCosine` scores ``scale · cos(query mean, candidate mean) + shift`` from
  the token vectors, leaving out the special tokens ([CLS], [SEP]), as the base's own
  mean pooling sees one text without a partner.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from sentence_transformers.base.modules import Module, Transformer

# A logit of 0 at this cosine (a joint encoding's segments are alike), a slope of 20 a unit.
INITIAL_SCALE = 20.0
INITIAL_CENTRE = 0.9


class SegmentTransformer(Transformer):
    """The Transformer with every token type 0 for the model, the pair's own types kept
    in the features for the head."""

    def forward(self, features: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        types = features.get("token_type_ids")
        if types is not None:
            kwargs = {**kwargs, "token_type_ids": torch.zeros_like(types)}
        return super().forward(features, **kwargs)


class SegmentCosine(Module):
    """``scale · cos(mean(query tokens), mean(candidate tokens)) + shift``, special tokens
    left out, from the Transformer's ``token_embeddings``, as the CrossEncoder's
    ``scores``."""

    config_keys: ClassVar[list[str]] = ["special_ids"]

    def __init__(self, special_ids: list[int] | None = None) -> None:
        super().__init__()
        self.special_ids = sorted(special_ids or [])
        self.scale = torch.nn.Parameter(torch.tensor(INITIAL_SCALE))
        self.shift = torch.nn.Parameter(torch.tensor(-INITIAL_SCALE * INITIAL_CENTRE))

    def forward(self, features: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        tokens = features["token_embeddings"]
        ids = features["input_ids"]
        keep = features["attention_mask"].bool()
        if self.special_ids:
            keep &= ~torch.isin(ids, torch.tensor(self.special_ids, device=ids.device))
        keep = keep.unsqueeze(-1).to(tokens.dtype)
        candidate = features["token_type_ids"].unsqueeze(-1).to(tokens.dtype)
        query_mean = _masked_mean(tokens, keep * (1 - candidate))
        candidate_mean = _masked_mean(tokens, keep * candidate)
        cosine = torch.nn.functional.cosine_similarity(query_mean, candidate_mean, dim=-1)
        features["scores"] = (self.scale * cosine + self.shift).unsqueeze(-1)
        return features

    def save(
        self, output_path: str, *args: Any, safe_serialization: bool = True, **kwargs: Any
    ) -> None:
        self.save_config(output_path)
        self.save_torch_weights(output_path, safe_serialization=safe_serialization)

    @classmethod
    def load(cls, model_name_or_path: str, subfolder: str = "", **kwargs: Any) -> SegmentCosine:
        hub = {
            key: kwargs[key]
            for key in ("token", "cache_folder", "revision", "local_files_only")
            if key in kwargs
        }
        config = cls.load_config(model_name_or_path=model_name_or_path, subfolder=subfolder, **hub)
        return cls.load_torch_weights(
            model_name_or_path=model_name_or_path, subfolder=subfolder, model=cls(**config), **hub
        )


def _masked_mean(tokens: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    return (tokens * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)
