"""The systems a config evaluates (citeval.systems), the runs they make, and the model
registry the encoders load from."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from citeval.config import Config, EmbeddingsSystem, RunSystem, model_entry_builtins
from citeval.layout import Layout, reranked_label, reranked_run
from citeval.measures import global_metric_cutoffs
from citeval.systems import (
    EMBEDDINGS,
    ENCODER,
    LTR,
    RERANKER,
    RUN,
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
    def vector_models(self) -> list[str]:
        """Systems ranked by their vectors in the embedding store: encoders, whose store
        is encoded, and the user's stores, which are imported."""
        return [name for name, system in self.by_name.items() if system.kind.embeds]

    @cached_property
    def stores(self) -> list[str]:
        """The user's embedding stores (systems.embeddings)."""
        return self.of_kind(EMBEDDINGS)

    @cached_property
    def imported_runs(self) -> list[str]:
        """The user's runs (systems.runs)."""
        return self.of_kind(RUN)

    @cached_property
    def stored(self) -> dict[str, EmbeddingsSystem]:
        """The user's embedding stores' config entries by name."""
        return {entry.name: entry for entry in self.config.systems.embeddings}

    @cached_property
    def imported(self) -> dict[str, RunSystem]:
        """The user's runs' config entries by name."""
        return {entry.name: entry for entry in self.config.systems.runs}

    def similarity(self, name: str) -> str:
        if name in self.stored:
            return self.stored[name].similarity
        return self.model_specs[name]["similarity"]

    def pooling(self, name: str) -> str | None:
        """An encoder's pooling; None for a user's store (one vector a paper)."""
        return self.model_specs[name]["pooling"] if name in self.model_specs else None

    # --- where a user's system's files are: theirs, or what its command writes ----------

    def store_source(self, name: str, contexts: bool = False) -> str:
        """The store the import reads: the user's, or the one their command writes."""
        entry = self.stored[name]
        if entry.command is not None:
            return self.layout.external_store(name, contexts)
        return (entry.contexts if contexts else entry.store) or ""

    def store_input(self, name: str, contexts: bool = False) -> str:
        """What the import waits for: the user's store, or the folder their command
        writes (both stores in it)."""
        if self.stored[name].command is not None:
            return self.layout.external(name)
        return self.store_source(name, contexts)

    def run_source(self, name: str, setup: str, split: str, collection: str) -> str:
        entry = self.imported[name]
        if entry.runs is None:
            return self.layout.external_run(name, setup, split, collection)
        return entry.runs.format(setup=setup, split=split, collection=collection)

    def mdcr_scores_source(self, name: str, split: str) -> str:
        entry = self.imported[name]
        if entry.mdcr is None:
            return self.layout.external_mdcr_scores(name, split)
        return entry.mdcr.format(split=split)

    def missing_queries(self, name: str) -> str:
        """What a user's run missing a collection's query means: error, or zero."""
        return self.imported[name].missing_queries

    def commands(self, section: str, key: str = "command") -> dict[str, str]:
        """The user's systems of ``section`` (embeddings, runs) that a command of theirs
        (``key``) makes, and the command."""
        entries = getattr(self.config.systems, section)
        commands = {entry.name: getattr(entry, key) for entry in entries}
        return {name: command for name, command in commands.items() if command is not None}

    @cached_property
    def fusions(self) -> dict[str, Any]:
        """A fusion's config entry (its members and k) by name."""
        return {fusion.name: fusion for fusion in self.config.fusion}

    @cached_property
    def reranker(self) -> str | None:
        names = self.of_kind(RERANKER)
        return names[0] if names else None

    def vectors_read_by(self, name: str) -> list[str]:
        """The systems whose vectors a system's runs read: itself, or a fusion's members'
        (recursively)."""
        system = self.by_name[name]
        if system.kind.embeds:
            return [name]
        return [inner for member in system.members for inner in self.vectors_read_by(member)]

    def uses_encoders(self, name: str) -> bool:
        """Whether a system's runs read embeddings (a fusion: through any member)."""
        return bool(self.vectors_read_by(name))

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

    @cached_property
    def rerank_table_rows(self) -> list[str]:
        """The reranking table's rows: the first stages reranked, the learned combinations
        (second stages trained on the same split), then the reranked runs' labels."""
        reranked = [self.label(run) for run in self.reranked_runs]
        rows = [*self.config.rerank.first_stages, *self.of_kind(LTR), *reranked]
        return list(dict.fromkeys(rows))

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
        (``(<setup>-<split>, <collection>)``); a fusion or an ltr system: its members' too."""
        system = self.by_name[name]
        members = [path for member in system.members for path in self.run_timings(member, where)]
        named = [] if system.kind.single else [name]
        own = [self.layout.timing(job, *where, *named) for job in system.kind.run_jobs]
        # Each job once: two members may share one (an ltr system's BM25 and its fusion's).
        return list(dict.fromkeys([*members, *own]))

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
