"""Encoders trained on the corpus (citeval.train): which, from which triplets."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from citeval.config import Config
from citeval.layout import LOCAL_SETUP, Layout

# The sampler whose anchors are the local task's training contexts (a prefetcher).
CONTEXTS_SAMPLER = "contexts"


@dataclass(frozen=True)
class Training:
    config: Config
    layout: Layout
    encoders: tuple[str, ...]

    @cached_property
    def models(self) -> dict[str, Any]:
        """Encoders trained on the corpus that encode.models lists, with their entry."""
        train = self.config.train.models
        return {name: train[name] for name in self.encoders if name in train}

    @cached_property
    def graph_trained(self) -> list[str]:
        """Trained encoders whose triplets come from the citation graph."""
        return [n for n, e in self.models.items() if e.sampler != CONTEXTS_SAMPLER]

    @cached_property
    def context_trained(self) -> list[str]:
        """Trained encoders whose triplets come from the local training split (prefetchers)."""
        return [n for n, e in self.models.items() if e.sampler == CONTEXTS_SAMPLER]

    def is_prefetcher(self, name: str) -> bool:
        return name in self.context_trained

    def anchor_sample_dirs(self, name: str) -> list[str]:
        """The sample whose query texts a trained model's anchors are (prefetchers only)."""
        return [self.layout.sample_dir(LOCAL_SETUP, "train")] if self.is_prefetcher(name) else []

    def anchor_papers(self) -> str:
        return self.layout.query_papers("train")
