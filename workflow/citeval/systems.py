"""The kinds of system citeval evaluates, each declared once with what it can do.

A *system* is anything that yields a ranking: BM25, a dense encoder, a user's
precomputed vectors or TREC runs, a fusion of other systems' runs, a cross-encoder that
reranks a first stage. Its *kind* says what the
pipeline can do with it, and every flow decision asks the kind, never a system's name:

* which jobs write one collection's run (their timing records are the run's cost in the
  reranking trade-off), and the SLURM job group that chains them with the run's metrics;
* how it scores MDCR's query-candidate pairs (``mdcr score --kind``), in which software
  environment, with which need (:data:`citeval.jobs.NEEDS`);
* whether it is a first stage (its runs exist on every collection, so they can be
  fused, reranked and listed in the local task), whether it reads embeddings;
* how far its numbers may differ between two CPUs (:mod:`citeval.drift`), which the
  regression files' tolerances follow.

:func:`systems_of` lists a config's systems in the one order every table and command
uses: BM25, the encoders (``encode.models``), the user's systems (``systems``), the
fusions, the learning-to-rank systems (``ltr``), then the reranker.
Adding a kind is a :class:`SystemKind` entry in :data:`KINDS` plus the rule that writes
its runs (docs/architecture.md, "Adding a system kind").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from citeval.drift import COMPUTED, EXACT, TRAINED, Drift, loosest

if TYPE_CHECKING:
    from citeval.config import Config


# On a cluster, each collection's chain of short jobs goes as one job (a Snakemake job
# group; local runs ignore groups): BM25's index, search and metrics, and each encoder's
# retrieval and metrics. Chains only, never side-by-side jobs, so a group asks for its
# largest job's CPUs and memory and the sum of their minutes.
BM25_CHAIN = "bm25-collection"
DENSE_CHAIN = "dense-collection"


@dataclass(frozen=True)
class SystemKind:
    """What one kind of system can do in the pipeline."""

    name: str
    # Rules whose jobs write one collection's run, in order (their timings are its cost;
    # a reranker times itself, per first stage).
    run_jobs: tuple[str, ...]
    # The job group of a collection's chain (retrieval, then metrics) on a cluster.
    chain: str | None
    # `mdcr score --kind` word (None: imported, or written by the kind's own command), the
    # need of the job that writes its MDCR scores (citeval.jobs) and its conda env.
    mdcr_score: str | None
    mdcr_job: str
    mdcr_env: str
    # Its runs exist on every collection: fused (by a later fusion), reranked, listed in
    # the local task; an ltr system's too, though no fusion may follow it.
    first_stage: bool
    # It reads the embedding store (citeval.encode), so its pools' papers are embedded.
    embeds: bool = False
    # Its runs combine other systems' runs (its members run first).
    combines: bool = False
    # A config has one system of this kind: its jobs' logs and timings carry no name.
    single: bool = False
    # Its runs give MDCR's model candidate types when mdcr.models is empty. A user's
    # system is evaluated on the benchmark but never shapes it unless named there.
    shapes_mdcr: bool = True
    # How far its numbers may differ between CPUs; a fusion's is its members' loosest,
    # and an encoder that train.models fine-tunes is trained (drift_of).
    drift: Drift = EXACT


BM25 = SystemKind(
    name="bm25",
    run_jobs=("bm25_search",),
    chain=BM25_CHAIN,
    mdcr_score="bm25",
    mdcr_job="mdcr_score_bm25",
    mdcr_env="bm25",
    first_stage=True,
    single=True,
)
ENCODER = SystemKind(
    name="encoder",
    run_jobs=("dense_retrieve",),
    chain=DENSE_CHAIN,
    mdcr_score="dense",
    mdcr_job="mdcr_score_dense",
    mdcr_env="dense",
    first_stage=True,
    embeds=True,
    drift=COMPUTED,
)
FUSION = SystemKind(
    name="fusion",
    run_jobs=("fuse",),
    chain=None,
    mdcr_score="rrf",
    mdcr_job="mdcr_score_fusion",
    mdcr_env="core",
    first_stage=True,
    combines=True,
)
# A user's precomputed paper vectors: checked and imported into the embedding store,
# then retrieved and scored as an encoder's are.
EMBEDDINGS = SystemKind(
    name="embeddings",
    run_jobs=("dense_retrieve",),
    chain=DENSE_CHAIN,
    mdcr_score="embeddings",
    mdcr_job="mdcr_score_embeddings",
    mdcr_env="dense",
    first_stage=True,
    embeds=True,
    shapes_mdcr=False,
    drift=COMPUTED,
)
# A user's TREC runs (and MDCR scores): checked against each collection and imported.
RUN = SystemKind(
    name="run",
    run_jobs=("import_run",),
    chain=None,
    mdcr_score=None,
    mdcr_job="mdcr_import_scores",
    mdcr_env="core",
    first_stage=True,
    shapes_mdcr=False,
    drift=COMPUTED,
)
# A learning-to-rank second stage (citeval.ltr): it reorders its first stage's top k from
# its feature systems' runs, so it runs after all of them (its members) and can itself be
# reranked or a later ltr system's feature; trained, so its numbers drift.
LTR = SystemKind(
    name="ltr",
    run_jobs=("ltr_rank",),
    chain=None,
    mdcr_score=None,
    mdcr_job="mdcr_score_ltr",
    mdcr_env="core",
    first_stage=True,
    combines=True,
    shapes_mdcr=False,
    drift=TRAINED,
)
RERANKER = SystemKind(
    name="reranker",
    run_jobs=(),
    chain=None,
    mdcr_score="cross-encoder",
    mdcr_job="mdcr_score_rerank",
    mdcr_env="dense",
    first_stage=False,
    drift=TRAINED,
)

KINDS: dict[str, SystemKind] = {
    kind.name: kind for kind in (BM25, ENCODER, EMBEDDINGS, RUN, FUSION, LTR, RERANKER)
}

# BM25 has one system per config, named after its kind; the others are named by the user.
BM25_SYSTEM = BM25.name


@dataclass(frozen=True)
class System:
    """One system of a config: its name (file names, table rows), kind and members."""

    name: str
    kind: SystemKind
    # A fusion's members (the systems whose runs it fuses), in the config's order.
    members: tuple[str, ...] = ()
    # It has MDCR scores (a run system only where its config gives them).
    scores_mdcr: bool = True


# What separates the systems a row's label names: `bm25>ce@10`, `bm25+oracle20>ce@20`, and
# the local tables' granularity before a space.
LABEL_PARTS = re.compile(r"[\s>+@]+")


def systems_in_label(label: str) -> list[str]:
    """The system names a table row's label is made of (and its cutoffs and words)."""
    return [part for part in LABEL_PARTS.split(label) if part]


def systems_of(config: Config) -> dict[str, System]:
    """Every system a config declares, by name, in table order: BM25, encoders, the
    user's embedding stores and runs (``systems``), fusions, then the reranker when
    reranking is on. Names are unique (citeval.config checks)."""
    systems = [System(BM25_SYSTEM, BM25)]
    systems += [System(name, ENCODER) for name in config.encode.models]
    systems += [System(entry.name, EMBEDDINGS) for entry in config.systems.embeddings]
    systems += [
        System(entry.name, RUN, scores_mdcr=(entry.mdcr or entry.mdcr_command) is not None)
        for entry in config.systems.runs
    ]
    systems += [System(f.name, FUSION, tuple(f.runs)) for f in config.fusion]
    for entry in config.ltr:
        members = tuple(dict.fromkeys([entry.first_stage, *entry.features]))
        scores_mdcr = _ltr_scores_mdcr(config, entry.features, systems)
        systems.append(System(entry.name, LTR, members, scores_mdcr))
    if config.rerank.enabled:
        systems.append(System(config.rerank.name, RERANKER))
    return {system.name: system for system in systems}


def _ltr_scores_mdcr(config: Config, features: list[str], earlier: list[System]) -> bool:
    """An ltr system scores MDCR's pairs where every feature system does and the
    benchmark is built from the corpus (its paper features read the corpus's papers)."""
    scored = {system.name for system in earlier if system.scores_mdcr}
    return config.mdcr.source == "build" and set(features) <= scored


def with_members(names: Iterable[str], members_of: Callable[[str], Iterable[str]]) -> set[str]:
    """``names`` and every system they combine (a fusion's members, an ltr system's first
    stage and features), recursively."""
    found: set[str] = set()
    pending = list(names)
    while pending:
        name = pending.pop()
        if name not in found:
            found.add(name)
            pending += members_of(name)
    return found


def first_stage_names(systems: Iterable[System]) -> list[str]:
    return [system.name for system in systems if system.kind.first_stage]


def drift_of(config: Config) -> dict[str, Drift]:
    """How far each system's numbers may differ between two CPUs, by name: its kind's, an
    encoder fine-tuned by the pipeline's, a fusion's loosest member's."""
    systems = systems_of(config)

    def drift(name: str) -> Drift:
        system = systems[name]
        if name in config.train.models:
            return TRAINED
        return loosest([system.kind.drift, *(drift(member) for member in system.members)])

    return {name: drift(name) for name in systems}
