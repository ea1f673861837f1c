"""Reranking: the reranker's training collection and the speed/accuracy trade-off rows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from citeval.collection_list import pool_group
from citeval.config import Config
from citeval.layout import Layout, reranked_run, split_name
from citeval.plan.setups import Setups
from citeval.plan.systems import Systems
from citeval.systems import LTR

# The reranker trains on a dataset-level training split; HAtten's trade-off is dataset-level.
TRAIN_SETUP = "dataset"
TRADEOFF_SETUP = "dataset"


@dataclass(frozen=True)
class TradeoffRow:
    """One row of the reranking trade-off: a first stage alone (k 0) or reranked at k."""

    first_stage: str
    k: int
    metrics: str
    timing: str | None


@dataclass(frozen=True)
class Tradeoff:
    """One trade-off figure: where (setup, split, collection), its rows and the timing
    records of its first stages' jobs."""

    where: tuple[str, str, str]
    rows: list[TradeoffRow]
    first_stage_timings: dict[str, list[str]]

    @property
    def inputs(self) -> list[str]:
        """Every file the figure reads."""
        files = {path for paths in self.first_stage_timings.values() for path in paths}
        files |= {row.metrics for row in self.rows} | {
            row.timing for row in self.rows if row.timing
        }
        return sorted(files)


def tradeoff(
    layout: Layout,
    systems: Systems,
    where: tuple[str, str, str],
    first_stages: Sequence[str],
    reranker: str,
    ks: Sequence[int],
    alone: Sequence[str] = (),
) -> Tradeoff:
    """Each first stage alone (K 0) and reranked at every K, on ``where``; the ``alone``
    systems (the learned combinations) as points of their own."""
    setup, split, collection = where
    rows = []
    for first_stage in first_stages:
        rows.append(TradeoffRow(first_stage, 0, layout.metrics(*where, first_stage), None))
        timing = layout.rerank_timing(reranker, *where, first_stage)
        for k in ks:
            metrics = layout.metrics(*where, reranked_run(first_stage, reranker, k))
            rows.append(TradeoffRow(first_stage, k, metrics, timing))
    shown = [*first_stages, *(name for name in alone if name not in first_stages)]
    rows += [
        TradeoffRow(name, 0, layout.metrics(*where, name), None)
        for name in shown[len(first_stages) :]
    ]
    at = (split_name(setup, split), collection)
    timings = {name: systems.run_timings(name, at) for name in shown}
    return Tradeoff(where, rows, timings)


@dataclass(frozen=True)
class Rerank:
    config: Config
    layout: Layout
    setups: Setups
    systems: Systems

    @cached_property
    def train_collection(self) -> str:
        return f"{pool_group(self.config.rerank.train.pool_size)}.rep0"

    @cached_property
    def tradeoff_collection(self) -> str | None:
        """HAtten's Table 4 is one collection: the largest dataset-level pool, rep 0."""
        if not self.systems.reranker or TRADEOFF_SETUP not in self.setups.names:
            return None
        return f"{pool_group(max(self.config.sampling.dataset_level.pool_sizes))}.rep0"

    @cached_property
    def tradeoff(self) -> Tradeoff | None:
        collection = self.tradeoff_collection
        if collection is None:
            return None
        where = (TRADEOFF_SETUP, "test", collection)
        return tradeoff(
            self.layout,
            self.systems,
            where,
            self.config.rerank.first_stages,
            self.systems.reranker or "",
            self.systems.rerank_ks,
            alone=self.systems.of_kind(LTR),
        )

    def outputs(self) -> list[str]:
        if self.tradeoff_collection is None:
            return []
        return [self.layout.table("tradeoff", ext) for ext in ("tsv", "md", "png")]
