"""The local task (docs/local.md): its inputs, splits, rows, reranked and oracle runs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

from citeval.config import Config
from citeval.inputs import local_inputs
from citeval.layout import (
    LOCAL_COLLECTION,
    LOCAL_SETUP,
    Layout,
    oracle_run,
    reranked_label,
    reranked_run,
)
from citeval.measures import local_metric_cutoffs
from citeval.plan.rerank import Tradeoff, tradeoff
from citeval.plan.systems import Systems, reranked_runs
from citeval.plan.training import Training
from citeval.systems import LTR, with_members


@dataclass(frozen=True)
class Local:
    config: Config
    layout: Layout
    systems: Systems
    training: Training
    shards: Mapping[str, tuple[str, str]]

    @cached_property
    def enabled(self) -> bool:
        return self.config.local.enabled

    @cached_property
    def inputs(self) -> dict[str, str]:
        """Staging name -> full-text or curated-contexts input file (synthetic: one per
        metadata shard, written by rule synth)."""
        return local_inputs(self.config, self.shards) if self.enabled else {}

    @cached_property
    def query_year(self) -> int:
        return self.config.local.query_year or self.config.sampling.query_year

    @cached_property
    def splits(self) -> list[str]:
        """The evaluated splits: test, and validation unless its share is 0."""
        return ["test", *(["valid"] if self.config.local.valid_fraction > 0 else [])]

    def sample_dirs(self) -> list[str]:
        return [self.layout.sample_dir(LOCAL_SETUP, split) for split in self.splits]

    @cached_property
    def models(self) -> list[str]:
        """The local tables' systems (local.models)."""
        return list(self.config.local.models) if self.enabled else []

    @cached_property
    def reranker(self) -> str | None:
        """The local task's cross-encoder (rerank.name), when local.rerank is on."""
        enabled = self.enabled and self.config.local.rerank.enabled
        return self.config.rerank.name if enabled else None

    @cached_property
    def ks(self) -> list[int]:
        return sorted(self.config.local.rerank.ks)

    @cached_property
    def reranked_runs(self) -> dict[str, tuple[str, int]]:
        """Reranked local run name -> (first stage, K)."""
        return reranked_runs(self.config.local.rerank.first_stages, self.reranker, self.ks)

    @cached_property
    def oracle_runs(self) -> dict[str, tuple[str, int]]:
        """HAtten's oracle prefetch runs (local.rerank.oracle): name -> (first stage, K)."""
        if not (self.reranker and self.config.local.rerank.oracle):
            return {}
        return {
            oracle_run(first_stage, k): (first_stage, k)
            for first_stage in self.config.local.rerank.first_stages
            for k in self.ks
        }

    @cached_property
    def rows(self) -> dict[str, str]:
        """The local tables' rows: table label -> run name (local.models, reranked runs,
        the oracle prefetch reranked at its K)."""
        name = self.reranker or ""
        rows = {model: model for model in self.models}
        for run, (first_stage, k) in self.reranked_runs.items():
            rows[reranked_label(first_stage, name, k)] = run
        for oracle, (_, k) in self.oracle_runs.items():
            rows[reranked_label(oracle, name, k)] = reranked_run(oracle, name, k)
        return rows

    @cached_property
    def train_run(self) -> str | None:
        """The training split's first-stage run, when a prefetcher or the local reranker
        trains on it."""
        if not (self.training.context_trained or self.reranker):
            return None
        first_stage = self.config.local.train.first_stage
        return self.layout.run(LOCAL_SETUP, "train", LOCAL_COLLECTION, first_stage)

    @cached_property
    def runs(self) -> list[str]:
        """Every first-stage run the local rows need: the rows, the runs their fusions
        fuse and the reranked first stages."""
        rerank = self.config.local.rerank
        rows = [*self.models, *(rerank.first_stages if self.reranker else [])]
        needed = with_members(rows, self.systems.members)
        return [name for name in self.systems.first_stages if name in needed]

    @cached_property
    def encoders(self) -> list[str]:
        return [name for name in self.runs if self.systems.kind(name).embeds]

    @cached_property
    def ltr_rows(self) -> list[str]:
        """The ltr systems among the rows: each trains a local model on the training split."""
        return [name for name in self.models if self.systems.kind(name) is LTR]

    @cached_property
    def trained_on_training_split(self) -> list[str]:
        """The systems whose runs on the training split something trains on: the training
        first stage (the prefetcher's and reranker's) and each local ltr system."""
        first_stage = [self.config.local.train.first_stage] if self.train_run else []
        return [*first_stage, *self.ltr_rows]

    def context_vector_splits(self, name: str) -> list[str]:
        """The splits whose contexts a system of the local task ranks by their vectors: the
        evaluated ones, and the training split when a system trained there reads them."""
        splits = list(self.splits) if name in self.encoders else []
        readers = self.trained_on_training_split
        if any(name in self.systems.vectors_read_by(reader) for reader in readers):
            splits.append("train")
        return splits

    @cached_property
    def embeds_training_split(self) -> bool:
        return any(self.systems.uses_encoders(name) for name in self.trained_on_training_split)

    @cached_property
    def cutoffs(self) -> list[int]:
        """The cutoffs the local tables' measures and the trade-off's need."""
        return local_metric_cutoffs(self.config.local.cutoffs, rerank=bool(self.reranker))

    @cached_property
    def trained_models(self) -> dict[str, str]:
        """The trained models the local tables' rows name (the prefetchers, and the
        local reranker under its row name) -> their folders."""
        layout = self.layout
        models = {
            name: layout.trained(name, "model")
            for name in self.training.models
            if name in self.models
        }
        models |= {name: layout.ltr_model(name, LOCAL_SETUP) for name in self.ltr_rows}
        if self.reranker:
            models[self.reranker] = layout.local_reranker_model(self.reranker)
        return models

    def metrics(self, split: str) -> dict[str, str]:
        return {
            label: self.layout.metrics(LOCAL_SETUP, split, LOCAL_COLLECTION, run)
            for label, run in self.rows.items()
        }

    def table(self, split: str, ext: str = "tsv") -> str:
        return self.layout.table(f"local_{split}", ext)

    @cached_property
    def tradeoff(self) -> Tradeoff:
        """The trade-off of the test split."""
        return tradeoff(
            self.layout,
            self.systems,
            (LOCAL_SETUP, "test", LOCAL_COLLECTION),
            self.config.local.rerank.first_stages,
            self.reranker or "",
            self.ks,
        )

    def outputs(self) -> list[str]:
        if not self.enabled:
            return []
        tables = [self.table(split, ext) for split in self.splits for ext in ("tsv", "md")]
        if self.reranker:
            tables += [self.layout.table("local_tradeoff", ext) for ext in ("tsv", "md", "png")]
        return tables
