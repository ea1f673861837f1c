"""What a config runs: every model, collection, split and output, decided before any job.

:meth:`Plan.from_config` reads a loaded :class:`citeval.config.Config` (and the corpus
paths it globs) and answers everything the rules need to know: the setups and their
collections, the models (registered, trained, fused, reranked), the MDCR splits and the
models they compare, the reranker's training collection, the trade-off's rows, the splits
held out of encoder training, and the final outputs. Paths come from
:class:`citeval.layout.Layout`; the command-line settings of a job from
:meth:`Plan.settings`, which writes :mod:`citeval.stages` entries from the config.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import msgspec

from citeval.collection_list import (
    PlannedCollection,
    planned_collections,
    pool_group,
    tuning_collections,
)
from citeval.config import Config
from citeval.inputs import expand_patterns as _expand_patterns
from citeval.inputs import input_shards
from citeval.inputs import staging_name as _shard_name
from citeval.jobs import BM25_CHAIN, DENSE_CHAIN, Jobs
from citeval.layout import LOCAL_COLLECTION, Layout, oracle_run, reranked_label, reranked_run
from citeval.settings import StageSettings

SETUP_SECTIONS = (("dataset", "dataset_level"), ("field", "field_level"))
# The reranking table adds R@10 and F1@20 (Nogueira et al., HAtten) to the configured k.
RERANK_CUTOFFS = (10, 20)


def shell_words(words: Iterable[Any]) -> str:
    """Words for a shell command line, each quoted."""
    return " ".join(shlex.quote(str(word)) for word in words)


def alternatives(names: Iterable[str]) -> str:
    """A pattern matching exactly ``names`` (none: a pattern that matches nothing)."""
    return "|".join(re.escape(name) for name in names) or "(?!)"


@dataclass(frozen=True)
class TradeoffRow:
    """One row of the reranking trade-off: a first stage alone (k 0) or reranked at k."""

    first_stage: str
    k: int
    metrics: str
    timing: str | None


@dataclass(frozen=True)
class Plan:
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

    def wildcard_constraints(self) -> dict[str, str]:
        """Each wildcard's pattern: its fixed words, or the names this config plans."""
        reranker = [self.reranker] if self.reranker else []
        return {
            "setup": "dataset|field|local",
            "split": "test|valid|train",
            "mdcr_split": "test|valid",
            "rep": r"\d+",
            "group": r"[a-z0-9-]+",
            "shard": r"[A-Za-z0-9_.-]+",
            "dense_model": alternatives(self.dense_models),
            "fusion": alternatives(self.fusions),
            "model": alternatives([*self.models, *self.local_rows.values(), *reranker]),
            "first_stage": alternatives(self.first_stages),
            "trained": alternatives(self.trained_models),
        }

    def chain_of_metrics(self, model: str) -> str | None:
        """The job group of a run's metrics: its retrieval's chain (citeval.jobs)."""
        if model == "bm25":
            return BM25_CHAIN
        return DENSE_CHAIN if model in self.dense_models else None

    def settings(self, stage: StageSettings, **values: Any) -> str:
        """A job's settings flags, shell-quoted (``values``: settings the plan derives)."""
        return shell_words(stage.argv(self.config, **values))

    # --- setups and collections --------------------------------------------------------

    @cached_property
    def setups(self) -> list[str]:
        sampling = self.config.sampling
        return [setup for setup, key in SETUP_SECTIONS if getattr(sampling, key).enabled]

    def collections(self, setup: str, split: str) -> list[PlannedCollection]:
        """Every collection of a test or validation split (citeval.collection_list)."""
        return planned_collections(setup, split, msgspec.to_builtins(self.config.sampling))

    def sample_dirs(self, splits: Iterable[str]) -> list[str]:
        return [self.layout.sample_dir(setup, split) for setup in self.setups for split in splits]

    # --- models ----------------------------------------------------------------------

    @cached_property
    def dense_models(self) -> list[str]:
        return list(self.config.encode.models)

    @cached_property
    def trained_models(self) -> dict[str, Any]:
        """Encoders trained on the corpus's citation graph that encode.models lists."""
        train = self.config.train.models
        return {name: train[name] for name in self.dense_models if name in train}

    @cached_property
    def graph_trained_models(self) -> list[str]:
        """Trained encoders whose triplets come from the citation graph."""
        return [n for n, e in self.trained_models.items() if e.sampler != "contexts"]

    @cached_property
    def context_trained_models(self) -> list[str]:
        """Trained encoders whose triplets come from the local training split (prefetchers)."""
        return [n for n, e in self.trained_models.items() if e.sampler == "contexts"]

    def anchor_sample_dirs(self, name: str) -> list[str]:
        """The sample whose query texts a trained model's anchors are (prefetchers only)."""
        return (
            [self.layout.sample_dir("local", "train")]
            if name in self.context_trained_models
            else []
        )

    def fit_sampler_arguments(self, name: str) -> list[str]:
        """``train fit`` flags that follow from the sampler: a prefetcher's anchors are
        contexts, and it trains with in-batch negatives."""
        if name not in self.context_trained_models:
            return []
        return ["--loss", "in_batch", "--anchor-papers", self.layout.query_papers("train")]

    @cached_property
    def registry(self) -> dict[str, dict[str, Any]]:
        """Every model's registry entry; a train.models entry is its base's entry loaded
        from the trained folder."""
        entries = {name: msgspec.to_builtins(e) for name, e in self.config.models.items()}
        for name, trained in self.config.train.models.items():
            entries[name] = {
                **entries[trained.base],
                "path": f"./{self.layout.trained(name, 'model')}",
            }
        return entries

    @cached_property
    def provenance_config(self) -> dict[str, Any]:
        """The config as the run used it, for the provenance record: defaults filled, and
        the trained encoders in the registry."""
        return {**msgspec.to_builtins(self.config), "models": self.registry}

    @cached_property
    def fusions(self) -> dict[str, Any]:
        return {fusion.name: fusion for fusion in self.config.fusion}

    @cached_property
    def first_stages(self) -> list[str]:
        return ["bm25", *self.dense_models, *self.fusions]

    @cached_property
    def reranker(self) -> str | None:
        return self.config.rerank.name if self.config.rerank.enabled else None

    @cached_property
    def rerank_ks(self) -> list[int]:
        return sorted(self.config.rerank.ks)

    @cached_property
    def reranked_runs(self) -> dict[str, tuple[str, int]]:
        """Reranked run name -> (first stage, K)."""
        if not self.reranker:
            return {}
        return {
            reranked_run(first_stage, self.reranker, k): (first_stage, k)
            for first_stage in self.config.rerank.first_stages
            for k in self.rerank_ks
        }

    @cached_property
    def models(self) -> list[str]:
        """Every run evaluated on the test collections: first stages, then reranked runs."""
        return [*self.first_stages, *self.reranked_runs]

    def label(self, model: str) -> str:
        """A run's name in the tables."""
        if model in self.reranked_runs:
            first_stage, k = self.reranked_runs[model]
            return reranked_label(first_stage, self.reranker or "", k)
        return model

    @cached_property
    def metric_cutoffs(self) -> list[int]:
        extra = RERANK_CUTOFFS if self.reranker else ()
        return list(dict.fromkeys([*self.config.metrics.cutoffs, *extra]))

    def uses_encoders(self, model: str) -> bool:
        fusion = self.fusions.get(model)
        return model in self.dense_models or (
            fusion is not None and any(run in self.dense_models for run in fusion.runs)
        )

    @cached_property
    def bm25_tuned(self) -> bool:
        return self.config.bm25.tune.enabled

    def bm25_tuning_collections(self, setup: str) -> list[PlannedCollection]:
        """The validation collections that tune k1/b (policy: citeval.collection_list)."""
        return tuning_collections(setup, self.collections(setup, "valid"))

    def bm25_tuning_setup(self, setup: str, split: str) -> str:
        """The setup whose tuned k1/b a split's BM25 uses (the reranker's training split has
        no validation split of its own)."""
        return self.setups[0] if split == "train" else setup

    # --- MDCR -------------------------------------------------------------------------

    @cached_property
    def mdcr_import(self) -> bool:
        return self.config.mdcr.source == "import"

    @cached_property
    def mdcr_enabled(self) -> bool:
        mdcr = self.config.mdcr
        return mdcr.enabled and (self.mdcr_import or "field" in self.setups)

    @cached_property
    def mdcr_splits(self) -> list[str]:
        """MDCR's splits (``test``, ``valid``; only its published file names say ``val``):
        built, the test split and the validation split when field-level validation queries
        are drawn; imported, every split the config names files for."""
        if self.mdcr_import:
            files = self.config.mdcr.import_
            return [split for split in ("test", "valid") if getattr(files, split) is not None]
        validation = self.config.sampling.validation.queries_per_field > 0
        return ["test", *(["valid"] if validation else [])]

    def mdcr_files(self, mdcr_split: str) -> dict[str, str]:
        """The split's benchmark and data file: built by mdcr_build, or the imported ones."""
        if self.mdcr_import:
            files = getattr(self.config.mdcr.import_, mdcr_split)
            return {"benchmark": files.benchmark, "data": files.data}
        return {
            "benchmark": self.layout.mdcr_file(mdcr_split, ".json"),
            "data": self.layout.mdcr_file(mdcr_split, "_data.jsonl"),
        }

    @cached_property
    def mdcr_build_models(self) -> list[str]:
        """Models whose rep-0 field runs the construction compares (empty config: all)."""
        return list(self.config.mdcr.models) or self.first_stages

    @cached_property
    def mdcr_models(self) -> list[str]:
        """Every model that scores MDCR pairs: the first stages, and the reranker."""
        return [*self.first_stages, *([self.reranker] if self.reranker else [])]

    def mdcr_build_runs(self, split: str) -> list[str]:
        return [
            self.layout.run("field", split, collection.name, model)
            for collection in self.collections("field", split)
            if collection.rep == 0
            for model in self.mdcr_build_models
        ]

    def mdcr_types_from(self, mdcr_split: str) -> list[str]:
        """The validation split takes the model types the test split selected."""
        if mdcr_split == "valid" and self.config.mdcr.model_selection == "auto":
            return [self.layout.mdcr_file("test", "_report.json")]
        return []

    # --- encoders --------------------------------------------------------------------

    @cached_property
    def embedding_sample_dirs(self) -> list[str]:
        """Sample folders whose pools and queries the encoders embed: every test split, the
        field-level validation split when MDCR builds its validation benchmark, and the
        reranker's training split when its first stage uses an encoder."""
        dirs = self.sample_dirs(["test"])
        if "valid" in self.mdcr_splits and self.mdcr_enabled and not self.mdcr_import:
            dirs.append(self.layout.sample_dir("field", "valid"))
        if self.reranker and self.uses_encoders(self.config.rerank.train.first_stage):
            dirs.append(self.layout.sample_dir("dataset", "train"))
        if self.local_dense_models:
            dirs += [self.layout.sample_dir("local", split) for split in self.local_splits]
        if self.local_train_run and self.uses_encoders(self.config.local.train.first_stage):
            dirs.append(self.layout.sample_dir("local", "train"))
        return dirs

    def embedding_shards(self, model: str) -> list[str]:
        return [
            self.layout.embedding_shard(model, index)
            for index in range(self.config.encode.num_shards)
        ]

    # --- reranking -------------------------------------------------------------------

    @cached_property
    def rerank_train_collection(self) -> str:
        return f"{pool_group(self.config.rerank.train.pool_size)}.rep0"

    @cached_property
    def tradeoff_collection(self) -> str | None:
        """HAtten's Table 4 is one collection: the largest dataset-level pool, rep 0."""
        if not self.reranker or "dataset" not in self.setups:
            return None
        return f"{pool_group(max(self.config.sampling.dataset_level.pool_sizes))}.rep0"

    def first_stage_timings(self, model: str, collection: str) -> list[str]:
        """The timing records of the jobs that make a first stage's dataset-level test run:
        the trade-off reads their wall time as the first stage's cost."""
        return self.first_stage_timings_at(model, ("dataset-test", collection))

    def _tradeoff_rows(
        self, where: tuple[str, str, str], first_stages: list[str], reranker: str, ks: list[int]
    ) -> list[TradeoffRow]:
        """Each first stage alone (K 0) and reranked at every K, on ``where`` (setup,
        split, collection)."""
        layout = self.layout
        rows = []
        for first_stage in first_stages:
            rows.append(TradeoffRow(first_stage, 0, layout.metrics(*where, first_stage), None))
            timing = layout.rerank_timing(reranker, *where, first_stage)
            for k in ks:
                metrics = layout.metrics(*where, reranked_run(first_stage, reranker, k))
                rows.append(TradeoffRow(first_stage, k, metrics, timing))
        return rows

    def _tradeoff_arguments(
        self, where: tuple[str, str, str], first_stages: list[str], rows: list[TradeoffRow]
    ) -> str:
        """``rerank tradeoff``'s first stages (their jobs' timings) and entries."""
        setup, split, collection = where
        words: list[Any] = []
        for first_stage in first_stages:
            words += ["--first-stage", first_stage]
            words += self.first_stage_timings_at(first_stage, (f"{setup}-{split}", collection))
        for row in rows:
            words += ["--entry", row.first_stage, row.k, row.metrics]
            words += [row.timing] if row.timing else []
        return shell_words(words)

    @cached_property
    def tradeoff_rows(self) -> list[TradeoffRow]:
        collection = self.tradeoff_collection
        if collection is None:
            return []
        where = ("dataset", "test", collection)
        first_stages = self.config.rerank.first_stages
        return self._tradeoff_rows(where, first_stages, self.reranker or "", self.rerank_ks)

    @cached_property
    def tradeoff_timings(self) -> list[str]:
        collection = self.tradeoff_collection
        if collection is None:
            return []
        return sorted(
            {
                path
                for first_stage in self.config.rerank.first_stages
                for path in self.first_stage_timings(first_stage, collection)
            }
        )

    def tradeoff_arguments(self) -> str:
        where = ("dataset", "test", self.tradeoff_collection or "")
        return self._tradeoff_arguments(where, self.config.rerank.first_stages, self.tradeoff_rows)

    # --- encoder training ---------------------------------------------------------------

    @cached_property
    def held_out_sample_dirs(self) -> list[str]:
        """Every test and validation split, the local task's too: their queries (the local
        contexts' citing papers) never enter the training graph."""
        local = [self.layout.sample_dir("local", split) for split in self.local_splits]
        return self.sample_dirs(["test", "valid"]) + (local if self.local_enabled else [])

    @cached_property
    def held_out_mdcr_files(self) -> list[str]:
        """An imported MDCR benchmark's queries are held out too (a built one's are the
        field-level queries, held out already)."""
        if not (self.mdcr_enabled and self.mdcr_import):
            return []
        return [self.mdcr_files(split)["benchmark"] for split in self.mdcr_splits]

    # --- local citation recommendation ------------------------------------------------

    @cached_property
    def local_enabled(self) -> bool:
        return self.config.local.enabled

    @cached_property
    def local_inputs(self) -> dict[str, str]:
        """Staging name -> full-text or curated-contexts input file (synthetic: one per
        metadata shard, written by rule synth)."""
        if not self.local_enabled:
            return {}
        patterns = self.config.local.input.paths
        if self.config.corpus.synthetic is not None:
            return {shard: patterns[0].format(shard=shard) for shard in self.shards}
        inputs: dict[str, str] = {}
        for path in _expand_patterns(patterns):
            name = _shard_name(path)
            if name in inputs:
                raise ValueError(f"two local inputs map to the same staging name {name!r}: {path}")
            inputs[name] = path
        return inputs

    @cached_property
    def local_query_year(self) -> int:
        return self.config.local.query_year or self.config.sampling.query_year

    @cached_property
    def local_splits(self) -> list[str]:
        """The evaluated splits: test, and validation unless its share is 0."""
        return ["test", *(["valid"] if self.config.local.valid_fraction > 0 else [])]

    @cached_property
    def local_models(self) -> list[str]:
        """The local tables' rows (local.models)."""
        return list(self.config.local.models) if self.local_enabled else []

    @cached_property
    def local_reranker(self) -> str | None:
        """The local task's cross-encoder (rerank.name), when local.rerank is on."""
        enabled = self.local_enabled and self.config.local.rerank.enabled
        return self.config.rerank.name if enabled else None

    @cached_property
    def local_reranked_runs(self) -> dict[str, tuple[str, int]]:
        """Reranked local run name -> (first stage, K)."""
        if not self.local_reranker:
            return {}
        rerank = self.config.local.rerank
        return {
            reranked_run(first_stage, self.local_reranker, k): (first_stage, k)
            for first_stage in rerank.first_stages
            for k in sorted(rerank.ks)
        }

    @cached_property
    def local_oracle_runs(self) -> dict[str, tuple[str, int]]:
        """HAtten's oracle prefetch runs (local.rerank.oracle): name -> (first stage, K)."""
        if not (self.local_reranker and self.config.local.rerank.oracle):
            return {}
        rerank = self.config.local.rerank
        return {
            oracle_run(first_stage, k): (first_stage, k)
            for first_stage in rerank.first_stages
            for k in sorted(rerank.ks)
        }

    @cached_property
    def local_rows(self) -> dict[str, str]:
        """The local tables' rows: table label -> run name (local.models, reranked runs,
        the oracle prefetch reranked at its K)."""
        name = self.local_reranker or ""
        rows = {model: model for model in self.local_models}
        for run, (first_stage, k) in self.local_reranked_runs.items():
            rows[reranked_label(first_stage, name, k)] = run
        for oracle, (_, k) in self.local_oracle_runs.items():
            rows[reranked_label(oracle, name, k)] = reranked_run(oracle, name, k)
        return rows

    @cached_property
    def local_train_run(self) -> str | None:
        """The training split's first-stage run, when a prefetcher or the local reranker
        trains on it."""
        if not (self.context_trained_models or self.local_reranker):
            return None
        first_stage = self.config.local.train.first_stage
        return self.layout.run("local", "train", LOCAL_COLLECTION, first_stage)

    @cached_property
    def local_runs(self) -> list[str]:
        """Every first-stage run the local rows need: the rows, the runs their fusions
        fuse and the reranked first stages."""
        rerank = self.config.local.rerank
        needed = {*self.local_models, *(rerank.first_stages if self.local_reranker else [])}
        for model in list(needed):
            if model in self.fusions:
                needed.update(self.fusions[model].runs)
        return [model for model in self.first_stages if model in needed]

    @cached_property
    def local_dense_models(self) -> list[str]:
        return [model for model in self.local_runs if model in self.dense_models]

    @cached_property
    def local_cutoffs(self) -> list[int]:
        """local.cutoffs, and 10 for NDCG@10."""
        return sorted({*self.config.local.cutoffs, 10})

    def metric_cutoffs_of(self, setup: str) -> list[int]:
        return self.local_cutoffs if setup == "local" else self.metric_cutoffs

    def retrieval_k(self, setup: str) -> int:
        """Candidates per query: local.k for the local task, else retrieval.k."""
        return self.config.local.k if setup == "local" else self.config.retrieval.k

    def local_metrics(self, split: str) -> dict[str, str]:
        return {
            label: self.layout.metrics("local", split, LOCAL_COLLECTION, run)
            for label, run in self.local_rows.items()
        }

    def local_table(self, split: str, ext: str = "tsv") -> str:
        return self.layout.table(f"local_{split}", ext)

    def local_outputs(self) -> list[str]:
        tables = [
            self.local_table(split, ext)
            for split in (self.local_splits if self.local_enabled else [])
            for ext in ("tsv", "md")
        ]
        if self.local_reranker:
            tables += [self.layout.table("local_tradeoff", ext) for ext in ("tsv", "md", "png")]
        return tables

    def first_stage_timings_at(self, model: str, where: tuple[str, str]) -> list[str]:
        """The timing records of the jobs that make a first stage's run in ``where``
        (``(<setup>-<split>, <collection>)``); a fusion: its inputs' too."""
        layout = self.layout
        if model == "bm25":
            return [layout.timing("bm25_search", *where)]
        if model in self.dense_models:
            return [layout.timing("dense_retrieve", *where, model)]
        inputs = [
            path
            for run in self.fusions[model].runs
            for path in self.first_stage_timings_at(run, where)
        ]
        return [*inputs, layout.timing("fuse", *where, model)]

    def local_tradeoff_arguments(self) -> tuple[str, list[str]]:
        """``rerank tradeoff`` arguments of the local test split, and the files they read."""
        where = ("local", "test", LOCAL_COLLECTION)
        rerank = self.config.local.rerank
        reranker = self.local_reranker or ""
        rows = self._tradeoff_rows(where, rerank.first_stages, reranker, sorted(rerank.ks))
        timings = {
            path
            for first_stage in rerank.first_stages
            for path in self.first_stage_timings_at(first_stage, ("local-test", LOCAL_COLLECTION))
        }
        files = timings | {row.metrics for row in rows} | {row.timing for row in rows if row.timing}
        return self._tradeoff_arguments(where, rerank.first_stages, rows), sorted(files)

    # --- tables and final outputs ---------------------------------------------------

    @cached_property
    def tables(self) -> dict[str, str]:
        """The report's tables: caption (report/<caption>.rst) -> TSV path."""
        setups, tables = self.setups, []
        tables.append(("table1", "table1_dataset_level", "dataset" in setups))
        for caption, name in (
            ("table2", "table2_field_level_map"),
            ("table7", "table7_field_level_ndcg"),
            ("table8", "table8_field_level_recall"),
        ):
            tables.append((caption, name, "field" in setups))
        rerank_table = bool(self.reranker) and "dataset" in setups
        tables.append(("table_rerank", "table_rerank_dataset_level", rerank_table))
        return {caption: self.layout.table(name) for caption, name, present in tables if present}

    @cached_property
    def mdcr_tables(self) -> list[str]:
        if not self.mdcr_enabled or "test" not in self.mdcr_splits:
            return []
        return [
            self.layout.table(name, ext)
            for name in ("table3_mdcr", "table4_mdcr_types")
            for ext in ("tsv", "md")
        ]

    @cached_property
    def plot_sources(self) -> dict[str, tuple[str, str]]:
        """Figure name -> (the plots command's flag, the table TSV it is drawn from)."""
        sources = {
            "map_by_pool_size": ("table1", self.tables.get("table1")),
            "field_map": ("table2", self.tables.get("table2")),
            "mdcr_types": ("table4", self.mdcr_tables[2] if self.mdcr_tables else None),
        }
        return {name: (flag, table) for name, (flag, table) in sources.items() if table}

    def test_metric_files(self) -> list[str]:
        return [
            self.layout.metrics(setup, "test", collection.name, model)
            for setup in self.setups
            for collection in self.collections(setup, "test")
            for model in self.models
        ]

    def mdcr_outputs(self) -> list[str]:
        """Tables 3 and 4, every split's evaluation, the construction's Jaccard tables and
        reports."""
        if not self.mdcr_tables:
            return []
        outputs = list(self.mdcr_tables)
        if not self.mdcr_import:
            outputs += [
                self.layout.mdcr_file(split, suffix)
                for split in self.mdcr_splits
                for suffix in ("_jaccard.tsv", "_report.json")
            ]
        outputs += [
            self.layout.mdcr_eval(split, model)
            for split in self.mdcr_splits
            for model in self.mdcr_models
        ]
        return outputs

    def tradeoff_outputs(self) -> list[str]:
        if self.tradeoff_collection is None:
            return []
        return [self.layout.table("tradeoff", ext) for ext in ("tsv", "md", "png")]

    def final_outputs(self) -> list[str]:
        return [
            self.layout.table("provenance", "json"),
            *(self.layout.plot(name) for name in self.plot_sources),
            *self.test_metric_files(),
            *self.mdcr_outputs(),
            *self.tradeoff_outputs(),
            *self.local_outputs(),
        ]
