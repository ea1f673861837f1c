"""How far a system's numbers may differ between two machines: what computes them.

Two CPUs of the same kind can compute one model differently: torch picks its vector
kernels at run time (AVX2 or AVX-512: ``ATEN_CPU_CAPABILITY``), and BLAS its blocking, so
floating-point sums are added in another order. Nothing else in the pipeline depends on
the CPU. Each system kind declares its drift (:class:`citeval.systems.SystemKind`), and
the regression files give each drift a tolerance measured for their config
(:mod:`citeval.regressions`): counting stays exact, a model's numbers get the room its
arithmetic takes, and a trained model's the room its training takes.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Drift:
    """One class of cells; a larger ``rank`` may move further."""

    name: str
    rank: int
    why: str


EXACT = Drift(
    "exact",
    0,
    "counted, or computed in a fixed order: sampling, BM25 (Lucene's and the impact "
    "index's arithmetic), fusion by ranks, metrics of fixed runs, MDCR's construction "
    "from them. The same on every CPU.",
)
COMPUTED = Drift(
    "computed",
    1,
    "a model's forward pass with given weights (an encoder, a user's vectors or runs made "
    "by a program): other vector kernels add in another order, so scores differ in the "
    "last bits and a near-tie between two candidates can swap.",
)
TRAINED = Drift(
    "trained",
    2,
    "weights trained by the pipeline (the reranker, encoders fine-tuned on the citation "
    "graph, the prefetcher): the rounding differences compound over every training step, "
    "so the model itself differs, and with it every rank it gives.",
)
DRIFTS: dict[str, Drift] = {drift.name: drift for drift in (EXACT, COMPUTED, TRAINED)}


def loosest(drifts: list[Drift]) -> Drift:
    """The drift of a number several systems make (a fusion, a reranked run): the
    loosest of theirs; :data:`EXACT` for none."""
    return max(drifts, key=lambda drift: drift.rank, default=EXACT)
