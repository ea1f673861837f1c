"""What each rule's job asks its executor for: CPUs, memory, minutes and a GPU.

One table, :data:`NEEDS`, holds every rule's need; :class:`Jobs` turns it into the
``threads:`` and ``resources:`` of the rules with the config's ``jobs`` section
(``threads``, ``gpu``, ``memory_limit``). The rules carry no numbers of their own and the
SLURM profile sets no per-rule values: a cluster's limits live in its partitions file
(``profiles/slurm/partitions.yaml``), from which the executor plugin picks each job's
partition, and :mod:`citeval.slurm` refuses a job no partition can hold.

Memory is the sum of a fixed part, a share of ``jobs.memory_limit`` (the stages that
run DuckDB within that limit) and a multiple of the job's input size (the stages that hold
their input in memory), so it follows the config and the data, not a profile. None of it
changes a result: locally only ``--cores`` (and ``--resources`` where given) constrain
jobs, and every stage's output is the same for any thread count.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from citeval.config import Config
from citeval.memory import memory_bytes


@dataclass(frozen=True)
class Need:
    """One rule's need: ``minutes`` of wall time and ``mem_mb`` plus the shares below."""

    minutes: int
    mem_mb: int = 1000
    # Multiples of jobs.memory_limit (in MB) and of the job's input size (in MB) added.
    per_memory_limit: float = 0.0
    per_input_mb: float = 0.0
    # Uses jobs.threads CPUs (else one).
    threaded: bool = False
    # Runs a model: asks for a GPU when jobs.gpu is on.
    model: bool = False


_FAN_IN = Need(10)  # plots, fusion, metrics, trade-offs: small files in, small files out
_MODEL = Need(240, 8000, threaded=True, model=True)

NEEDS: dict[str, Need] = {
    # corpus
    "synth": Need(60, 2000),
    "ingest_parse": Need(60, 1500),  # one input file, a chunk at a time
    "ingest_merge": Need(720, 1000, per_memory_limit=1.5, threaded=True),
    "prefilter": Need(60, 1000, per_memory_limit=1.5, threaded=True),
    "sample": Need(120, 2000, per_memory_limit=1.0, threaded=True),
    "embed_ids": Need(30, 2000),
    # BM25: the analyzer runs DuckDB within the limit, the JVM and its batches on top.
    "bm25_analyze": Need(720, 2000, per_memory_limit=1.0, threaded=True),
    "bm25_index": Need(120, 4000),
    "bm25_tune": Need(720, 4000, threaded=True),
    "bm25_search": Need(240, 4000, threaded=True),
    # encoders: float16 shards become one float32 matrix of the pool (at most the corpus).
    "encode": Need(480, 8000, threaded=True, model=True),
    "encode_query_papers": Need(480, 8000, threaded=True, model=True),
    "dense_retrieve": Need(240, 4000, per_input_mb=2.0, threaded=True),
    "fuse": _FAN_IN,
    # Users' systems (systems.*): their own commands, then the checks and imports.
    "external_store": Need(480, 8000),
    "external_run": Need(60, 4000),
    "external_mdcr": Need(60, 4000),
    "import_embeddings": Need(120, 2000),
    "import_context_embeddings": Need(30, 2000),
    "import_run": Need(10, 2000),
    "metrics": _FAN_IN,
    "tables": Need(30),
    "plots": _FAN_IN,
    "learning": _FAN_IN,
    # MDCR
    "mdcr_build": Need(60, 4000, threaded=True),
    "mdcr_score_bm25": Need(120, 4000, threaded=True),
    "mdcr_score_dense": _MODEL,
    "mdcr_score_fusion": Need(30, 2000),
    "mdcr_score_embeddings": Need(30, 4000),
    "mdcr_import_scores": Need(10, 2000),
    "mdcr_score_rerank": _MODEL,
    "mdcr_evaluate": Need(30, 2000),
    "mdcr_tables": Need(60),
    # reranking
    "sample_train": Need(60, 4000, threaded=True),
    "rerank_train": Need(720, 8000, threaded=True, model=True),
    "rerank": _MODEL,
    "rerank_tradeoff": _FAN_IN,
    # learning to rank: one thread (deterministic trees); DuckDB joins the training graph
    # within the limit, the candidates' features and citing years are held beside it.
    "ltr_train": Need(60, 2000, per_memory_limit=1.0),
    "ltr_train_local": Need(60, 2000, per_memory_limit=1.0),
    "ltr_rank": Need(60, 2000, per_memory_limit=1.0),
    "mdcr_score_ltr": Need(60, 2000, per_memory_limit=1.0),
    "ltr_importance": _FAN_IN,
    # encoders trained on the citation graph
    "train_graph": Need(60, 4000, threaded=True),
    "train_graph_embedding": Need(240, 8000, threaded=True),
    "train_triplets": Need(240, 8000, threaded=True),
    "train_encoder": Need(1440, 8000, threaded=True, model=True),
    # local citation recommendation
    # One pdf_parses shard, its contexts held until sorted: about 1.1 KB a context, so an
    # S2ORC shard of 127k papers at 25-40 contexts a paper needs 3.5-5.6 GB.
    "contexts_extract": Need(240, 6000),
    "contexts_merge": Need(720, 1000, per_memory_limit=1.0, threaded=True),
    "local_sample": Need(60, 1000, per_memory_limit=1.0, threaded=True),
    "local_triplets": Need(60, 4000),
    "encode_local_queries": Need(480, 8000, threaded=True, model=True),
    "local_tables": _FAN_IN,
    "local_rerank_train": Need(1440, 8000, threaded=True, model=True),
    "local_rerank": Need(480, 8000, threaded=True, model=True),
    "local_oracle": Need(30, 2000),
    "local_rerank_oracle": _MODEL,
    "local_tradeoff": _FAN_IN,
    # exports on demand: a pool's papers stream from the corpus through DuckDB; MDCR's
    # benchmark and data file are held in memory.
    "export_beir": Need(60, 2000, per_memory_limit=1.0, threaded=True),
    "export_beir_mdcr": Need(30, 2000),
}


@dataclass(frozen=True)
class Jobs:
    """Every rule's ``threads:`` and ``resources:`` under one config."""

    threads_per_job: int
    gpu: bool
    memory_limit_mb: int

    @classmethod
    def from_config(cls, config: Config) -> Jobs:
        return cls(
            threads_per_job=config.jobs.threads,
            gpu=config.jobs.gpu,
            memory_limit_mb=int(memory_bytes(config.jobs.memory_limit) / 1e6),
        )

    @staticmethod
    def need(rule: str) -> Need:
        try:
            return NEEDS[rule]
        except KeyError:
            raise KeyError(f"rule {rule!r} has no entry in citeval.jobs.NEEDS") from None

    def threads(self, rule: str) -> int:
        return self.threads_per_job if self.need(rule).threaded else 1

    def resources(self, rule: str) -> dict[str, Any]:
        """The rule's ``resources:``: ``mem_mb`` (a function of the input where it grows
        with it), ``runtime`` in minutes, and ``gpu: 1`` for a model job when GPUs are on."""
        need = self.need(rule)
        fixed = need.mem_mb + round(need.per_memory_limit * self.memory_limit_mb)
        resources: dict[str, Any] = {
            "mem_mb": _growing_with_input(fixed, need.per_input_mb) if need.per_input_mb else fixed,
            "runtime": need.minutes,
        }
        if need.model and self.gpu:
            resources["gpu"] = 1
        return resources


def _growing_with_input(fixed_mb: int, per_input_mb: float) -> Callable[..., int]:
    # Snakemake passes the job's input under this name.
    def mem_mb(wildcards: Any, input: Any) -> int:
        return fixed_mb + round(per_input_mb * input.size_mb)

    return mem_mb
