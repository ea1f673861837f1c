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
  [SEP]), so this head needs a tokenizer that gives them (BERT's family); the model itself
  runs with every type 0, as the base was trained, and the special tokens are left out of
  the means (:mod:`citeval.rerank.segment_cosine`).

A head's modules are saved with the model (``modules.json``), so a trained folder loads
with ``CrossEncoder(path)`` and scores as it was trained.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Head:
    """A head: how it builds its modules from a base model's transformer folder."""

    name: str
    needs_token_types: bool
    description: str
    build: Callable[[str, dict[str, Any], dict[str, Any]], list[Any]]
    """``(transformer folder, config_kwargs, processor_kwargs)`` -> the CrossEncoder's
    modules (the Transformer first)."""


def _cls_head(folder: str, config: dict[str, Any], processor: dict[str, Any]) -> list[Any]:
    from sentence_transformers.base.modules import Transformer

    return [
        Transformer(
            folder,
            transformer_task="sequence-classification",
            config_kwargs=config,
            processor_kwargs=processor,
        )
    ]


def _segments_head(folder: str, config: dict[str, Any], processor: dict[str, Any]) -> list[Any]:
    from citeval.rerank.segment_cosine import SegmentCosine, SegmentTransformer

    transformer = SegmentTransformer(
        folder,
        transformer_task="feature-extraction",
        config_kwargs=config,
        processor_kwargs=processor,
    )
    return [transformer, SegmentCosine(list(transformer.tokenizer.all_special_ids))]


CLS = "cls"
MEAN_SEGMENTS = "mean_segments"
HEADS = {
    head.name: head
    for head in (
        Head(
            CLS,
            needs_token_types=False,
            description="[CLS] -> one new linear layer (the paper's)",
            build=_cls_head,
        ),
        Head(
            MEAN_SEGMENTS,
            needs_token_types=True,
            description="scaled cosine of the query's and the candidate's mean token vectors",
            build=_segments_head,
        ),
    )
}
