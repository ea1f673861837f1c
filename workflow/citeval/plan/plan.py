"""What a config runs, decided before any job: :class:`Plan` composes one part per
concern, each a small class with its own tests (tests/test_plan.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from citeval.config import Config
from citeval.inputs import input_shards
from citeval.jobs import Jobs
from citeval.layout import LOCAL_SETUP, Layout
from citeval.plan.encoders import Encoders
from citeval.plan.local import Local
from citeval.plan.ltr import LearningToRank
from citeval.plan.mdcr import Mdcr
from citeval.plan.outputs import Outputs
from citeval.plan.patterns import alternatives
from citeval.plan.rerank import Rerank
from citeval.plan.setups import Setups
from citeval.plan.systems import Systems
from citeval.plan.training import Training
from citeval.systems import FUSION, LTR


@dataclass(frozen=True)
class Plan:
    """A config's plan: ``setups``, ``systems``, ``training``, ``mdcr``, ``rerank``,
    ``local``, ``encoders`` and ``outputs``; paths from ``layout``."""

    config: Config
    layout: Layout
    shards: dict[str, tuple[str, str]] = field(repr=False)

    @classmethod
    def from_config(cls, config: Config) -> Plan:
        return cls(config, Layout.for_dataset(config.dataset), input_shards(config))

    @cached_property
    def jobs(self) -> Jobs:
        """Each rule's threads and resources (citeval.jobs)."""
        return Jobs.from_config(self.config)

    @cached_property
    def setups(self) -> Setups:
        return Setups(self.config, self.layout)

    @cached_property
    def systems(self) -> Systems:
        return Systems(self.config, self.layout)

    @cached_property
    def training(self) -> Training:
        return Training(self.config, self.layout, tuple(self.systems.encoders))

    @cached_property
    def mdcr(self) -> Mdcr:
        return Mdcr(self.config, self.layout, self.setups, self.systems)

    @cached_property
    def rerank(self) -> Rerank:
        return Rerank(self.config, self.layout, self.setups, self.systems)

    @cached_property
    def ltr(self) -> LearningToRank:
        return LearningToRank(self.config, self.layout, self.systems, self.rerank, self.local)

    @cached_property
    def local(self) -> Local:
        return Local(self.config, self.layout, self.systems, self.training, self.shards)

    @cached_property
    def encoders(self) -> Encoders:
        return Encoders(
            self.config, self.layout, self.setups, self.systems, self.mdcr, self.local, self.ltr
        )

    @cached_property
    def outputs(self) -> Outputs:
        return Outputs(
            self.config,
            self.layout,
            self.setups,
            self.systems,
            self.mdcr,
            self.rerank,
            self.local,
            self.training,
            self.ltr,
        )

    @cached_property
    def training_split(self) -> bool:
        """Whether a learned second stage (the reranker, an ltr system) trains on the
        dataset-level training split (citeval.plan.rerank.TRAIN_SETUP)."""
        return bool(self.systems.reranker or self.ltr.names)

    @cached_property
    def held_out_sample_dirs(self) -> list[str]:
        """Every test and validation split, the local task's too: their queries (the local
        contexts' citing papers) never enter the training graph."""
        local = self.local.sample_dirs() if self.local.enabled else []
        return self.setups.sample_dirs(["test", "valid"]) + local

    def wildcard_constraints(self) -> dict[str, str]:
        """Each wildcard's pattern: its fixed words, or the names this config plans."""
        systems = self.systems
        reranker = [systems.reranker] if systems.reranker else []
        return {
            "setup": "dataset|field|local",
            "split": "test|valid|train",
            "mdcr_split": "test|valid",
            "rep": r"\d+",
            "group": r"[a-z0-9-]+",
            "shard": r"[A-Za-z0-9_.-]+",
            "dense_model": alternatives(systems.vector_models),
            "store": alternatives(systems.stores),
            "imported_run": alternatives(systems.imported_runs),
            "fusion": alternatives(systems.of_kind(FUSION)),
            "ltr": alternatives(systems.of_kind(LTR)),
            "model": alternatives([*systems.runs, *self.local.rows.values(), *reranker]),
            "first_stage": alternatives(systems.first_stages),
            "trained": alternatives(self.training.models),
        }

    def metric_cutoffs(self, setup: str) -> list[int]:
        """The cutoffs a setup's runs are evaluated at: the local task's, or the global
        tables'."""
        return self.local.cutoffs if setup == LOCAL_SETUP else self.systems.metric_cutoffs
