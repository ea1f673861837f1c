"""The run's final outputs: the paper's tables, figures, provenance and every test
metric file."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import msgspec

from citeval.config import Config
from citeval.layout import Layout
from citeval.plan.local import Local
from citeval.plan.ltr import LearningToRank
from citeval.plan.mdcr import Mdcr
from citeval.plan.rerank import Rerank
from citeval.plan.setups import Setups
from citeval.plan.systems import Systems
from citeval.plan.training import Training

# The trained models' validation curves (citeval.learning): table and figure name.
LEARNING = "learning"


@dataclass(frozen=True)
class Outputs:
    config: Config
    layout: Layout
    setups: Setups
    systems: Systems
    mdcr: Mdcr
    rerank: Rerank
    local: Local
    training: Training
    ltr: LearningToRank

    @cached_property
    def tables(self) -> dict[str, str]:
        """The global tables: caption (report/<caption>.rst) -> TSV path."""
        setups, tables = self.setups.names, []
        tables.append(("table1", "table1_dataset_level", "dataset" in setups))
        for caption, name in (
            ("table2", "table2_field_level_map"),
            ("table7", "table7_field_level_ndcg"),
            ("table8", "table8_field_level_recall"),
        ):
            tables.append((caption, name, "field" in setups))
        rerank_table = bool(self.systems.reranker) and "dataset" in setups
        tables.append(("table_rerank", "table_rerank_dataset_level", rerank_table))
        return {caption: self.layout.table(name) for caption, name, present in tables if present}

    @cached_property
    def plot_sources(self) -> dict[str, tuple[str, str]]:
        """Figure name -> (the plots command's flag, the table TSV it is drawn from)."""
        mdcr_tables = self.mdcr.tables
        sources = {
            "map_by_pool_size": ("table1", self.tables.get("table1")),
            "field_map": ("table2", self.tables.get("table2")),
            "mdcr_types": ("table4", mdcr_tables[2] if mdcr_tables else None),
        }
        return {name: (flag, table) for name, (flag, table) in sources.items() if table}

    @cached_property
    def trained_models(self) -> dict[str, str]:
        """Each model the run trains (its name in the tables) -> its folder, whose
        training.json holds its validation curve."""
        layout = self.layout
        models = {name: layout.trained(name, "model") for name in self.training.models}
        models |= self.ltr.models()
        if self.systems.reranker:
            models[self.systems.reranker] = layout.reranker_model(self.systems.reranker)
        if self.local.reranker:
            local = f"{self.local.reranker} (local task)"
            models[local] = layout.local_reranker_model(self.local.reranker)
        return models

    def learning(self) -> list[str]:
        """The curves' table (TSV, Markdown) and figure, when the run trains a model."""
        if not self.trained_models:
            return []
        layout = self.layout
        return [layout.table(LEARNING), layout.table(LEARNING, "md"), layout.plot(LEARNING)]

    @cached_property
    def provenance_config(self) -> dict[str, Any]:
        """The config as the run used it, for the provenance record: defaults filled, and
        the trained encoders in the registry."""
        return {**msgspec.to_builtins(self.config), "models": self.systems.model_specs}

    def test_metric_files(self) -> list[str]:
        return [
            self.layout.metrics(setup, "test", collection.name, run)
            for setup in self.setups.names
            for collection in self.setups.collections(setup, "test")
            for run in self.systems.runs
        ]

    def final(self) -> list[str]:
        return [
            self.layout.table("provenance", "json"),
            *(self.layout.plot(name) for name in self.plot_sources),
            *self.test_metric_files(),
            *self.mdcr.outputs(),
            *self.rerank.outputs(),
            *self.local.outputs(),
            *self.ltr.outputs(),
            *self.learning(),
        ]
