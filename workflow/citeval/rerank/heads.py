"""How the cross-encoder turns its joint encoding of a pair into a relevance logit.

Two heads, declared in :data:`HEADS`:

* ``cls``: the paper's (Nogueira et al. 2020): the [CLS] vector through one new linear
  layer (``AutoModelForSequenceClassification`` with one label). The layer starts at
  random, so the model starts at chance whatever its base knows.
* ``mean_segments``: the cosine of the mean of the query's token vectors and the mean of
  the candidate's, from the joint encoding, times a learned scale plus a learned shift
  (:class:`SegmentCosine`). A base trained for mean pooling (all-MiniLM, SPECTER2's
  adapters, most sentence-transformers encoders) ranks with this head before any training,
  since each segment's mean is close to the vector it was trained to give; training then
  starts from what the base knows instead of from chance. The segments are told apart by
  the token types (0: [CLS], the query and its [SEP]; 1: the candidate and the final
  [SEP]), so this head needs a tokenizer that gives them (BERT's family).

A head's modules are saved with the model (``modules.json``), so a trained folder loads
with ``CrossEncoder(path)`` and scores as it was trained.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Head:
    """A head: the Transformer task it reads and the modules it adds after it."""

    name: str
    transformer_task: str
    needs_token_types: bool
    description: str
    modules: Callable[[], list[Any]]


CLS = "cls"
MEAN_SEGMENTS = "mean_segments"
HEADS = {
    head.name: head
    for head in (
        Head(
            CLS,
            "sequence-classification",
            needs_token_types=False,
            description="[CLS] -> one new linear layer (the paper's)",
            modules=list,
        ),
        Head(
            MEAN_SEGMENTS,
            "feature-extraction",
            needs_token_types=True,
            description="scaled cosine of the query's and the candidate's mean token vectors",
            modules=lambda: [SegmentCosine()],
        ),
    )
}
