"""Learning to rank (citeval.ltr): each ltr system's training files, its feature systems'
files where it ranks, and the feature-importance outputs."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from citeval.config import Config, Ltr
from citeval.layout import Layout
from citeval.plan.rerank import TRAIN_SETUP, Rerank
from citeval.plan.systems import Systems
from citeval.stages import LTR_TRAIN

IMPORTANCE = "ltr_importance"
ENTRY_KEY = "ltr.*."


@dataclass(frozen=True)
class LearningToRank:
    config: Config
    layout: Layout
    systems: Systems
    rerank: Rerank

    @cached_property
    def entries(self) -> dict[str, Ltr]:
        return {entry.name: entry for entry in self.config.ltr}

    @cached_property
    def names(self) -> list[str]:
        return list(self.entries)

    def model(self, name: str) -> str:
        return self.layout.ltr_model(name)

    def uses_encoders(self) -> bool:
        """Whether a system an ltr model reads on the training split reads embeddings."""
        return any(
            self.systems.uses_encoders(member) for name in self.names
            for member in self.systems.members(name)
        )  # fmt: skip

    def feature_runs(self, name: str, setup: str, split: str, collection: str) -> dict[str, str]:
        """Each feature system's run on one collection, in the model's order."""
        return {
            system: self.layout.run(setup, split, collection, system)
            for system in self.entries[name].features
        }

    def first_stage_run(self, name: str, setup: str, split: str, collection: str) -> str:
        return self.layout.run(setup, split, collection, self.entries[name].first_stage)

    def training_files(self, name: str) -> dict[str, Any]:
        """The training split's runs (first stage, features) and qrels."""
        where = (TRAIN_SETUP, "train", self.rerank.train_collection)
        return {
            "first_stage": self.first_stage_run(name, *where),
            "features": self.feature_runs(name, *where),
            "qrels": self.layout.qrels(*where),
        }

    def mdcr_scores(self, name: str, split: str) -> dict[str, str]:
        """Each feature system's MDCR scores of a split, in the model's order."""
        return {
            system: self.layout.mdcr_scores(split, system) for system in self.entries[name].features
        }

    def settings(self, name: str) -> dict[str, Any]:
        """The training command's per-entry settings (the ``ltr.*`` keys of
        citeval.stages.LTR_TRAIN), read from the entry."""
        entry = self.entries[name]
        values = {}
        for key in LTR_TRAIN.keys:
            if not key.startswith(ENTRY_KEY):
                continue
            value: Any = entry
            for part in key.removeprefix(ENTRY_KEY).split("."):
                value = getattr(value, part)
            values[LTR_TRAIN.dest(key)] = value
        return values

    def outputs(self) -> list[str]:
        """The feature importances (TSV, Markdown, figure) when an ltr system is configured."""
        if not self.names:
            return []
        layout = self.layout
        return [layout.table(IMPORTANCE), layout.table(IMPORTANCE, "md"), layout.plot(IMPORTANCE)]
