"""The embedding store: which samples' papers the encoders embed, in how many shards; and
the query stores of the models whose query and document prompts differ."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from citeval.config import Config
from citeval.layout import LOCAL_SETUP, Layout
from citeval.models import ModelSpec, model_prompts
from citeval.plan.local import Local
from citeval.plan.ltr import LearningToRank
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
    ltr: LearningToRank

    @cached_property
    def sample_dirs(self) -> list[str]:
        """Sample folders whose pools and queries the encoders embed: every test split, the
        field-level validation split when MDCR builds its validation benchmark, the
        reranker's training split when its first stage reads embeddings or an ltr system
        reads an encoder's runs there, and the local
        task's splits its encoders retrieve on."""
        dirs = self.setups.sample_dirs(["test"])
        if "valid" in self.mdcr.splits and self.mdcr.enabled and not self.mdcr.imported:
            dirs.append(self.layout.sample_dir(MDCR_SETUP, "valid"))
        reranker_reads = self.systems.reranker and self.systems.uses_encoders(
            self.config.rerank.train.first_stage
        )
        if reranker_reads or self.ltr.uses_encoders():
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

    @cached_property
    def queries_apart(self) -> frozenset[str]:
        """The encoders whose query prompt differs from their document prompt (configured,
        or their folder's where this machine holds it): their queries are embedded apart
        from the store of candidates, which they embed with the document prompt. Every
        other encoder embeds each paper once, for both roles."""
        specs = self.systems.model_specs
        return frozenset(
            name
            for name in self.systems.encoders
            if model_prompts(ModelSpec.from_config(name, specs[name]), download=False).differ
        )

    def query_shard(self, model: str, setup: str, split: str) -> str | None:
        """The store a split's queries are read from when not from the model's store: the
        local task's contexts always, a global split's query papers when the model's
        prompts differ (one shard: a split's queries are few)."""
        if setup == LOCAL_SETUP:
            return self.layout.query_embedding_shard(model, split)
        if model in self.queries_apart:
            return self.layout.query_paper_shard(model, setup, split)
        return None

    def role_flags(self, model: str, role: str) -> list[str]:
        """The encode command's ``--role``: only for a model whose prompts differ, so that
        every other model's commands stay as they were."""
        return ["--role", role] if model in self.queries_apart else []
