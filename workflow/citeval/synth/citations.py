"""The synthetic corpus's citation graph, drawn vectorised and held in CSR form.

Citations mostly point to older papers of the same subtopic, topic and field, chosen in
proportion to the cited paper's fitness; about a tenth cross to other fields.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from tqdm import tqdm

from citeval.synth.shape import (
    CITATION_LEVELS,
    FIELD_WEIGHTS,
    FIELDS,
    FUTURE_YEAR_RATE,
    GRAPH_CHUNK,
    LAST_YEAR_SAME_RATE,
    MEAN_LAG,
    SAME_YEAR_RATE,
    related_fields_table,
)
from citeval.synth.structure import Structure, pick_within


@dataclass
class CitationGraph:
    """Both directions of the citation graph in CSR form (int32 paper indices)."""

    out_offsets: np.ndarray  # int64, num_papers + 1
    out_targets: np.ndarray  # int32, cited papers sorted per citing paper
    in_offsets: np.ndarray  # int64, num_papers + 1
    in_sources: np.ndarray  # int32, citing papers sorted per cited paper

    @property
    def num_edges(self) -> int:
        return int(self.out_targets.shape[0])


def _reference_counts(
    rng: np.random.Generator, year_frac: np.ndarray, scale: float = 1.0
) -> np.ndarray:
    """Intended references per paper: more, and fewer papers without any, in later years."""
    zero = rng.random(year_frac.shape[0]) < 0.30 - 0.25 * year_frac
    mean = scale * (3.0 + 15.0 * year_frac**1.2)
    count = np.rint(np.exp(np.log(mean) + 0.55 * rng.standard_normal(year_frac.shape[0])))
    return np.where(zero, 0, np.clip(count, 1, 60)).astype(np.int64)


def build_citations(
    structure: Structure, seed: int, *, references: float = 1.0, progress: bool = True
) -> CitationGraph:
    """Draw the citation graph, vectorised over chunks of citing papers.

    Each reference picks a level (same subtopic / topic / field, or another field), a
    target year (mostly a few years back) and then a paper of that subtopic and year with
    probability proportional to its fitness. Empty year buckets fall back to every paper
    of the subtopic up to the citing year; references that still find nothing, point at
    the citing paper itself or repeat one are dropped. ``references`` scales the intended
    references per paper (``Density``).
    """
    s = structure
    n = s.num_papers
    n_years = s.last_year - s.first_year + 1
    yidx = (s.year - s.first_year).astype(np.int64)
    n_subs = s.sub_topic.shape[0]

    # Papers sorted by (subtopic, year): a (subtopic, year range) is one contiguous slice.
    bucket = s.subtopic.astype(np.int64) * n_years + yidx
    order = np.argsort(bucket, kind="stable").astype(np.int32)
    bucket_start = np.zeros(n_subs * n_years + 1, dtype=np.int64)
    np.cumsum(np.bincount(bucket, minlength=n_subs * n_years), out=bucket_start[1:])
    cum_fit = np.zeros(n + 1, dtype=np.float64)
    np.cumsum(s.fitness[order], out=cum_fit[1:])
    del bucket

    related, n_related = related_fields_table()
    field_w = np.array([FIELD_WEIGHTS[f] for f in FIELDS])
    field_cum = np.cumsum(field_w / field_w.sum())
    field_cum[-1] = 1.0
    subs_in_topic = np.diff(s.topic_sub_start).astype(np.int64)
    level_cum = np.cumsum(CITATION_LEVELS)

    rng = np.random.default_rng(np.random.SeedSequence([seed, 1]))
    year_frac = yidx / max(1, n_years - 1)
    n_refs = _reference_counts(rng, year_frac, references)

    sources: list[np.ndarray] = []
    targets: list[np.ndarray] = []
    chunks = range(0, n, GRAPH_CHUNK)
    for lo in tqdm(chunks, desc="citations", unit="chunk", disable=not progress):
        hi = min(n, lo + GRAPH_CHUNK)
        crng = np.random.default_rng(np.random.SeedSequence([seed, 1, lo // GRAPH_CHUNK]))
        src = np.repeat(np.arange(lo, hi, dtype=np.int64), n_refs[lo:hi])
        m = src.shape[0]
        if m == 0:
            continue
        level = np.searchsorted(level_cum, crng.random(m) * level_cum[-1], side="right")
        tsub = s.subtopic[src].astype(np.int64)
        # Same topic: any subtopic of the citing paper's topic.
        sel = np.flatnonzero(level == 1)
        top = s.topic[src[sel]].astype(np.int64)
        tsub[sel] = s.topic_sub_start[top] + (
            crng.random(sel.shape[0]) * subs_in_topic[top]
        ).astype(np.int64)
        # Same field, other topic; or another field: the paper's second field, a related
        # field, or any field.
        sel = np.flatnonzero(level >= 2)
        k = sel.shape[0]
        fld = s.field[src[sel]].astype(np.int64)
        f2 = s.field2[src[sel]].astype(np.int64)
        related_pick = related[fld, (crng.random(k) * n_related[fld]).astype(np.int64)]
        any_field = np.minimum(
            np.searchsorted(field_cum, crng.random(k), side="right"), len(FIELDS) - 1
        )
        r = crng.random(k)
        other_field = np.where(
            (f2 >= 0) & (r < 0.5), f2, np.where(r < 0.8, related_pick, any_field)
        )
        target_field = np.where(level[sel] == 2, fld, other_field)
        target_topic = pick_within(target_field.astype(np.float64), s.topic_cum, crng.random(k))
        tsub[sel] = s.topic_sub_start[target_topic] + (
            crng.random(k) * subs_in_topic[target_topic]
        ).astype(np.int64)

        # Target year: mostly older, some same-year, a few one year "ahead".
        y = yidx[src]
        r = crng.random(m)
        lag = 1 + np.floor(crng.exponential(MEAN_LAG - 1.0, m)).astype(np.int64)
        lag = np.where(r < np.where(y == n_years - 1, LAST_YEAR_SAME_RATE, SAME_YEAR_RATE), 0, lag)
        lag = np.where(r > 1.0 - FUTURE_YEAR_RATE, -1, lag)
        ty = np.clip(y - lag, 0, n_years - 1)
        base = tsub * n_years
        a = bucket_start[base + ty]
        b = bucket_start[base + ty + 1]
        empty = a == b
        a = np.where(empty, bucket_start[base], a)
        b = np.where(empty, bucket_start[base + np.maximum(y, ty) + 1], b)
        ok = a < b
        a, b, src = a[ok], b[ok], src[ok]
        u = cum_fit[a] + crng.random(a.shape[0]) * (cum_fit[b] - cum_fit[a])
        pos = np.clip(np.searchsorted(cum_fit, u, side="right") - 1, a, b - 1)
        dst = order[pos].astype(np.int64)
        keep = dst != src
        key = np.sort(src[keep] * n + dst[keep])  # by (citing, cited)
        key = key[np.r_[key[:1] >= 0, key[1:] != key[:-1]]]  # drop repeated references
        sources.append((key // n).astype(np.int32))
        targets.append((key % n).astype(np.int32))

    src_all = np.concatenate(sources) if sources else np.zeros(0, np.int32)
    dst_all = np.concatenate(targets) if targets else np.zeros(0, np.int32)
    del sources, targets
    out_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src_all, minlength=n), out=out_offsets[1:])
    in_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst_all, minlength=n), out=in_offsets[1:])
    # Edges are unique, so sorting (cited, citing) keys gives each inbound list sorted by
    # citing paper; numpy's SIMD sort of int64 beats a stable argsort by far.
    # In-place arithmetic keeps the peak at one int64 copy of the edges.
    key = dst_all.astype(np.int64)
    key *= n
    key += src_all
    del src_all
    key.sort()
    np.remainder(key, n, out=key)
    in_sources = key.astype(np.int32)
    del key
    return CitationGraph(out_offsets, dst_all, in_offsets, in_sources)
