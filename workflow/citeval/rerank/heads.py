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
  [SEP]), so this head needs a tokenizer that gives them (BERT's family). Its module is
  :class:`citeval.rerank.segment_cosine.SegmentCosine`.

A head's modules are saved with the model (``modules.json``), so a trained folder loads
with ``CrossEncoder(path)`` and scores as it was trained.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Head:
    """A head: the Transformer task it reads and the modules it adds after it."""

    name: str
    transformer_task: str
    needs_token_types: bool
    description: str
    modules: Callable[[], list[Any]]


def _segment_cosine() -> list[Any]:
    from citeval.rerank.segment_cosine import SegmentCosine  # torch: only when built

    return [SegmentCosine()]


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
            modules=_segment_cosine,
        ),
    )
}
