"""The ``mean_segments`` head's module (:mod:`citeval.rerank.heads`): a sentence-transformers
module, saved with the model and loaded by its class path."""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from sentence_transformers.base.modules import Module

# A logit of 0 at this cosine (a joint encoding's segments are alike), a slope of 20 a unit.
INITIAL_SCALE = 20.0
INITIAL_CENTRE = 0.9


class SegmentCosine(Module):
    """``scale · cos(mean(query tokens), mean(candidate tokens)) + shift``, from the
    Transformer's ``token_embeddings``, as the CrossEncoder's ``scores``."""

    config_keys: ClassVar[list[str]] = []

    def __init__(self) -> None:
        super().__init__()
        self.scale = torch.nn.Parameter(torch.tensor(INITIAL_SCALE))
        self.shift = torch.nn.Parameter(torch.tensor(-INITIAL_SCALE * INITIAL_CENTRE))

    def forward(self, features: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        tokens = features["token_embeddings"]
        mask = features["attention_mask"].unsqueeze(-1).to(tokens.dtype)
        candidate = features["token_type_ids"].unsqueeze(-1).to(tokens.dtype)
        query_mean = _masked_mean(tokens, mask * (1 - candidate))
        candidate_mean = _masked_mean(tokens, mask * candidate)
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
        return cls.load_torch_weights(
            model_name_or_path=model_name_or_path, subfolder=subfolder, model=cls(), **hub
        )


def _masked_mean(tokens: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    return (tokens * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)
