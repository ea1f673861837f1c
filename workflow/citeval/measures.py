"""Every retrieval measure, declared once, and the measures each table shows.

A measure *kind* (:class:`Kind`) is declared once, below: its name in the metrics files
(``recall``), how it is computed (a trec_eval measure, through pytrec_eval, or derived from
other kinds, as F1@k from P@k and R@k), whether it takes a cutoff, and its label in the
tables (``R``, shown ``R@30``). A :class:`Measure` is a kind with its cutoff, written as in
ir_measures: ``RECALL @ 30``. A kind without a cutoff is a measure already (:data:`MAP`,
:data:`NDCG`, :data:`MRR`)::

    measure          in metrics files   computed as                     table label
    MAP              map                trec_eval map                   MAP
    NDCG             ndcg               trec_eval ndcg                  NDCG
    MRR              recip_rank         trec_eval recip_rank            MRR
    NDCG_CUT @ k     ndcg_cut_k         trec_eval ndcg_cut.k            NDCG@k
    RECALL @ k       recall_k           trec_eval recall.k              R@k
    PRECISION @ k    P_k                trec_eval P.k                   P@k
    F1 @ k           f1_k               2PR / (P + R) of P.k, recall.k  F1@k

Each table declares its columns as a list of measures (:func:`table1_measures`,
:func:`rerank_table_measures`, :func:`field_table_measures`, :func:`local_table_measures`,
:data:`MDCR_MEASURES`, :data:`TRADEOFF_MEASURES`), and the cutoffs a run is evaluated at
follow from the tables that read it (:func:`global_metric_cutoffs`,
:func:`local_metric_cutoffs`). This module imports nothing heavy: the plan calls it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

# --- kinds and measures ----------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Kind:
    """One kind of measure; kinds are singletons, compared by identity.

    ``name``: in the metrics files (``recall``; with a cutoff ``recall_30``). ``label``:
    in the tables (``R``; with a cutoff ``R@30``). ``cutoff``: whether it takes one.
    Computed either by trec_eval's measure ``trec_eval`` (pytrec_eval asks for
    ``recall.30`` and answers ``recall_30``), or from the values of the kinds ``parts``
    (at the same cutoff) by ``combine``.
    """

    name: str
    label: str
    cutoff: bool = False
    trec_eval: str | None = None
    parts: tuple[Kind, ...] = ()
    combine: Callable[..., float] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        derived = bool(self.parts) and self.combine is not None
        if (self.trec_eval is None) != derived:
            raise ValueError(f"kind {self.name!r}: give either trec_eval or parts and combine")
        if any(part.cutoff != self.cutoff for part in self.parts):
            raise ValueError(f"kind {self.name!r}: its parts must take a cutoff as it does")

    @property
    def pattern(self) -> str:
        """How a name of this kind is written: ``map``, ``recall_<k>``."""
        return f"{self.name}_<k>" if self.cutoff else self.name

    def __matmul__(self, k: int) -> Measure:
        """``RECALL @ 30``: this kind at cutoff ``k``."""
        if not self.cutoff:
            raise TypeError(f"{self.label} takes no cutoff")
        return Measure(self, k)

    def __str__(self) -> str:
        return self.pattern


@dataclass(frozen=True)
class Measure:
    """A kind at its cutoff (``k`` is None for a kind without one)."""

    kind: Kind
    k: int | None = None

    def __post_init__(self) -> None:
        if self.kind.cutoff != (self.k is not None):
            needs = "needs a cutoff" if self.kind.cutoff else "takes no cutoff"
            raise ValueError(f"measure {self.kind.pattern!r} {needs}")
        if self.k is not None and (isinstance(self.k, bool) or not isinstance(self.k, int)):
            raise TypeError(f"a cutoff is an integer, got {self.k!r}")
        if self.k is not None and self.k < 1:
            raise ValueError(f"cutoffs must be >= 1, got {self.k}")

    @property
    def name(self) -> str:
        """The name in the metrics files: ``map``, ``recall_30``."""
        return self.kind.name if self.k is None else f"{self.kind.name}_{self.k}"

    @property
    def label(self) -> str:
        """The label in the tables: ``MAP``, ``R@30``."""
        return self.kind.label if self.k is None else f"{self.kind.label}@{self.k}"

    def _at_cutoff(self, kind: Kind) -> Measure:
        return Measure(kind, self.k)

    @property
    def trec_eval(self) -> frozenset[str]:
        """What to ask pytrec_eval for: ``{"recall.30"}``; a derived measure, its parts."""
        if self.kind.trec_eval is None:
            return frozenset().union(*(self._at_cutoff(part).trec_eval for part in self.kind.parts))
        return frozenset(
            {self.kind.trec_eval if self.k is None else f"{self.kind.trec_eval}.{self.k}"}
        )

    def value(self, computed: Mapping[str, float]) -> float:
        """This measure from pytrec_eval's values of one query (keys ``recall_30``, ...)."""
        kind = self.kind
        if kind.trec_eval is None:
            assert kind.combine is not None
            return kind.combine(*(self._at_cutoff(part).value(computed) for part in kind.parts))
        return computed[kind.trec_eval if self.k is None else f"{kind.trec_eval}_{self.k}"]

    def __str__(self) -> str:
        return self.name


def f1(precision: float, recall: float) -> float:
    """2·P·R / (P + R), 0 when both are 0."""
    both = precision + recall
    return 2.0 * precision * recall / both if both > 0 else 0.0


MAP = Measure(Kind("map", "MAP", trec_eval="map"))
NDCG = Measure(Kind("ndcg", "NDCG", trec_eval="ndcg"))
MRR = Measure(Kind("recip_rank", "MRR", trec_eval="recip_rank"))
NDCG_CUT = Kind("ndcg_cut", "NDCG", cutoff=True, trec_eval="ndcg_cut")
RECALL = Kind("recall", "R", cutoff=True, trec_eval="recall")
PRECISION = Kind("P", "P", cutoff=True, trec_eval="P")
F1 = Kind("f1", "F1", cutoff=True, parts=(PRECISION, RECALL), combine=f1)

KINDS: tuple[Kind, ...] = (MAP.kind, NDCG.kind, MRR.kind, NDCG_CUT, RECALL, PRECISION, F1)
"""Every kind, in the order the parse error lists them."""

_BY_NAME = {kind.name: kind for kind in KINDS}
_CUTOFF_NAME = re.compile(
    "(?P<name>{})_(?P<k>[0-9]+)".format("|".join(re.escape(k.name) for k in KINDS if k.cutoff))
)


def parse_measure(text: str) -> Measure:
    """``"map"``, ``"ndcg"``, ``"recip_rank"`` or ``"<name>_<k>"`` (k >= 1, no leading 0)."""
    kind = _BY_NAME.get(text)
    if kind is not None and not kind.cutoff:
        return Measure(kind)
    match = _CUTOFF_NAME.fullmatch(text)
    if match is None or int(match["k"]) < 1 or str(int(match["k"])) != match["k"]:
        supported = ", ".join(kind.pattern for kind in KINDS)
        raise ValueError(f"unknown measure {text!r}; supported: {supported}")
    return Measure(_BY_NAME[match["name"]], int(match["k"]))


def names(measures: Iterable[Measure]) -> list[str]:
    """The metrics-file names of ``measures``."""
    return [measure.name for measure in measures]


def spoken_list(words: Iterable[str]) -> str:
    """``a, b and c``: how titles and help texts list measures."""
    words = list(words)
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


# --- what a metrics file holds ---------------------------------------------------------

EVALUATED: tuple[Measure, ...] = (MAP, NDCG, MRR)
"""In every metrics file (``python -m citeval.metrics``)."""
EVALUATED_AT_EACH_CUTOFF: tuple[Kind, ...] = (RECALL, PRECISION, F1, NDCG_CUT)
"""In every metrics file at each of its cutoffs."""


def evaluated_measures(cutoffs: Iterable[int]) -> list[Measure]:
    """A metrics file's measures: :data:`EVALUATED`, then per cutoff (ascending, once
    each) :data:`EVALUATED_AT_EACH_CUTOFF`."""
    measures = list(EVALUATED)
    for k in sorted(set(cutoffs)):
        if k < 1:
            raise ValueError(f"cutoffs must be >= 1, got {k}")
        measures += [kind @ k for kind in EVALUATED_AT_EACH_CUTOFF]
    return measures


# --- the tables' columns ---------------------------------------------------------------


def table_cutoff(cutoffs: Sequence[int]) -> int:
    """The k of the global tables' R@k columns: the first of ``metrics.cutoffs``."""
    if not cutoffs:
        raise ValueError("no cutoff: the R@k columns of the tables need one")
    return cutoffs[0]


def table1_measures(cutoff: int) -> list[Measure]:
    """Table 1 (dataset level), per pool size: MAP, NDCG, R@cutoff."""
    return [MAP, NDCG, RECALL @ cutoff]


HATTEN_MEASURES: tuple[Measure, ...] = (RECALL @ 10,)
"""The measure of HAtten that the reranking table adds."""
NOGUEIRA_MEASURES: tuple[Measure, ...] = (MRR, F1 @ 20)
"""The measures of Nogueira et al. that the reranking table adds."""
RERANK_ADDED: tuple[Measure, ...] = (*HATTEN_MEASURES, *NOGUEIRA_MEASURES)
"""What the reranking table adds to Table 1's: R@10, MRR, F1@20."""


def rerank_table_measures(cutoff: int) -> list[Measure]:
    """The reranking table (dataset level): Table 1's, then :data:`RERANK_ADDED`."""
    return [*table1_measures(cutoff), *RERANK_ADDED]


def field_table_measures(cutoff: int) -> list[Measure]:
    """Tables 2, 7 and 8 (field level), one measure each: MAP, NDCG, R@cutoff."""
    return [MAP, NDCG, RECALL @ cutoff]


TRADEOFF_MEASURES: tuple[Measure, ...] = (RECALL @ 10, MAP)
"""The rerank trade-off table: R@10 (also plotted), then MAP."""

MDCR_MEASURES: tuple[Measure, ...] = (MAP, NDCG, RECALL @ 5)
"""The MDCR evaluator's (and Tables 3 and 4): MAP, NDCG, R@5 (computed by
:mod:`citeval.mdcr.evaluate`, not read from metrics files)."""


def local_table_measures(cutoffs: Iterable[int]) -> list[Measure]:
    """The local tables: MRR, R@k for each of ``local.cutoffs`` (ascending), NDCG@10, MAP."""
    return [MRR, *(RECALL @ k for k in sorted(set(cutoffs))), NDCG_CUT @ 10, MAP]


def global_table_measures(config_cutoffs: Sequence[int], rerank: bool) -> list[Measure]:
    """Every measure a table reads from the dataset- and field-level metrics files, in
    order, once each: Tables 1, 2, 7, 8 and, with a reranker, the reranking table and the
    trade-off."""
    cutoff = table_cutoff(config_cutoffs)
    measures = [*table1_measures(cutoff), *field_table_measures(cutoff)]
    if rerank:
        measures += [*rerank_table_measures(cutoff), *TRADEOFF_MEASURES]
    return list(dict.fromkeys(measures))


def cutoffs_for(measures: Iterable[Measure]) -> list[int]:
    """The cutoffs of ``measures``, once each, in the order they first appear."""
    return list(dict.fromkeys(m.k for m in measures if m.k is not None))


def global_metric_cutoffs(config_cutoffs: Sequence[int], rerank: bool) -> list[int]:
    """The cutoffs of the dataset- and field-level metrics: ``metrics.cutoffs`` as given,
    then those the tables need (:func:`global_table_measures`) that it lacks.

    ``[30]`` -> ``[30]``; with ``rerank``, ``[30]`` -> ``[30, 10, 20]``.
    """
    needed = cutoffs_for(global_table_measures(config_cutoffs, rerank))
    return list(dict.fromkeys([*config_cutoffs, *needed]))


def local_metric_cutoffs(local_cutoffs: Iterable[int], rerank: bool = False) -> list[int]:
    """The cutoffs of the local task's metrics, ascending: those of the local tables
    (``local.cutoffs`` and 10, for NDCG@10) and, with ``rerank``, the trade-off's."""
    measures = local_table_measures(local_cutoffs)
    if rerank:
        measures += TRADEOFF_MEASURES
    return sorted(set(cutoffs_for(measures)))
