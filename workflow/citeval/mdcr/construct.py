"""Build one split's MDCR benchmark from in-memory inputs (no files, no DuckDB).

Per query, in this order, each step drawing with its own generator seeded from (seed,
split, field, query, type):

1. ``true``: ``positives`` cited papers drawn from the query's cited papers that may be
   candidates (text and year rule below). A query left without any is dropped.
2. One type per selected model: ``negatives_per_type`` drawn from the model's top
   ``model_depth`` non-cited results on the query's field pool.
3. ``graph``: :func:`citeval.mdcr.negatives.graph_negatives`.
4. ``most_cited``: drawn from the field's ``most_cited_depth`` most-cited prefiltered papers.
5. ``random``: drawn from every prefiltered paper.

Every candidate of a query is allowed only if it is not the query, not cited by the query
(so no cited paper is ever a negative, of any type), has a non-empty title and abstract,
meets the year rule, and was not chosen by an earlier step (candidates are unique within a
query; an earlier type wins a paper two types could supply).

Year rule (``max_candidate_year``): ``"query_year"`` admits only candidates with a known
year no later than the query's, as the field pools do; graph neighbours citing c can be
newer than q, and this rule leaves them out. ``None`` admits any year.

Shortfall: when a negative type yields fewer than ``negatives_per_type``, ``keep_fewer``
leaves it short; ``fill_from_random`` tops it up from ``random``'s source, and the papers
filled in are listed under the short type. Both are counted in the report, per field and
type. Lists are written sorted by paper id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from citeval.draws import seeded_rng
from citeval.errors import ConfigError
from citeval.mdcr.formats import POSITIVE_TYPE, Benchmark
from citeval.mdcr.negatives import (
    TopLists,
    draw_allowed,
    graph_negatives,
    random_negatives,
    top_lists,
)

GRAPH = "graph"
MOST_CITED = "most_cited"
RANDOM = "random"
FIXED_TYPES = (GRAPH, MOST_CITED, RANDOM)
RESERVED_TYPES = (POSITIVE_TYPE, *FIXED_TYPES)
YEAR_RULES = ("query_year", None)
SHORTFALL_RULES = ("fill_from_random", "keep_fewer")


@dataclass(frozen=True)
class Settings:
    """What a construction depends on besides its inputs (all of it goes in the report).

    The counts and rules are the config's ``mdcr`` keys, without defaults here: the
    schema's are the only ones.
    """

    seed: int
    split: str
    model_types: tuple[str, ...]
    positives: int
    negatives_per_type: int
    model_depth: int
    most_cited_depth: int  # how many papers Inputs.most_cited holds per field
    max_candidate_year: str | None
    shortfall: str

    def __post_init__(self) -> None:
        for name in ("positives", "negatives_per_type", "model_depth", "most_cited_depth"):
            if getattr(self, name) < 1:
                raise ConfigError(f"mdcr.{name} must be at least 1, got {getattr(self, name)}")
        if self.max_candidate_year not in YEAR_RULES:
            raise ConfigError(
                "mdcr.max_candidate_year must be 'query_year' or null, "
                f"got {self.max_candidate_year!r}"
            )
        if self.shortfall not in SHORTFALL_RULES:
            raise ConfigError(
                f"mdcr.shortfall must be one of {SHORTFALL_RULES}, got {self.shortfall!r}"
            )
        clash = sorted(set(self.model_types) & set(RESERVED_TYPES))
        if clash:
            raise ConfigError(
                f"model names {clash} clash with the candidate types {RESERVED_TYPES}"
            )
        if len(set(self.model_types)) != len(self.model_types):
            raise ConfigError(f"model types repeat: {list(self.model_types)}")

    @property
    def types(self) -> tuple[str, ...]:
        """Negative types in selection order."""
        return (*self.model_types, *FIXED_TYPES)


@dataclass
class Inputs:
    """Everything construction reads, as plain mappings.

    ``papers`` holds the year (or None) of every paper with a non-empty title and
    abstract; a paper absent from it can never be a candidate.
    """

    queries: Mapping[str, Sequence[str]]  # field name -> query ids
    query_years: Mapping[str, int | None]
    cited: Mapping[str, frozenset[str]]  # query -> OC_q
    neighbours: Mapping[str, frozenset[str]]  # cited paper c -> OC_c ∪ IC_c
    rankings: Mapping[str, Mapping[str, Sequence[str]]]  # model -> query -> ranked ids
    most_cited: Mapping[str, Sequence[str]]  # field name -> its most-cited papers
    prefiltered: Sequence[str]  # sorted ids of the prefiltered set
    papers: Mapping[str, int | None]


@dataclass
class TypeCount:
    requested: int
    queries_short: int = 0
    missing: int = 0
    filled_from_random: int = 0
    still_missing: int = 0


@dataclass
class FieldReport:
    positives: TypeCount
    types: dict[str, TypeCount]
    queries: int = 0
    dropped_without_positives: list[str] = field(default_factory=list)


class QueryCandidates:
    """The candidates chosen so far for one query, and what may still be added."""

    def __init__(
        self,
        query_id: str,
        cited: frozenset[str],
        max_year: int | None,
        papers: Mapping[str, int | None],
    ) -> None:
        self.query_id = query_id
        self.cited = cited
        self.max_year = max_year
        self.papers = papers
        self.chosen: set[str] = set()

    def usable(self, paper_id: str) -> bool:
        """Text and year rule only: what positives need too."""
        if paper_id == self.query_id or paper_id not in self.papers:
            return False
        if self.max_year is None:
            return True
        year = self.papers[paper_id]
        return year is not None and year <= self.max_year

    def allowed(self, paper_id: str) -> bool:
        """May ``paper_id`` become a negative: usable, not cited, not chosen yet."""
        return paper_id not in self.cited and paper_id not in self.chosen and self.usable(paper_id)

    def take(self, ids: Sequence[str]) -> list[str]:
        self.chosen.update(ids)
        return sorted(ids)


def _max_year(settings: Settings, query_year: int | None) -> int | None:
    if settings.max_candidate_year is None:
        return None
    if query_year is None:
        # Without a query year the rule cannot apply; query sampling never picks such papers.
        raise ConfigError("max_candidate_year is 'query_year' but a query has no year")
    return query_year


def _negatives(
    kind: str,
    generator: np.random.Generator,
    inputs: Inputs,
    settings: Settings,
    top: TopLists,
    field_name: str,
    state: QueryCandidates,
) -> list[str]:
    """What candidate type ``kind``'s own procedure supplies for one query."""
    wanted = settings.negatives_per_type
    if kind in settings.model_types:
        return draw_allowed(generator, top[kind].get(state.query_id, ()), state.allowed, wanted)
    if kind == GRAPH:
        return graph_negatives(generator, state.cited, inputs.neighbours, state.allowed, wanted)
    if kind == MOST_CITED:
        top = inputs.most_cited.get(field_name, ())
        return draw_allowed(generator, top, state.allowed, wanted)
    return random_negatives(generator, inputs.prefiltered, state.allowed, wanted)


def build_query(
    inputs: Inputs,
    settings: Settings,
    top: TopLists,
    field_name: str,
    query_id: str,
    report: FieldReport,
) -> dict[str, list[str]] | None:
    """One query's ``{type: sorted ids}``, or None when it has no usable positive.

    ``top`` holds the model types' top ``model_depth`` non-cited results (:func:`top_lists`).
    """
    state = QueryCandidates(
        query_id,
        inputs.cited.get(query_id, frozenset()),
        _max_year(settings, inputs.query_years.get(query_id)),
        inputs.papers,
    )

    def generator(kind: str) -> np.random.Generator:
        return seeded_rng(settings.seed, "mdcr", settings.split, field_name, query_id, kind)

    positives = draw_allowed(
        generator(POSITIVE_TYPE), sorted(state.cited), state.usable, settings.positives
    )
    _count(report.positives, settings.positives, len(positives))
    if not positives:
        report.dropped_without_positives.append(query_id)
        return None
    entry = {POSITIVE_TYPE: state.take(positives)}
    wanted = settings.negatives_per_type
    for kind in settings.types:
        rng = generator(kind)
        chosen = _negatives(kind, rng, inputs, settings, top, field_name, state)
        counts = report.types[kind]
        _count(counts, wanted, len(chosen))
        if len(chosen) < wanted and settings.shortfall == "fill_from_random":
            # The filler continues the type's own generator: one stream per (query, type).
            state.chosen.update(chosen)
            filler = random_negatives(rng, inputs.prefiltered, state.allowed, wanted - len(chosen))
            counts.filled_from_random += len(filler)
            chosen = [*chosen, *filler]
        counts.still_missing += wanted - len(chosen)
        entry[kind] = state.take(chosen)
    return entry


def build_benchmark(
    inputs: Inputs, settings: Settings, top: TopLists | None = None
) -> tuple[Benchmark, dict]:
    """The benchmark ``{field: {query: {type: [ids]}}}`` and the construction report.

    ``top``: :func:`top_lists` of ``inputs.rankings`` at ``settings.model_depth`` (for at
    least the model types), when the caller has computed them already; computed here
    otherwise.
    """
    missing_models = sorted(set(settings.model_types) - set(inputs.rankings))
    if missing_models:
        raise ConfigError(f"no rankings for the selected models {missing_models}")
    if top is None:
        selected = {model: inputs.rankings[model] for model in settings.model_types}
        top = top_lists(selected, inputs.cited, settings.model_depth)
    benchmark: Benchmark = {}
    reports: dict[str, FieldReport] = {}
    for field_name in sorted(inputs.queries):
        report = FieldReport(
            positives=TypeCount(settings.positives),
            types={kind: TypeCount(settings.negatives_per_type) for kind in settings.types},
        )
        reports[field_name] = report
        queries = {}
        for query_id in sorted(inputs.queries[field_name]):
            entry = build_query(inputs, settings, top, field_name, query_id, report)
            if entry is not None:
                queries[query_id] = entry
        report.queries = len(queries)
        if queries:
            benchmark[field_name] = queries
    return benchmark, _report_dict(settings, reports)


def _count(counts: TypeCount, wanted: int, got: int) -> None:
    if got < wanted:
        counts.queries_short += 1
        counts.missing += wanted - got


def _report_dict(settings: Settings, reports: Mapping[str, FieldReport]) -> dict:
    def type_dict(counts: TypeCount, fill: bool = True) -> dict:
        out = {
            "requested_per_query": counts.requested,
            "queries_short": counts.queries_short,
            "missing": counts.missing,
        }
        if fill:
            out["filled_from_random"] = counts.filled_from_random
            out["still_missing"] = counts.still_missing
        return out

    fields = {}
    for field_name, report in reports.items():
        fields[field_name] = {
            "queries": report.queries,
            "dropped_without_positives": report.dropped_without_positives,
            "positives": type_dict(report.positives, fill=False),
            "negatives": {kind: type_dict(c) for kind, c in report.types.items()},
        }
    return {
        "seed": settings.seed,
        "split": settings.split,
        "settings": {
            "positives": settings.positives,
            "negatives_per_type": settings.negatives_per_type,
            "model_depth": settings.model_depth,
            "most_cited_depth": settings.most_cited_depth,
            "max_candidate_year": settings.max_candidate_year,
            "shortfall": settings.shortfall,
        },
        "candidate_types": list(settings.types),
        "model_types": list(settings.model_types),
        "fields": fields,
    }
