"""MDCR (docs/mdcr.md): built from the field-level splits or imported, scored by every
system."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from citeval.config import Config
from citeval.layout import Layout
from citeval.plan.setups import Setups
from citeval.plan.systems import Systems

MDCR_SETUP = "field"


@dataclass(frozen=True)
class Mdcr:
    config: Config
    layout: Layout
    setups: Setups
    systems: Systems

    @cached_property
    def imported(self) -> bool:
        return self.config.mdcr.source == "import"

    @cached_property
    def enabled(self) -> bool:
        return self.config.mdcr.enabled and (self.imported or MDCR_SETUP in self.setups.names)

    @cached_property
    def splits(self) -> list[str]:
        """MDCR's splits (``test``, ``valid``; only its published file names say ``val``):
        built, the test split and the validation split when field-level validation queries
        are drawn; imported, every split the config names files for."""
        if self.imported:
            files = self.config.mdcr.import_
            return [split for split in ("test", "valid") if getattr(files, split) is not None]
        validation = self.config.sampling.validation.queries_per_field > 0
        return ["test", *(["valid"] if validation else [])]

    def files(self, split: str) -> dict[str, str]:
        """The split's benchmark and data file: built by mdcr_build, or the imported ones."""
        if self.imported:
            files = getattr(self.config.mdcr.import_, split)
            return {"benchmark": files.benchmark, "data": files.data}
        return {
            "benchmark": self.layout.mdcr_file(split, "benchmark"),
            "data": self.layout.mdcr_file(split, "data"),
        }

    @cached_property
    def build_models(self) -> list[str]:
        """Systems whose rep-0 field runs the construction compares (empty config: every
        first stage whose kind shapes MDCR, so a user's system never shapes the benchmark
        it is evaluated on unless mdcr.models names it)."""
        return list(self.config.mdcr.models) or [
            name for name in self.systems.first_stages if self.systems.kind(name).shapes_mdcr
        ]

    def build_runs(self, split: str) -> list[str]:
        return [
            self.layout.run(MDCR_SETUP, split, collection.name, model)
            for collection in self.setups.collections(MDCR_SETUP, split)
            if collection.rep == 0
            for model in self.build_models
        ]

    def types_from(self, split: str) -> list[str]:
        """The validation split takes the model types the test split selected."""
        if split == "valid" and self.config.mdcr.model_selection == "auto":
            return [self.layout.mdcr_file("test", "report")]
        return []

    @cached_property
    def models(self) -> list[str]:
        """Every system with MDCR scores (a user's run: where its config gives them)."""
        return [name for name, system in self.systems.by_name.items() if system.scores_mdcr]

    def bm25_parameters(self) -> str | None:
        """BM25 scores MDCR's pairs with the field level's tuned k1/b."""
        return self.setups.bm25_parameters(MDCR_SETUP, "test")

    @cached_property
    def tables(self) -> list[str]:
        if not self.enabled or "test" not in self.splits:
            return []
        return [
            self.layout.table(name, ext)
            for name in ("table3_mdcr", "table4_mdcr_types")
            for ext in ("tsv", "md")
        ]

    def outputs(self) -> list[str]:
        """Tables 3 and 4, every split's evaluation, the construction's Jaccard tables and
        reports."""
        if not self.tables:
            return []
        outputs = list(self.tables)
        if not self.imported:
            outputs += [
                self.layout.mdcr_file(split, role)
                for split in self.splits
                for role in ("jaccard", "report")
            ]
        outputs += [
            self.layout.mdcr_eval(split, model) for split in self.splits for model in self.models
        ]
        return outputs

    @cached_property
    def held_out_files(self) -> list[str]:
        """An imported benchmark's queries are held out of encoder training (a built one's
        are the field-level queries, held out already)."""
        if not (self.enabled and self.imported):
            return []
        return [self.files(split)["benchmark"] for split in self.splits]
