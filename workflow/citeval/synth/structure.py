"""Per-paper attributes of the synthetic corpus: year, fields, topic, subtopic, fitness.

Papers are drawn into a field -> topic -> subtopic hierarchy with uneven sizes, and each
gets a heavy-tailed citation fitness, all as compact numpy arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from citeval.synth.shape import (
    FIELD_WEIGHTS,
    FIELDS,
    FITNESS_ALPHA,
    LAST_YEAR_SHARE,
    OBSCURE_FITNESS,
    OBSCURE_RATE,
    SECOND_FIELD_RATE,
    SUBTOPICS_PER_TOPIC,
    related_fields_table,
)


@dataclass
class Structure:
    """Per-paper attributes (compact numpy arrays) and the topic hierarchy."""

    first_year: int
    last_year: int
    year: np.ndarray  # int16, the year used for citations (also when the record hides it)
    field: np.ndarray  # int8, primary field index into FIELDS
    field2: np.ndarray  # int8, second field or -1
    topic: np.ndarray  # int32, global topic id
    subtopic: np.ndarray  # int32, global subtopic id
    fitness: np.ndarray  # float32, citation attractiveness (heavy-tailed)
    topic_field: np.ndarray  # int16 per topic
    topic_cum: np.ndarray  # float64 per topic: field index + cumulative share within field
    sub_topic: np.ndarray  # int32 per subtopic
    topic_sub_start: np.ndarray  # int32 per topic + 1: subtopics of topic t are contiguous

    @property
    def num_papers(self) -> int:
        return int(self.year.shape[0])


def _growth_rate(n_years: int, last_share: float) -> float:
    """Yearly growth factor that puts ``last_share`` of the papers in the last year."""
    if n_years <= 1 or 1.0 / n_years >= last_share:
        return 1.0

    def share(r: float) -> float:
        return (r - 1.0) * r ** (n_years - 1) / (r**n_years - 1.0)

    lo, hi = 1.0 + 1e-9, 4.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if share(mid) < last_share else (lo, mid)
    return (lo + hi) / 2


def _hierarchy_sizes(num_papers: int) -> tuple[np.ndarray, np.ndarray]:
    """Topics per field and subtopics per topic.

    A subtopic holds a few hundred papers at scale (fewer in small corpora) so that a
    query's cited papers compete with a realistic number of look-alikes in the pool.
    """
    per_subtopic = min(400, max(40, num_papers // 100))
    weights = np.array([FIELD_WEIGHTS[f] for f in FIELDS])
    weights /= weights.sum()
    topics_per_field = []
    subs_per_topic: list[int] = []
    for w in weights:
        n_subs = max(4, round(num_papers * w / per_subtopic))
        n_topics = max(2, round(n_subs / SUBTOPICS_PER_TOPIC))
        n_subs = max(n_subs, 2 * n_topics)
        base, extra = divmod(n_subs, n_topics)
        topics_per_field.append(n_topics)
        subs_per_topic.extend(base + (1 if t < extra else 0) for t in range(n_topics))
    return np.array(topics_per_field, dtype=np.int32), np.array(subs_per_topic, dtype=np.int32)


def pick_within(groups: np.ndarray, cum: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Draw one child per row among the children of ``groups``.

    ``cum[c]`` is the parent index plus the cumulative share of child ``c`` within its
    parent (children of a parent are contiguous), so one searchsorted draws for all rows.
    """
    return np.searchsorted(cum, groups + u, side="right").astype(np.int32)


def build_structure(num_papers: int, seed: int, first_year: int, last_year: int) -> Structure:
    """Draw every paper's year, fields, topic, subtopic and citation fitness."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0]))
    n_years = last_year - first_year + 1
    growth = _growth_rate(n_years, LAST_YEAR_SHARE)
    year_w = growth ** np.arange(n_years, dtype=np.float64)
    year = (first_year + rng.choice(n_years, size=num_papers, p=year_w / year_w.sum())).astype(
        np.int16
    )

    field_w = np.array([FIELD_WEIGHTS[f] for f in FIELDS])
    field = rng.choice(len(FIELDS), size=num_papers, p=field_w / field_w.sum()).astype(np.int8)

    related, n_related = related_fields_table()
    has_second = rng.random(num_papers) < SECOND_FIELD_RATE
    pick = (rng.random(num_papers) * n_related[field]).astype(np.int64)
    field2 = np.where(has_second, related[field, pick], -1).astype(np.int8)

    topics_per_field, subs_per_topic = _hierarchy_sizes(num_papers)
    topic_field = np.repeat(np.arange(len(FIELDS), dtype=np.int16), topics_per_field)
    # Uneven topic sizes within a field (a few big topics, a long tail of small ones).
    topic_w = np.concatenate(
        [1.0 / (np.arange(n) + 2.0) ** 0.8 * rng.uniform(0.7, 1.3, n) for n in topics_per_field]
    )
    topic_cum = _within_cumulative(topic_field, topic_w)
    topic = pick_within(field.astype(np.float64), topic_cum, rng.random(num_papers))

    sub_topic = np.repeat(np.arange(len(subs_per_topic), dtype=np.int32), subs_per_topic)
    sub_w = rng.uniform(0.5, 1.5, sub_topic.shape[0])
    sub_cum = _within_cumulative(sub_topic, sub_w)
    subtopic = pick_within(topic.astype(np.float64), sub_cum, rng.random(num_papers))

    fitness = (1.0 - rng.random(num_papers)) ** (-1.0 / FITNESS_ALPHA)
    # Many papers are (almost) never cited, whatever their topic: real in-degrees have far
    # more zeros than a Pareto tail alone gives.
    fitness[rng.random(num_papers) < OBSCURE_RATE] *= OBSCURE_FITNESS
    fitness = fitness.astype(np.float32)
    topic_sub_start = np.zeros(len(subs_per_topic) + 1, dtype=np.int32)
    np.cumsum(subs_per_topic, out=topic_sub_start[1:])
    return Structure(
        first_year=first_year,
        last_year=last_year,
        year=year,
        field=field,
        field2=field2,
        topic=topic,
        subtopic=subtopic,
        fitness=fitness,
        topic_field=topic_field,
        topic_cum=topic_cum,
        sub_topic=sub_topic,
        topic_sub_start=topic_sub_start,
    )


def _within_cumulative(parent: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Parent index + cumulative normalised weight within the parent (last child = +1)."""
    totals = np.bincount(parent, weights=weights)
    cum = np.cumsum(weights)
    starts = np.concatenate([[0.0], np.cumsum(totals)[:-1]])
    within = (cum - starts[parent]) / totals[parent]
    last = np.r_[parent[1:] != parent[:-1], True]
    within[last] = 1.0  # exact, so a draw of u < 1 never spills into the next parent
    return parent.astype(np.float64) + within
