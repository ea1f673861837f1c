"""Candidate selection for MDCR, as pure functions over in-memory ids.

Each function takes the random generator of one (query, candidate type) and an ``allowed``
predicate that says whether a paper may still become a candidate of the query (not the
query, not cited by it, has a title and an abstract, meets the year rule, not chosen yet:
see :class:`citeval.mdcr.construct.QueryCandidates`). Inputs are walked in a fixed order
(sorted ids, or a ranking), so the same generator state gives the same choice.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

Allowed = Callable[[str], bool]
TopLists = Mapping[str, Mapping[str, Sequence[str]]]  # model -> query -> top non-cited ids

# Random draws try single ids until this many tries per wanted candidate, then fall back
# to filtering the whole population (a corpus whose papers are mostly disallowed).
RANDOM_TRIES_PER_CANDIDATE = 50


def draw(rng: np.random.Generator, ids: Sequence[str], count: int) -> list[str]:
    """``count`` distinct ids drawn uniformly from ``ids`` (all of them when too few).

    The result keeps the order of ``ids``.
    """
    if count >= len(ids):
        return list(ids)
    if count <= 0:
        return []
    chosen = np.sort(rng.choice(len(ids), size=count, replace=False))
    return [ids[int(i)] for i in chosen]


def draw_allowed(
    rng: np.random.Generator, ids: Iterable[str], allowed: Allowed, count: int
) -> list[str]:
    """``count`` ids drawn uniformly from those of ``ids`` that are allowed."""
    return draw(rng, [paper_id for paper_id in ids if allowed(paper_id)], count)


def top_non_cited(
    ranking: Iterable[str], query_id: str, cited: frozenset[str] | set[str], depth: int
) -> list[str]:
    """The first ``depth`` papers of a ranking that the query does not cite (nor is)."""
    kept = (p for p in ranking if p != query_id and p not in cited)
    return list(itertools.islice(kept, depth))


def top_lists(
    rankings: Mapping[str, Mapping[str, Sequence[str]]],
    cited: Mapping[str, frozenset[str]],
    depth: int,
) -> dict[str, dict[str, list[str]]]:
    """Each model's :func:`top_non_cited` ``depth`` results for every query it ranked."""
    return {
        model: {
            query_id: top_non_cited(ranking, query_id, cited.get(query_id, frozenset()), depth)
            for query_id, ranking in per_query.items()
        }
        for model, per_query in rankings.items()
    }


def mean_jaccard(top_lists: TopLists) -> dict[tuple[str, str], float]:
    """Average Jaccard index of every pair of models' per-query lists (keys sorted pairs).

    The average runs over the queries both models ranked and for which at least one of
    them has a non-empty list; a pair with no such query gets NaN.
    """
    models = sorted(top_lists)
    table: dict[tuple[str, str], float] = {}
    for first, second in itertools.combinations(models, 2):
        values = []
        for query_id in sorted(top_lists[first].keys() & top_lists[second].keys()):
            a, b = set(top_lists[first][query_id]), set(top_lists[second][query_id])
            union = len(a | b)
            if union:
                values.append(len(a & b) / union)
        table[first, second] = math.fsum(values) / len(values) if values else math.nan
    return table


def mean_jaccard_with_others(
    models: Sequence[str], pairs: Mapping[tuple[str, str], float]
) -> dict[str, float]:
    """Each model's mean pair value with every other model (NaN pairs left out)."""
    means: dict[str, float] = {}
    for model in models:
        values = [
            pairs[tuple(sorted((model, other)))]
            for other in models
            if other != model and not math.isnan(pairs[tuple(sorted((model, other)))])
        ]
        means[model] = math.fsum(values) / len(values) if values else math.nan
    return means


def least_alike_models(
    models: Sequence[str], pairs: Mapping[tuple[str, str], float], count: int
) -> list[str]:
    """The ``count`` models with the lowest mean Jaccard with the others, by name on ties.

    A model without any comparable pair (NaN mean) ranks last. The result is sorted by
    name, since it names candidate types, not a ranking.
    """
    means = mean_jaccard_with_others(models, pairs)
    order = sorted(models, key=lambda m: (math.isnan(means[m]), means[m], m))
    return sorted(order[:count])


def graph_order(
    cited: frozenset[str] | set[str], neighbours: Mapping[str, frozenset[str]]
) -> list[tuple[str, int]]:
    """The query's cited papers c with |OC_q ∩ (OC_c ∪ IC_c)|, in walking order.

    O(q,c) is that overlap divided by |OC_q|, the same for every c, so ordering by the
    integer overlap is ordering by O(q,c) with no rounding. Walk: overlap descending,
    ties by paper id ascending. A cited paper with no known neighbours has overlap 0.
    """
    overlaps = [(c, len(cited & neighbours.get(c, frozenset()))) for c in cited]
    return sorted(overlaps, key=lambda item: (-item[1], item[0]))


def graph_negatives(
    rng: np.random.Generator,
    cited: frozenset[str] | set[str],
    neighbours: Mapping[str, frozenset[str]],
    allowed: Allowed,
    count: int,
) -> list[str]:
    """The ``graph`` candidates: neighbours of the most citation-overlapping cited papers.

    Walk the cited papers in :func:`graph_order`. From each c, the new candidates are the
    allowed papers of OC_c ∪ IC_c not added yet (``allowed`` already leaves out the query,
    which is in IC_c of every c it cites, and every cited paper). Take them all while they
    fit; when they are more than still needed, draw the rest from them (in paper-id
    order) with ``rng`` and stop. Returns the candidates in the order they were added.
    """
    added: list[str] = []
    seen: set[str] = set()
    for paper_id, _overlap in graph_order(cited, neighbours):
        needed = count - len(added)
        if needed <= 0:
            break
        fresh = sorted(p for p in neighbours.get(paper_id, ()) if p not in seen and allowed(p))
        chosen = draw(rng, fresh, needed)
        added += chosen
        seen.update(chosen)
    return added


def random_negatives(
    rng: np.random.Generator, population: Sequence[str], allowed: Allowed, count: int
) -> list[str]:
    """``count`` papers drawn uniformly from the allowed papers of ``population``.

    Draws one index at a time and skips disallowed or repeated ones, which is uniform
    sampling without replacement from the allowed papers and touches only a handful of a
    population of millions. After ``RANDOM_TRIES_PER_CANDIDATE`` tries per wanted paper it
    filters the untried rest and draws from it, so a sparse population still yields every
    allowed paper it has. Returns the papers in the order they were drawn.
    """
    chosen: list[str] = []
    tried: set[int] = set()
    size = len(population)
    tries = 0
    while len(chosen) < count and len(tried) < size:
        if tries >= RANDOM_TRIES_PER_CANDIDATE * count:
            rest = [population[i] for i in range(size) if i not in tried]
            chosen += draw_allowed(rng, rest, allowed, count - len(chosen))
            break
        tries += 1
        index = int(rng.integers(size))
        if index in tried:
            continue
        tried.add(index)
        if allowed(population[index]):
            chosen.append(population[index])
    return chosen
