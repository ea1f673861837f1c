"""Learning to rank (citeval.ltr): each ltr system's training files, its feature systems'
files where it ranks, and the feature-importance outputs. An ltr system that
``local.models`` lists gets a second model for the local task, trained on the local
training split's contexts with the same features (docs/ltr.md)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from citeval.config import Config, Ltr
from citeval.layout import LOCAL_COLLECTION, LOCAL_SETUP, QUERY_PAPERS, Layout
from citeval.plan.local import Local
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
    local: Local

    @cached_property
    def entries(self) -> dict[str, Ltr]:
        return {entry.name: entry for entry in self.config.ltr}

    @cached_property
    def names(self) -> list[str]:
        return list(self.entries)

    def model(self, name: str, setup: str | None = None) -> str:
        """The model a setup's runs use: the local task's, or the global one."""
        return self.layout.ltr_model(name, setup)

    def models(self) -> dict[str, str]:
        """Every model trained, by its name in the tables and figures -> its folder."""
        models = {name: self.model(name) for name in self.names}
        models |= {
            f"{name} (local task)": self.model(name, LOCAL_SETUP) for name in self.local.ltr_rows
        }
        return models

    def uses_encoders(self) -> bool:
        """Whether a system an ltr model reads on its training split reads embeddings."""
        return any(self.systems.uses_encoders(name) for name in self.names)

    def query_papers(self, setup: str, split: str) -> list[str]:
        """The commands' ``--query-papers`` where the queries are the local task's contexts
        (their texts and citing papers); none in the global task, whose queries are the
        corpus's papers."""
        if setup != LOCAL_SETUP:
            return []
        return ["--query-papers", f"{self.layout.sample_dir(setup, split)}/{QUERY_PAPERS}"]

    def feature_runs(self, name: str, setup: str, split: str, collection: str) -> dict[str, str]:
        """Each feature system's run on one collection, in the model's order."""
        return {
            system: self.layout.run(setup, split, collection, system)
            for system in self.entries[name].features
        }

    def first_stage_run(self, name: str, setup: str, split: str, collection: str) -> str:
        return self.layout.run(setup, split, collection, self.entries[name].first_stage)

    def training_where(self, local: bool = False) -> tuple[str, str, str]:
        """The training collection: the reranker's training pool, or the local task's
        training contexts."""
        if local:
            return (LOCAL_SETUP, "train", LOCAL_COLLECTION)
        return (TRAIN_SETUP, "train", self.rerank.train_collection)

    def training_files(self, name: str, local: bool = False) -> dict[str, Any]:
        """The training split's runs (first stage, features), qrels and sample folder."""
        where = self.training_where(local)
        return {
            "first_stage": self.first_stage_run(name, *where),
            "features": self.feature_runs(name, *where),
            "qrels": self.layout.qrels(*where),
            "samples": self.layout.sample_dir(*where[:2]),
        }

    def training_inputs(self, name: str, local: bool = False) -> dict[str, Any]:
        """What the training job waits for: the runs, and the sample folder that holds the
        qrels (a file inside a folder another job writes is no input of its own)."""
        files = self.training_files(name, local)
        features = list(files["features"].values())
        return {
            "first_stage": files["first_stage"],
            "features": features,
            "samples": files["samples"],
        }

    def training_arguments(self, name: str, local: bool = False) -> list[str]:
        """``ltr train``'s files: first stage, features (in the model's order), qrels and,
        in the local task, the contexts."""
        files = self.training_files(name, local)
        first_stage = f"{self.entries[name].first_stage}={files['first_stage']}"
        return [
            "--first-stage", first_stage, *named_paths("--feature", files["features"]),
            "--qrels", files["qrels"], *self.query_papers(*self.training_where(local)[:2]),
        ]  # fmt: skip

    def rank_arguments(self, name: str, setup: str, split: str, collection: str) -> list[str]:
        """``ltr rank``'s feature runs and, in the local task, the contexts."""
        runs = self.feature_runs(name, setup, split, collection)
        return [*named_paths("--feature", runs), *self.query_papers(setup, split)]

    def mdcr_arguments(self, name: str, split: str) -> list[str]:
        return named_paths("--system-scores", self.mdcr_scores(name, split))

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


def named_paths(flag: str, paths: dict[str, str]) -> list[str]:
    """``flag NAME=PATH`` for each system's file, in the given order."""
    return [word for name, path in paths.items() for word in (flag, f"{name}={path}")]
