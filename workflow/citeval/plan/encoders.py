"""The embedding store: which samples' papers the encoders embed, in how many shards."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from citeval.config import Config
from citeval.layout import LOCAL_SETUP, Layout
from citeval.plan.local import Local
from citeval.plan.mdcr import MDCR_SETUP, Mdcr
from citeval.plan.rerank import TRAIN_SETUP
from citeval.plan.setups import Setups
from citeval.plan.systems import Systems


@dataclass(frozen=True)
class Encoders:
    config: Config
    layout: Layout
    setups: Setups
    systems: Systems
    mdcr: Mdcr
    local: Local

    @cached_property
    def sample_dirs(self) -> list[str]:
        """Sample folders whose pools and queries the encoders embed: every test split, the
        field-level validation split when MDCR builds its validation benchmark, the
        reranker's training split when its first stage reads embeddings, and the local
        task's splits its encoders retrieve on."""
        dirs = self.setups.sample_dirs(["test"])
        if "valid" in self.mdcr.splits and self.mdcr.enabled and not self.mdcr.imported:
            dirs.append(self.layout.sample_dir(MDCR_SETUP, "valid"))
        if self.systems.reranker and self.systems.uses_encoders(
            self.config.rerank.train.first_stage
        ):
            dirs.append(self.layout.sample_dir(TRAIN_SETUP, "train"))
        if self.local.encoders:
            dirs += self.local.sample_dirs()
        if self.local.embeds_training_split:
            dirs.append(self.layout.sample_dir(LOCAL_SETUP, "train"))
        return dirs

    def shards(self, model: str) -> list[str]:
        """An encoder's shards; a user's store is imported as one."""
        count = 1 if model in self.systems.stores else self.config.encode.num_shards
        return [self.layout.embedding_shard(model, index) for index in range(count)]
