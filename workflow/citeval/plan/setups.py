"""Setups (dataset- and field-level), their collections, and BM25's parameters per
collection."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

import msgspec

from citeval.collection_list import PlannedCollection, planned_collections, tuning_collections
from citeval.config import Config
from citeval.layout import LOCAL_SETUP, Layout

SETUP_SECTIONS = (("dataset", "dataset_level"), ("field", "field_level"))


@dataclass(frozen=True)
class Setups:
    """The global task's setups the config enables, and what each collection gets."""

    config: Config
    layout: Layout

    @cached_property
    def names(self) -> list[str]:
        sampling = self.config.sampling
        return [setup for setup, key in SETUP_SECTIONS if getattr(sampling, key).enabled]

    def collections(self, setup: str, split: str) -> list[PlannedCollection]:
        """Every collection of a test or validation split (citeval.collection_list)."""
        return planned_collections(setup, split, msgspec.to_builtins(self.config.sampling))

    def sample_dirs(self, splits: Iterable[str]) -> list[str]:
        return [self.layout.sample_dir(setup, split) for setup in self.names for split in splits]

    def retrieval_k(self, setup: str) -> int:
        """Candidates per query: local.k for the local task, else retrieval.k."""
        return self.config.local.k if setup == LOCAL_SETUP else self.config.retrieval.k

    # --- BM25's k1 and b ---------------------------------------------------------------

    @property
    def bm25_tuned(self) -> bool:
        return self.config.bm25.tune.enabled

    def bm25_tuning_collections(self, setup: str) -> list[PlannedCollection]:
        """The validation collections that tune k1/b (policy: citeval.collection_list)."""
        return tuning_collections(setup, self.collections(setup, "valid"))

    def bm25_parameters(self, setup: str, split: str) -> str | None:
        """The tuned k1/b file a collection's BM25 reads, or None for the configured k1/b.

        Each global setup tunes on its own validation split; the reranker's training split
        has none and takes the first setup's. The local task's queries are contexts, not
        papers, so no global tuning carries over; MDCR's pairs come from the field level.
        """
        if not self.bm25_tuned or setup == LOCAL_SETUP or not self.names:
            return None
        tuned_on = self.names[0] if split == "train" else setup
        return self.layout.bm25_tuning(tuned_on) if tuned_on in self.names else None
