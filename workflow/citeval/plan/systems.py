"""The systems a config evaluates (citeval.systems), the runs they make, and the model
registry the encoders load from."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from citeval.config import Config, model_entry_builtins
from citeval.layout import Layout, reranked_label, reranked_run
from citeval.measures import global_metric_cutoffs
from citeval.systems import (
    ENCODER,
    RERANKER,
    System,
    SystemKind,
    first_stage_names,
    systems_of,
)


def reranked_runs(
    first_stages: Iterable[str], reranker: str | None, ks: Iterable[int]
) -> dict[str, tuple[str, int]]:
    """Each first stage reranked at each K: run name -> (first stage, K); none without a
    reranker."""
    if not reranker:
        return {}
    return {reranked_run(first, reranker, k): (first, k) for first in first_stages for k in ks}


@dataclass(frozen=True)
class Systems:
    """Every system by name, and what the global task runs of them."""

    config: Config
    layout: Layout

    @cached_property
    def by_name(self) -> dict[str, System]:
        return systems_of(self.config)

    def kind(self, name: str) -> SystemKind:
        return self.by_name[name].kind

    def of_kind(self, kind: SystemKind) -> list[str]:
        return [name for name, system in self.by_name.items() if system.kind is kind]

    @cached_property
    def first_stages(self) -> list[str]:
        return first_stage_names(self.by_name.values())

    @cached_property
    def encoders(self) -> list[str]:
        return self.of_kind(ENCODER)

    @cached_property
    def fusions(self) -> dict[str, Any]:
        """A fusion's config entry (its members and k) by name."""
        return {fusion.name: fusion for fusion in self.config.fusion}

    @cached_property
    def reranker(self) -> str | None:
        names = self.of_kind(RERANKER)
        return names[0] if names else None

    def uses_encoders(self, name: str) -> bool:
        """Whether a system's runs read embeddings (a fusion: through any member)."""
        system = self.by_name[name]
        return system.kind.embeds or any(self.uses_encoders(m) for m in system.members)

    def members(self, name: str) -> tuple[str, ...]:
        return self.by_name[name].members

    # --- runs of the global task ----------------------------------------------------

    @cached_property
    def rerank_ks(self) -> list[int]:
        return sorted(self.config.rerank.ks)

    @cached_property
    def reranked_runs(self) -> dict[str, tuple[str, int]]:
        """Reranked run name -> (first stage, K)."""
        return reranked_runs(self.config.rerank.first_stages, self.reranker, self.rerank_ks)

    @cached_property
    def runs(self) -> list[str]:
        """Every run evaluated on the test collections: first stages, then reranked runs."""
        return [*self.first_stages, *self.reranked_runs]

    def label(self, run: str) -> str:
        """A run's name in the tables."""
        if run in self.reranked_runs:
            first_stage, k = self.reranked_runs[run]
            return reranked_label(first_stage, self.reranker or "", k)
        return run

    @cached_property
    def metric_cutoffs(self) -> list[int]:
        """The cutoffs the global tables' measures need (citeval.measures)."""
        return global_metric_cutoffs(self.config.metrics.cutoffs, rerank=bool(self.reranker))

    def chain_of_metrics(self, run: str) -> str | None:
        """The job group of a run's metrics: its retrieval's chain (citeval.systems)."""
        system = self.by_name.get(run)
        return system.kind.chain if system else None

    def run_timings(self, name: str, where: tuple[str, str]) -> list[str]:
        """The timing records of the jobs that make a first stage's run in ``where``
        (``(<setup>-<split>, <collection>)``); a fusion: its members' too."""
        system = self.by_name[name]
        members = [path for member in system.members for path in self.run_timings(member, where)]
        named = [] if system.kind.single else [name]
        own = [self.layout.timing(job, *where, *named) for job in system.kind.run_jobs]
        return [*members, *own]

    # --- the model registry ---------------------------------------------------------

    @cached_property
    def model_specs(self) -> dict[str, dict[str, Any]]:
        """Every model's registry entry; a train.models entry is its base's entry loaded
        from the trained folder."""
        entries = {name: model_entry_builtins(e) for name, e in self.config.models.items()}
        for name, trained in self.config.train.models.items():
            entries[name] = {
                **entries[trained.base],
                "path": f"./{self.layout.trained(name, 'model')}",
            }
        return entries
