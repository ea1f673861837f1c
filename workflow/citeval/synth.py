"""Deterministic generator of a synthetic S2ORC v2020 metadata corpus.

The corpus stands in for S2ORC wherever the real data cannot be shipped: the demo config,
tests and benchmarks. It has the structure the evaluation protocol relies on:

* all 19 MAG fields with uneven sizes, some papers labelled with two fields;
* publication years that grow over time, so the last year holds about 9% of the papers
  (the query year);
* a field -> topic -> subtopic hierarchy; every topic and subtopic has its own
  pseudo-word vocabulary and every field a set of English domain words, so titles and
  abstracts carry a lexical and a semantic signal;
* citations that mostly point to older papers of the same subtopic, topic and field, with
  a heavy-tailed in-degree (a Pareto "fitness" per paper) and about 10% cross-field links;
* papers that fail each prefilter rule (null year, empty title, missing or short
  abstract, few citations).

Memory stays small at millions of papers: only compact numpy arrays (per-paper attributes
and the int32 citation graph in CSR form, both directions) are held; records are built on
the fly, one block of :data:`TEXT_BLOCK` papers at a time, from a generator seeded by
``(seed, block)``. A record therefore does not depend on the shard count, and the
concatenated shards are identical for the same seed whatever ``num_shards`` is.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import itertools
import json
import logging
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
from tqdm import tqdm

from citeval.cli import run_cli
from citeval.errors import ConfigError
from citeval.io import atomic_path

try:  # python-isal's igzip is several times faster than zlib at the same ratio.
    from isal import igzip as _igzip
except ImportError:  # pragma: no cover - isal is a pinned requirement
    _igzip = None

log = logging.getLogger(__name__)

# ----------------------------------------------------------------------------------------
# Fixed vocabularies and corpus shape
# ----------------------------------------------------------------------------------------


def _words(text: str) -> tuple[str, ...]:
    """Whitespace-separated words (keeps the long word lists below readable)."""
    return tuple(text.split())


#: The 19 MAG fields of study, in the order the paper lists them.
FIELDS: tuple[str, ...] = (
    "Art",
    "Biology",
    "Business",
    "Chemistry",
    "Computer Science",
    "Economics",
    "Engineering",
    "Environmental Science",
    "Geography",
    "Geology",
    "History",
    "Materials Science",
    "Mathematics",
    "Medicine",
    "Philosophy",
    "Physics",
    "Political Science",
    "Psychology",
    "Sociology",
)

# Share of papers per primary field, roughly S2ORC's: medicine, biology and CS dominate,
# art, history and philosophy are small (the three fields the paper samples only once).
FIELD_WEIGHTS: dict[str, float] = {
    "Art": 0.010,
    "Biology": 0.130,
    "Business": 0.025,
    "Chemistry": 0.070,
    "Computer Science": 0.110,
    "Economics": 0.030,
    "Engineering": 0.055,
    "Environmental Science": 0.035,
    "Geography": 0.018,
    "Geology": 0.020,
    "History": 0.012,
    "Materials Science": 0.050,
    "Mathematics": 0.045,
    "Medicine": 0.200,
    "Philosophy": 0.012,
    "Physics": 0.070,
    "Political Science": 0.025,
    "Psychology": 0.050,
    "Sociology": 0.025,
}

# Fields that share papers (second labels) and cross-field citations.
RELATED_FIELDS: dict[str, tuple[str, ...]] = {
    "Art": ("History", "Philosophy", "Sociology"),
    "Biology": ("Medicine", "Chemistry", "Environmental Science"),
    "Business": ("Economics", "Sociology", "Computer Science"),
    "Chemistry": ("Materials Science", "Biology", "Physics"),
    "Computer Science": ("Mathematics", "Engineering", "Physics"),
    "Economics": ("Business", "Political Science", "Mathematics"),
    "Engineering": ("Computer Science", "Materials Science", "Physics"),
    "Environmental Science": ("Biology", "Geology", "Geography", "Chemistry"),
    "Geography": ("Environmental Science", "Geology", "Sociology"),
    "Geology": ("Geography", "Environmental Science", "Physics"),
    "History": ("Political Science", "Art", "Sociology", "Philosophy"),
    "Materials Science": ("Chemistry", "Physics", "Engineering"),
    "Mathematics": ("Computer Science", "Physics", "Economics"),
    "Medicine": ("Biology", "Psychology", "Chemistry"),
    "Philosophy": ("Psychology", "History", "Political Science"),
    "Physics": ("Mathematics", "Materials Science", "Chemistry"),
    "Political Science": ("Economics", "Sociology", "History"),
    "Psychology": ("Medicine", "Sociology", "Philosophy"),
    "Sociology": ("Political Science", "Psychology", "Economics"),
}

# English domain words per field: they give pretrained (semantic) encoders a field-level
# signal that pseudo-words alone would not.
FIELD_TERMS: dict[str, tuple[str, ...]] = {
    "Art": _words(
        "painting artist aesthetic sculpture museum exhibition visual artwork gallery "
        "portrait style iconography design craft canvas performance"
    ),
    "Biology": _words(
        "cells protein gene expression species tissue receptor genome enzyme membrane "
        "mutant pathway organism sequencing evolution transcription"
    ),
    "Business": _words(
        "firms management market customers strategy innovation organizational supply "
        "brand corporate entrepreneurs employees marketing governance consumers retail"
    ),
    "Chemistry": _words(
        "synthesis molecules catalyst reaction compounds solvent spectroscopy ligand "
        "oxidation polymer crystal bonds adsorption aqueous electrochemical complexes"
    ),
    "Computer Science": _words(
        "algorithm network learning software data computing neural graph optimization "
        "retrieval classification security distributed language queries architecture"
    ),
    "Economics": _words(
        "prices growth income labor policy monetary trade welfare inflation households "
        "markets wages fiscal investment equilibrium demand"
    ),
    "Engineering": _words(
        "design control structural power sensor vibration circuit fatigue signal turbine "
        "load manufacturing thermal actuator voltage fluid"
    ),
    "Environmental Science": _words(
        "pollution water soil emissions climate wastewater contaminants ecosystem "
        "sediment groundwater atmospheric biomass runoff toxicity land remediation"
    ),
    "Geography": _words(
        "urban spatial regional landscape population mapping rural migration settlements "
        "cities territorial tourism mobility geographic regions borders"
    ),
    "Geology": _words(
        "rocks sediments tectonic basin crust mineral seismic volcanic magma "
        "stratigraphy isotopic mantle deposits erosion faults metamorphic"
    ),
    "History": _words(
        "century war empire colonial archives medieval historical revolution dynasty "
        "kingdom memory nineteenth chronicle monarchy peasants manuscripts"
    ),
    "Materials Science": _words(
        "alloy microstructure nanoparticles films composite ceramic grain coating "
        "hardness mechanical porous doping annealing fabrication interface sintering"
    ),
    "Mathematics": _words(
        "theorem equations bounded operator spaces algebra manifold proof functions "
        "convergence inequality finite invariant polynomial topology solutions"
    ),
    "Medicine": _words(
        "patients clinical treatment therapy disease diagnosis surgery cohort mortality "
        "symptoms chronic dose infection cancer hospital risk"
    ),
    "Philosophy": _words(
        "ethics moral knowledge argument truth metaphysics reason consciousness belief "
        "epistemic ontology virtue normative logic justice mind"
    ),
    "Physics": _words(
        "quantum energy magnetic field particles spin optical laser plasma scattering "
        "phase electron lattice wave gravitational temperature"
    ),
    "Political Science": _words(
        "democracy elections parties government voters state legislative conflict "
        "institutions political citizens regime campaign sovereignty power policy"
    ),
    "Psychology": _words(
        "participants cognitive behavior memory emotional attention anxiety depression "
        "perception children personality stress mental motivation self wellbeing"
    ),
    "Sociology": _words(
        "social community gender inequality class identity family youth culture "
        "networks education ethnic norms religion status welfare"
    ),
}

# Word classes used by the templates: `{G}` generic noun, `{A}` adjective, verbs in the
# forms a slot needs, `{D}` a number. Content slots (`{K}`, `{S}`, `{T}`, `{F}`, `{X}`)
# draw from the paper's subtopic / topic / field vocabularies.
WORD_CLASSES: dict[str, tuple[str, ...]] = {
    "G": _words(
        "method approach analysis model study framework system effect performance "
        "structure process mechanism behavior technique strategy assessment evaluation "
        "distribution variation response relationship development application comparison "
        "review simulation"
    ),
    "Gp": _words(
        "results factors patterns measurements estimates samples parameters experiments "
        "outcomes changes properties characteristics data methods models effects "
        "mechanisms studies"
    ),
    "A": _words(
        "novel significant robust systematic empirical experimental comparative "
        "quantitative new different efficient accurate improved general multiple "
        "specific large small high low complex simple integrated dynamic potential "
        "critical effective early long-term local global standard"
    ),
    "V": _words("show suggest indicate demonstrate reveal confirm highlight support"),
    "Vs": _words(
        "affects improves modulates reduces increases enhances regulates determines "
        "influences predicts explains alters"
    ),
    "Vb": _words(
        "affect improve modulate reduce increase enhance regulate determine influence "
        "predict explain alter"
    ),
    "Vp": _words(
        "measured analyzed evaluated estimated characterized assessed investigated "
        "examined quantified compared validated tested"
    ),
    "Vi": _words("investigate examine study analyze explore describe characterize evaluate"),
    "Vd": _words("identified observed found detected measured obtained derived established"),
    "D": _words("2 3 4 5 6 8 10 12 15 20 24 30 36 48 50 60 75 100 120 150 200 250 300 500 1000"),
}

# Titles: 6-14 words once hyphenated pairs are joined. Punctuation is a separate token that
# is glued to its neighbour after joining.
TITLE_TEMPLATES: tuple[str, ...] = (
    "{A} {K} of {K} {K} in {F} {G}",
    "{K} {K} and {K} {K} : a {A} {G} of {F} {K}",
    "on the {K} of {K} {K} for {K} {G}",
    "{K} {K} {G} for {A} {K} {K} {Gp}",
    "the role of {K} {K} in {K} {K} {G}",
    "a {A} {G} to {K} {K} using {K} {K}",
    "{K} {K} {G} in {F} {K} : evidence from {K} {K} {Gp}",
    "{A} {G} of {K} {K} and {K} in {X} {K}",
    "towards {A} {K} {G} with {K} {K} {K} {Gp}",
    "{K} {K} of {K} {K} {K} under {A} {K} conditions",
    "effects of {K} {K} on {K} {K} {G} in {F} {K} {K}",
    "{K} {K} as a {G} for {K} {K} {G} and {K} {K}",
    "investigating {K} {K} {Gp} in {X} {K} {K} : a {A} {G}",
    "{A} {K} {K} {G} via {K} {K} {K} of {F} {K} {Gp}",
)

SENTENCE_TEMPLATES: tuple[str, ...] = (
    "In this {G} , we {Vi} the {K} of {K} {K} in {F} {K} .",
    "We propose a {A} {G} for {K} {K} based on {K} {K} {Gp} .",
    "The {K} {K} {G} was {Vp} using {A} {K} {K} {Gp} .",
    "Our results {V} that {K} {K} {Vs} {K} {K} in {A} {K} {Gp} .",
    "These {Gp} {V} a {A} {G} between {K} {K} and {K} {K} {Gp} .",
    "Recent {Gp} of {K} {K} have {Vp} the {K} {K} of {F} {K} .",
    "However , the {K} {G} of {K} {K} in {X} {K} remains unclear .",
    "Here we {Vi} {K} {K} in {D} {K} {K} {Gp} .",
    "A total of {D} {K} {Gp} were {Vp} and {Vp} with {K} {K} .",
    "The {K} {K} was {Vp} by {K} {K} {G} , as in {K} {K} .",
    "Compared with {A} {K} {Gp} , the {K} {K} {G} {Vs} the {K} {K} by {D} % .",
    "We further {Vi} the {G} of {K} and {K} on {K} {K} {Gp} .",
    "This {G} {Vs} the {K} {K} {G} and {Vs} {A} {K} {K} .",
    "Moreover , {A} {K} {K} was {Vp} in {D} {K} {Gp} .",
    "Finally , we {V} the {G} of {K} {K} for {F} {K} {Gp} .",
    "These findings {V} that {K} {K} may {Vb} {K} {K} in {X} {K} .",
    "The {A} {G} of {K} {K} {Gp} is {Vp} in terms of {K} {K} and {K} {G} .",
    "Experimental {Gp} on {K} {K} {Gp} {V} the {A} {G} of the {A} {K} .",
    "Using {A} {K} {Gp} , we {Vd} {K} {K} in {D} {K} {K} .",
    "Both {K} and {K} {K} were {Vd} to {Vb} the {K} of {F} {K} .",
)

# Short abstracts as S2ORC has them (all under the 30-character prefilter threshold).
SHORT_ABSTRACTS: tuple[str, ...] = (
    "",
    "Abstract",
    "No abstract available.",
    "[Abstract not available]",
    "N/A",
    "Summary not available.",
)

FIRST_NAMES: tuple[str, ...] = _words(
    "James Mary John Patricia Robert Jennifer Michael Linda David Elizabeth William "
    "Barbara Richard Susan Joseph Jessica Thomas Sarah Charles Karen Wei Li Jing Hui "
    "Yan Xin Hiroshi Yuki Takashi Akiko Ana Maria Jose Carlos Luis Sofia Pedro Lucia "
    "Hans Anna Peter Eva Klaus Ingrid Pierre Claire Jean Sophie Luca Giulia Marco "
    "Elena Ivan Olga Sergei Natalia Ahmed Fatima Omar Leila Raj Priya Arjun Anjali "
    "Kwame Amara Seo-yeon Min-jun Ji-woo Lars Astrid Mateo Valentina Noah Emma Zoran "
    "Mirela Goran Ivana"
)
LAST_NAMES: tuple[str, ...] = _words(
    "Smith Johnson Williams Brown Jones Garcia Miller Davis Rodriguez Martinez Wang "
    "Li Zhang Liu Chen Yang Huang Zhao Wu Zhou Sato Suzuki Takahashi Tanaka Watanabe "
    "Kim Lee Park Choi Jung Muller Schmidt Schneider Fischer Weber Meyer Wagner "
    "Becker Martin Bernard Dubois Thomas Robert Richard Petit Durand Rossi Russo "
    "Ferrari Esposito Bianchi Romano Colombo Ivanov Smirnov Kuznetsov Popov Novak "
    "Horvat Kovacevic Babic Maric Juric Medic Snajder Silva Santos Oliveira Souza "
    "Pereira Costa Kumar Singh Sharma Patel Gupta Das Khan Ali Hassan Hussein Cohen "
    "Levi Nguyen Tran Pham Hansen Johansen Larsen Nielsen Andersen Jensen Murphy "
    "Kelly O'Brien Walsh Taylor Wilson Anderson Moore Jackson White Harris Clark "
    "Lewis Robinson Walker Young Allen King Wright Scott Hill Green Adams Baker"
)

# Pseudo-word building blocks: onset + vowel (+ coda) syllables and a Latinate suffix.
_ONSETS = _words("b c d f g h k l m n p r s t v z br cr dr gr pr tr st sp ch th ph pl cl fl sc qu")
_VOWELS = _words("a e i o u a e i o ae io ia ou y")
_CODAS = ["", "", "", "", "n", "r", "s", "l", "m", "x", "t"]
_SUFFIXES = _words(
    "ase in ine ide ium osis ology ic al ar on ene ate ite ol yl oid ism ation ity ant "
    "ent ome ax an is us or"
)

#: Keys of an S2ORC v2020 metadata record, in the order the release writes them.
V2020_KEYS: tuple[str, ...] = (
    "paper_id",
    "title",
    "authors",
    "abstract",
    "year",
    "arxiv_id",
    "acl_id",
    "pmc_id",
    "pubmed_id",
    "doi",
    "venue",
    "journal",
    "mag_id",
    "mag_field_of_study",
    "outbound_citations",
    "inbound_citations",
    "has_outbound_citations",
    "has_inbound_citations",
    "has_pdf_parse",
    "s2_url",
)

# ---- tunables (changing one changes the corpus for a given seed) ----
TEXT_BLOCK = 1024  # papers per text RNG stream; fixed so records ignore the shard count
GRAPH_CHUNK = 1 << 16  # citing papers per vectorised citation batch
LAST_YEAR_SHARE = 0.09  # share of papers in the last year (the query year)
SECOND_FIELD_RATE = 0.12
NULL_FIELDS_RATE = 0.02  # mag_field_of_study null
NULL_YEAR_RATE = 0.02
NULL_TITLE_RATE = 0.01
EMPTY_TITLE_RATE = 0.01
NULL_ABSTRACT_RATE = 0.13
SHORT_ABSTRACT_RATE = 0.02
SUBTOPICS_PER_TOPIC = 6
SUBTOPIC_WORDS = 12
TOPIC_WORDS = 30
FIELD_PSEUDO_WORDS = 40
FITNESS_ALPHA = 1.5  # Pareto exponent of a paper's citation attractiveness
OBSCURE_RATE = 0.3  # papers whose attractiveness is scaled by OBSCURE_FITNESS
OBSCURE_FITNESS = 0.03
# Where a reference goes: same subtopic, same topic, same field, another field.
CITATION_LEVELS = (0.55, 0.22, 0.13, 0.10)
SAME_YEAR_RATE = 0.15
# The last year stands for the snapshot's newest papers, which in S2ORC are also cited by
# papers after it. Without more same-year citations too few of them would pass the
# "cited at least 3 times" prefilter to serve as queries.
LAST_YEAR_SAME_RATE = 0.35
FUTURE_YEAR_RATE = 0.02  # S2ORC has some citations to "later" papers (preprints)
MEAN_LAG = 4.0  # mean years between a citing paper and an older cited paper


# ----------------------------------------------------------------------------------------
# Corpus structure: per-paper attributes
# ----------------------------------------------------------------------------------------


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


def _pick_within(groups: np.ndarray, cum: np.ndarray, u: np.ndarray) -> np.ndarray:
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

    related = np.full((len(FIELDS), 4), -1, dtype=np.int8)
    n_related = np.zeros(len(FIELDS), dtype=np.int64)
    for i, name in enumerate(FIELDS):
        rel = [FIELDS.index(r) for r in RELATED_FIELDS[name]]
        related[i, : len(rel)] = rel
        n_related[i] = len(rel)
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
    topic = _pick_within(field.astype(np.float64), topic_cum, rng.random(num_papers))

    sub_topic = np.repeat(np.arange(len(subs_per_topic), dtype=np.int32), subs_per_topic)
    sub_w = rng.uniform(0.5, 1.5, sub_topic.shape[0])
    sub_cum = _within_cumulative(sub_topic, sub_w)
    subtopic = _pick_within(topic.astype(np.float64), sub_cum, rng.random(num_papers))

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


# ----------------------------------------------------------------------------------------
# Citation graph
# ----------------------------------------------------------------------------------------


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


@dataclass(frozen=True)
class Density:
    """How much each record carries.

    The default is the demo's and the tests': enough references that most papers pass
    the citation prefilter at small sizes, which is denser than S2ORC.
    ``DENSITIES["s2orc-v2020"]`` matches the real corpus per paper, for ingestion
    benchmarks that should say what a run on S2ORC costs.
    """

    # Factor on the intended references per paper (before clipping to 1..60).
    references: float = 1.0
    null_abstract_rate: float = NULL_ABSTRACT_RATE

    def __post_init__(self) -> None:
        if not self.references > 0:
            raise ConfigError(f"Density.references must be > 0, got {self.references}")
        if not 0 <= self.null_abstract_rate <= 1 - SHORT_ABSTRACT_RATE:
            raise ConfigError(
                f"Density.null_abstract_rate must be in [0, {1 - SHORT_ABSTRACT_RATE}], "
                f"got {self.null_abstract_rate}"
            )


DENSITIES = {
    "default": Density(),
    # S2ORC v2020 links 380.5M citations among 81.1M papers (Lo et al., 2020): 4.69 per
    # paper, against 12.6 in the default corpus; 0.35 gives 4.6 at 2M papers. About half
    # of its abstracts are missing (512 of the 1,000 records of ../shared's real sample).
    "s2orc-v2020": Density(references=0.35, null_abstract_rate=0.51),
}


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

    related = np.full((len(FIELDS), 4), -1, dtype=np.int64)
    n_related = np.zeros(len(FIELDS), dtype=np.int64)
    for i, name in enumerate(FIELDS):
        rel = [FIELDS.index(r) for r in RELATED_FIELDS[name]]
        related[i, : len(rel)] = rel
        n_related[i] = len(rel)
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
        target_topic = _pick_within(target_field.astype(np.float64), s.topic_cum, crng.random(k))
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


# ----------------------------------------------------------------------------------------
# Vocabulary and text
# ----------------------------------------------------------------------------------------

# Template slots become negative tokens, -1 - column. Columns: the paper's subtopic, topic,
# field and second field vocabularies, three per-paper focus terms, then WORD_CLASSES. A
# `{K}` (key term) slot resolves to one of the content columns at random.
_COL_S, _COL_T, _COL_F, _COL_X, _COL_FOCUS = 0, 1, 2, 3, 4
_FIRST_CLASS_COL = 7
_SLOT_COLS = {"S": _COL_S, "T": _COL_T, "F": _COL_F, "X": _COL_X} | {
    name: _FIRST_CLASS_COL + i for i, name in enumerate(WORD_CLASSES)
}
_COL_K = _FIRST_CLASS_COL + len(WORD_CLASSES)
_SLOT_COLS["K"] = _COL_K
# Key terms: 25% focus terms, 35% subtopic, 30% topic, 10% field words.
_K_COLS = np.array([_COL_FOCUS, _COL_FOCUS + 1, _COL_FOCUS + 2, _COL_S, _COL_T, _COL_F])
_K_CUM = np.array([0.25 / 3, 0.5 / 3, 0.25, 0.6, 0.9])
# Zipf-like skew per column (u ** power): higher powers favour a vocabulary's first words.
_COL_POWER = np.array([1.6, 1.6, 1.4, 1.4, 1.0, 1.0, 1.0] + [1.2] * len(WORD_CLASSES))
_SEP = 0  # vocabulary id of the title / abstract separator "\x00"
# Tokens glued to the word before them. Every other word is stored with a leading space,
# so a block's text is one "".join with no clean-up passes over the string.
_PUNCTUATION = frozenset({".", ",", ":", ";", "%"})


@dataclass
class Vocabulary:
    """All words in one array; slots index into contiguous per-owner ranges."""

    words: np.ndarray  # object array of str, each with its leading space (if any)
    class_range: list[tuple[int, int]]  # (offset, length) per WORD_CLASSES entry
    field_off: np.ndarray  # int64 per field (English terms + pseudo-words)
    field_len: np.ndarray
    topic_off: np.ndarray  # int64 per topic
    sub_off: np.ndarray  # int64 per subtopic
    templates: np.ndarray  # int32 tokens of every template, concatenated
    tpl_start: np.ndarray  # int64 per template
    tpl_len: np.ndarray
    n_title: int  # templates [0, n_title) are titles
    n_sentence: int  # then sentences; the last template is the separator alone


def _pseudo_words(rng: np.random.Generator, count: int, taken: set[str]) -> list[str]:
    """``count`` distinct pronounceable pseudo-words not in ``taken`` (which is updated)."""
    out: list[str] = []
    while len(out) < count:
        need = (count - len(out)) * 2 + 16
        n_syl = (1 + np.searchsorted([0.45, 0.9], rng.random(need), side="right")).tolist()
        ons = rng.integers(len(_ONSETS), size=(need, 3)).tolist()
        vow = rng.integers(len(_VOWELS), size=(need, 3)).tolist()
        cod = rng.integers(len(_CODAS), size=(need, 3)).tolist()
        suf = rng.integers(len(_SUFFIXES) + 4, size=need).tolist()  # a few get no suffix
        for i in range(need):
            word = "".join(
                _ONSETS[ons[i][k]] + _VOWELS[vow[i][k]] + _CODAS[cod[i][k]] for k in range(n_syl[i])
            )
            if suf[i] < len(_SUFFIXES):
                word += _SUFFIXES[suf[i]]
            if len(word) >= 4 and word not in taken:
                taken.add(word)
                out.append(word)
                if len(out) == count:
                    break
    return out


def build_vocabulary(structure: Structure, seed: int) -> Vocabulary:
    """Fixed words, word classes, and the field / topic / subtopic vocabularies."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 3]))
    words: list[str] = ["\x00"]
    index: dict[str, int] = {}

    def fixed(word: str) -> int:
        if word not in index:
            index[word] = len(words)
            words.append(word)
        return index[word]

    def parse(template: str) -> list[int]:
        tokens = []
        for tok in template.split():
            if tok.startswith("{") and tok.endswith("}"):
                name = tok[1:-1]
                if name not in _SLOT_COLS:
                    raise ValueError(f"unknown slot {tok!r} in template {template!r}")
                tokens.append(-1 - _SLOT_COLS[name])
            else:
                tokens.append(fixed(tok))
        return tokens

    parsed = [parse(t) for t in TITLE_TEMPLATES] + [parse(t) for t in SENTENCE_TEMPLATES]
    parsed.append([_SEP])
    tpl_len = np.array([len(t) for t in parsed], dtype=np.int64)
    tpl_start = np.concatenate([[0], np.cumsum(tpl_len)[:-1]]).astype(np.int64)
    templates = np.array([tok for t in parsed for tok in t], dtype=np.int32)

    class_range: list[tuple[int, int]] = []
    for members in WORD_CLASSES.values():
        class_range.append((len(words), len(members)))
        words.extend(members)

    taken = {w.lower() for w in words} | {w for terms in FIELD_TERMS.values() for w in terms}
    field_off, field_len = [], []
    for name in FIELDS:
        field_off.append(len(words))
        words.extend(FIELD_TERMS[name])
        words.extend(_pseudo_words(rng, FIELD_PSEUDO_WORDS, taken))
        field_len.append(len(words) - field_off[-1])
    n_topics = structure.topic_field.shape[0]
    topic_off = len(words) + TOPIC_WORDS * np.arange(n_topics, dtype=np.int64)
    words.extend(_pseudo_words(rng, TOPIC_WORDS * n_topics, taken))
    n_subs = structure.sub_topic.shape[0]
    sub_off = len(words) + SUBTOPIC_WORDS * np.arange(n_subs, dtype=np.int64)
    words.extend(_pseudo_words(rng, SUBTOPIC_WORDS * n_subs, taken))

    spaced = [w if w in _PUNCTUATION or w == "\x00" else " " + w for w in words]
    return Vocabulary(
        words=np.array(spaced, dtype=object),
        class_range=class_range,
        field_off=np.array(field_off, dtype=np.int64),
        field_len=np.array(field_len, dtype=np.int64),
        topic_off=topic_off,
        sub_off=sub_off,
        templates=templates,
        tpl_start=tpl_start,
        tpl_len=tpl_len,
        n_title=len(TITLE_TEMPLATES),
        n_sentence=len(SENTENCE_TEMPLATES),
    )


def _zipf_index(rng: np.random.Generator, length: np.ndarray | int, power: float) -> np.ndarray:
    """Skewed index in ``[0, length)``: low indices are the frequent words."""
    size = np.shape(length) or None
    return (length * rng.random(size) ** power).astype(np.int64)


def _block_text(
    rng: np.random.Generator, vocab: Vocabulary, s: Structure, lo: int, hi: int
) -> tuple[list[str], list[str]]:
    """Titles and abstracts of papers ``[lo, hi)``, assembled for the whole block at once."""
    nb = hi - lo
    n_sent = rng.integers(6, 14, nb)
    per_paper = n_sent + 3  # title, separator, sentences, separator
    total = int(per_paper.sum())
    starts = np.concatenate([[0], np.cumsum(per_paper)[:-1]])
    paper_of_piece = np.repeat(np.arange(nb), per_paper)
    pos = np.arange(total) - starts[paper_of_piece]
    sep_tpl = vocab.n_title + vocab.n_sentence
    piece = np.full(total, sep_tpl, dtype=np.int64)
    piece[starts] = rng.integers(vocab.n_title, size=nb)
    is_sentence = (pos >= 2) & (pos < per_paper[paper_of_piece] - 1)
    piece[is_sentence] = vocab.n_title + rng.integers(vocab.n_sentence, size=int(is_sentence.sum()))

    lens = vocab.tpl_len[piece]
    n_tok = int(lens.sum())
    tok_base = np.repeat(vocab.tpl_start[piece] - (np.cumsum(lens) - lens), lens)
    tokens = vocab.templates[tok_base + np.arange(n_tok)].astype(np.int64)
    paper = np.repeat(paper_of_piece, lens)

    pid = np.arange(lo, hi)
    sub = s.subtopic[pid].astype(np.int64)
    top = s.topic[pid].astype(np.int64)
    fld = s.field[pid].astype(np.int64)
    fld2 = s.field2[pid].astype(np.int64)
    fld2 = np.where(fld2 >= 0, fld2, fld)

    # Per paper and slot column: where the column's words start and how many there are.
    n_cols = _FIRST_CLASS_COL + len(WORD_CLASSES)
    off = np.empty((nb, n_cols), dtype=np.int64)
    length = np.ones((nb, n_cols), dtype=np.int64)
    off[:, _COL_S], length[:, _COL_S] = vocab.sub_off[sub], SUBTOPIC_WORDS
    off[:, _COL_T], length[:, _COL_T] = vocab.topic_off[top], TOPIC_WORDS
    off[:, _COL_F], length[:, _COL_F] = vocab.field_off[fld], vocab.field_len[fld]
    off[:, _COL_X], length[:, _COL_X] = vocab.field_off[fld2], vocab.field_len[fld2]
    # A paper repeats a few focus terms (two subtopic words, one topic word), as real
    # abstracts do; each focus column holds exactly one word.
    off[:, _COL_FOCUS] = vocab.sub_off[sub] + _zipf_index(rng, np.full(nb, SUBTOPIC_WORDS), 1.5)
    off[:, _COL_FOCUS + 1] = vocab.sub_off[sub] + _zipf_index(rng, np.full(nb, SUBTOPIC_WORDS), 1.5)
    off[:, _COL_FOCUS + 2] = vocab.topic_off[top] + _zipf_index(rng, np.full(nb, TOPIC_WORDS), 1.5)
    for col, (start, size) in enumerate(vocab.class_range, start=_FIRST_CLASS_COL):
        off[:, col], length[:, col] = start, size

    slot = np.flatnonzero(tokens < 0)
    col = -1 - tokens[slot]
    sp = paper[slot]
    is_k = col == _COL_K
    col[is_k] = _K_COLS[np.searchsorted(_K_CUM, rng.random(int(is_k.sum())), side="right")]
    u = rng.random(slot.shape[0])
    word = off[sp, col] + (length[sp, col] * u ** _COL_POWER[col]).astype(np.int64)
    tokens[slot] = word
    # Avoid "X X" when two content slots in a row draw the same word (slot 0 never
    # repeats: every piece starts with a fixed word or follows the separator).
    dup = np.flatnonzero((word == tokens[np.maximum(slot - 1, 0)]) & (slot > 0))
    tokens[slot[dup]] = vocab.topic_off[top[sp[dup]]] + (word[dup] + 7) % TOPIC_WORDS

    parts = "".join(vocab.words[tokens].tolist()).split("\x00")
    # Each part starts with its first word's space; titles get a capital letter.
    titles = [t[1:2].upper() + t[2:] for t in parts[0 : 2 * nb : 2]]
    abstracts = [a[1:] for a in parts[1 : 2 * nb : 2]]
    return titles, abstracts


# ----------------------------------------------------------------------------------------
# Records
# ----------------------------------------------------------------------------------------


def paper_id(index: int, width: int) -> str:
    """The corpus id of paper ``index`` ("s2-" + zero-padded number)."""
    return f"s2-{index:0{width}d}"


def _id_width(num_papers: int) -> int:
    return max(8, len(str(max(0, num_papers - 1))))


_ARXIV_FIELDS = {FIELDS.index(f) for f in ("Physics", "Mathematics", "Computer Science")}
_PUBMED_FIELDS = {FIELDS.index(f) for f in ("Medicine", "Biology", "Psychology")}
_CS = FIELDS.index("Computer Science")
_OLD_ARXIV = ("hep-th", "hep-ph", "math", "cond-mat", "astro-ph", "cs", "quant-ph", "gr-qc")


def _journals() -> list[list[str]]:
    """A few journal names per field."""
    out = []
    for name in FIELDS:
        terms = FIELD_TERMS[name]
        out.append(
            [
                f"Journal of {name}",
                f"{name} Letters",
                f"International Journal of {name} Research",
                f"Annals of {name}",
                f"{terms[0].capitalize()} and {terms[1].capitalize()}",
                f"Advances in {terms[2].capitalize()}",
                f"{name} Reviews",
                f"Journal of {terms[3].capitalize()} Studies",
            ]
        )
    return out


def _venues() -> list[list[str]]:
    """A few proceedings / venue names per field."""
    return [
        [
            f"Proceedings of the International Conference on {name}",
            f"{name} Symposium",
            "AIP Conference Proceedings" if name == "Physics" else f"{name} Workshop",
        ]
        for name in FIELDS
    ]


# One record, keys in V2020_KEYS order, separators as in the S2ORC release (json.dumps
# defaults). Every value is pre-formatted JSON: generated text never holds a quote, a
# backslash or a control character, so plain string formatting gives valid JSON fast.
_RECORD = (
    '{"paper_id": "%s", "title": %s, "authors": [%s], "abstract": %s, "year": %s, '
    '"arxiv_id": %s, "acl_id": %s, "pmc_id": %s, "pubmed_id": %s, "doi": %s, "venue": %s, '
    '"journal": %s, "mag_id": "%s", "mag_field_of_study": %s, "outbound_citations": [%s], '
    '"inbound_citations": [%s], "has_outbound_citations": %s, "has_inbound_citations": %s, '
    '"has_pdf_parse": %s, "s2_url": "https://api.semanticscholar.org/CorpusID:%d"}\n'
)
_AUTHOR = '{"first": "%s", "middle": [%s], "last": "%s", "suffix": ""}'
_BOOL = ("false", "true")


def _quoted(value: str | None) -> str:
    return "null" if value is None else f'"{value}"'


class RecordWriter:
    """Builds the JSON lines of blocks of papers from the structure and the graph."""

    def __init__(
        self,
        structure: Structure,
        graph: CitationGraph,
        vocab: Vocabulary,
        seed: int,
        null_abstract_rate: float = NULL_ABSTRACT_RATE,
    ) -> None:
        self.null_abstract_rate = null_abstract_rate
        self.s = structure
        self.g = graph
        self.vocab = vocab
        self.seed = seed
        self.width = _id_width(structure.num_papers)
        self.journals = [[_quoted(j) for j in names] for names in _journals()]
        self.venues = [[_quoted(v) for v in names] for names in _venues()]
        # First names in full, then as initials; middle names: none, then "A." .. "Z.".
        self.first_pool = np.array(
            list(FIRST_NAMES) + [f[0] + "." for f in FIRST_NAMES], dtype=object
        )
        self.middle_pool = np.array([""] + [f'"{chr(65 + k)}."' for k in range(26)], dtype=object)
        self.last_pool = np.array(LAST_NAMES, dtype=object)
        # mag_field_of_study JSON per (field, second field + 1).
        self.fields_json = [
            [json.dumps([FIELDS[f]])]
            + [json.dumps([FIELDS[f], FIELDS[g]]) for g in range(len(FIELDS))]
            for f in range(len(FIELDS))
        ]

    def _id_items(self, ids: np.ndarray) -> str:
        """``"s2-00000012", "s2-00000345", `` for ``ids`` (each item followed by ", ")."""
        width = self.width
        table = np.empty((ids.shape[0], width + 7), dtype=np.uint8)
        table[:, :4] = np.frombuffer(b'"s2-', dtype=np.uint8)
        powers = 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)
        table[:, 4 : 4 + width] = (ids.astype(np.int64)[:, None] // powers) % 10 + ord("0")
        table[:, 4 + width :] = np.frombuffer(b'", ', dtype=np.uint8)
        return table.tobytes().decode("ascii")

    def block(self, block: int) -> list[dict[str, Any]]:
        """Records of global text block ``block``, parsed back into dicts (for tests)."""
        return [json.loads(line) for line in self.lines(block)]

    def lines(self, block: int) -> list[str]:
        """JSON lines of global text block ``block`` (papers ``[block*B, (block+1)*B)``).

        Every draw is made for the whole block in a fixed order, so a record depends only on
        ``(seed, block)`` and never on how papers are split into shards.
        """
        s, g = self.s, self.g
        lo = block * TEXT_BLOCK
        hi = min(s.num_papers, lo + TEXT_BLOCK)
        nb = hi - lo
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, 2, block]))
        titles, abstracts = _block_text(rng, self.vocab, s, lo, hi)
        flags = rng.random((nb, 13))
        ints = rng.integers(0, 1 << 62, size=(nb, 6))
        n_auth = np.clip(1 + rng.poisson(2.3, nb), 1, 25)
        n_auth[flags[:, 0] < 0.01] = 0
        a_tot = int(n_auth.sum())
        a_first = rng.integers(len(FIRST_NAMES), size=a_tot)
        a_last = rng.integers(len(LAST_NAMES), size=a_tot)
        a_style = rng.random(a_tot)
        a_mid = rng.integers(26, size=a_tot)

        year = s.year[lo:hi].astype(np.int64)
        field = s.field[lo:hi].astype(np.int64)
        field2 = s.field2[lo:hi].astype(np.int64)

        # Titles and abstracts, with the prefilter failures S2ORC has.
        f1, f2 = flags[:, 1], flags[:, 2]
        title_kind = np.where(
            f1 < NULL_TITLE_RATE, 0, np.where(f1 < NULL_TITLE_RATE + EMPTY_TITLE_RATE, 1, 2)
        )
        title_j = [
            ("null", '""', f'"{t}"')[k] if k < 2 else f'"{t}"'
            for k, t in zip(title_kind.tolist(), titles, strict=True)
        ]
        short = [f'"{a}"' for a in SHORT_ABSTRACTS]
        null_rate = self.null_abstract_rate
        abs_kind = np.where(
            f2 < null_rate,
            -1,
            np.where(f2 < null_rate + SHORT_ABSTRACT_RATE, ints[:, 0] % len(SHORT_ABSTRACTS), -2),
        )
        abstract_j = [
            f'"{a}"' if k == -2 else ("null" if k == -1 else short[k])
            for k, a in zip(abs_kind.tolist(), abstracts, strict=True)
        ]
        year_j = np.where(flags[:, 0] > 1.0 - NULL_YEAR_RATE, "null", year.astype(str)).tolist()

        # Authors: one JSON object each, joined per paper below.
        first_idx = np.where(a_style < 0.15, a_first + len(FIRST_NAMES), a_first)
        mid_idx = np.where(a_style > 0.8, 1 + a_mid, 0)
        authors = [
            _AUTHOR % triple
            for triple in zip(
                self.first_pool[first_idx].tolist(),
                self.middle_pool[mid_idx].tolist(),
                self.last_pool[a_last].tolist(),
                strict=True,
            )
        ]
        a_off = np.concatenate([[0], np.cumsum(n_auth)]).tolist()
        authors_j = [", ".join(authors[a:b]) for a, b in itertools.pairwise(a_off)]

        # Identifiers and venues: most are null, so format only the papers that have one.
        yl, fl, il = year.tolist(), flags.tolist(), ints.tolist()
        journal_j = ["null"] * nb
        venue_j = ["null"] * nb
        doi_j = ["null"] * nb
        pubmed_j = ["null"] * nb
        pmc_j = ["null"] * nb
        arxiv_j = ["null"] * nb
        acl_j = ["null"] * nb
        for j in np.flatnonzero(flags[:, 3] < 0.7).tolist():
            names = self.journals[field[j]]
            journal_j[j] = names[min(len(names) - 1, int(len(names) * fl[j][4] ** 2))]
        venue_rate = np.where(field == _CS, 0.45, 0.2)
        for j in np.flatnonzero(flags[:, 5] < venue_rate).tolist():
            venue_j[j] = self.venues[field[j]][il[j][1] % 3]
        for j in np.flatnonzero(flags[:, 6] < 0.6).tolist():
            iv = il[j]
            doi_j[j] = f'"10.{1000 + iv[1] % 9000}/{yl[j]}.{iv[2] % 100000:05d}.{iv[3] % 1000}"'
        pubmed_rate = np.where(np.isin(field, list(_PUBMED_FIELDS)), 0.55, 0.04)
        for j in np.flatnonzero(flags[:, 7] < pubmed_rate).tolist():
            iv = il[j]
            pubmed_j[j] = f'"{1_000_000 + iv[2] % 31_000_000}"'
            if fl[j][8] < 0.35:
                pmc_j[j] = f'"PMC{1_000_000 + iv[3] % 6_000_000}"'
        arxiv_ok = np.isin(field, list(_ARXIV_FIELDS)) & (year >= 1992) & (flags[:, 9] < 0.3)
        for j in np.flatnonzero(arxiv_ok).tolist():
            y, iv = yl[j], il[j]
            yy, mm, num = y % 100, 1 + iv[4] % 12, iv[5]
            if y >= 2015:
                arxiv_j[j] = f'"{yy:02d}{mm:02d}.{num % 100000:05d}"'
            elif y >= 2007:
                arxiv_j[j] = f'"{yy:02d}{mm:02d}.{num % 10000:04d}"'
            else:
                arxiv_j[j] = (
                    f'"{_OLD_ARXIV[num % len(_OLD_ARXIV)]}/{yy:02d}{mm:02d}{num % 1000:03d}"'
                )
        for j in np.flatnonzero((field == _CS) & (flags[:, 10] < 0.04)).tolist():
            iv = il[j]
            acl_j[j] = f'"{"PDEWN"[iv[4] % 5]}{yl[j] % 100:02d}-{1000 + iv[5] % 2000}"'
        mag_j = (2_000_000_000 + ints[:, 0] % 1_000_000_000).tolist()
        fields_j = [
            "null" if null else self.fields_json[f][f2 + 1]
            for null, f, f2 in zip(
                (flags[:, 11] < NULL_FIELDS_RATE).tolist(),
                field.tolist(),
                field2.tolist(),
                strict=True,
            )
        ]

        # Citations: every quoted id plus its ", " has the same width, so a paper's list is
        # one slice of a string built for the whole block with numpy.
        item = self.width + 7
        out_off = g.out_offsets[lo : hi + 1]
        in_off = g.in_offsets[lo : hi + 1]
        out_text = self._id_items(g.out_targets[out_off[0] : out_off[-1]])
        in_text = self._id_items(g.in_sources[in_off[0] : in_off[-1]])
        out_j = [
            out_text[a * item : b * item - 2] if b > a else ""
            for a, b in itertools.pairwise((out_off - out_off[0]).tolist())
        ]
        in_j = [
            in_text[a * item : b * item - 2] if b > a else ""
            for a, b in itertools.pairwise((in_off - in_off[0]).tolist())
        ]
        has_out = [_BOOL[k] for k in (np.diff(out_off) > 0).tolist()]
        has_in = [_BOOL[k] for k in (np.diff(in_off) > 0).tolist()]
        pdf = [_BOOL[k] for k in (flags[:, 12] < 0.25).tolist()]

        pid_fmt = f"s2-%0{self.width}d"
        return [
            _RECORD % row
            for row in zip(
                [pid_fmt % i for i in range(lo, hi)],
                title_j,
                authors_j,
                abstract_j,
                year_j,
                arxiv_j,
                acl_j,
                pmc_j,
                pubmed_j,
                doi_j,
                venue_j,
                journal_j,
                mag_j,
                fields_j,
                out_j,
                in_j,
                has_out,
                has_in,
                pdf,
                range(lo, hi),
                strict=True,
            )
        ]


# ----------------------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------------------


@contextlib.contextmanager
def _gzip_writer(path: Path, level: int) -> Iterator[IO[bytes]]:
    """A gzip stream with no file name and mtime 0 in its header, for byte-stable output."""
    with open(path, "wb") as raw:
        handle: IO[bytes]
        if _igzip is not None:
            handle = _igzip.IGzipFile(
                filename="", mode="wb", compresslevel=min(level, 3), fileobj=raw, mtime=0
            )
        else:  # pragma: no cover - isal is a pinned requirement
            handle = gzip.GzipFile(
                filename="", mode="wb", compresslevel=level, fileobj=raw, mtime=0
            )
        with handle:
            yield handle


def shard_path(output_pattern: str, shard: int) -> Path:
    """The output path of ``shard`` (``{shard}`` becomes a 5-digit number)."""
    return Path(output_pattern.format(shard=f"{shard:05d}"))


def shard_ranges(num_papers: int, num_shards: int) -> list[tuple[int, int]]:
    """Contiguous paper-index ranges, one per shard, as even as possible."""
    return [
        (k * num_papers // num_shards, (k + 1) * num_papers // num_shards)
        for k in range(num_shards)
    ]


def _validate(
    num_papers: int, num_shards: int, seed: int, first_year: int, last_year: int, pattern: str
) -> None:
    if num_papers < 1:
        raise ConfigError(f"num_papers must be at least 1, got {num_papers}")
    if num_shards < 1:
        raise ConfigError(f"num_shards must be at least 1, got {num_shards}")
    if seed < 0:
        raise ConfigError(f"seed must be non-negative, got {seed}")
    if first_year > last_year:
        raise ConfigError(f"first_year ({first_year}) is after last_year ({last_year})")
    if num_shards > 1 and "{shard}" not in pattern:
        raise ConfigError(f"output_pattern {pattern!r} needs a '{{shard}}' placeholder")
    try:
        pattern.format(shard="00000")
    except (KeyError, IndexError, ValueError) as error:
        raise ConfigError(f"output_pattern {pattern!r} is not a valid pattern: {error}") from None


def generate_corpus(
    num_papers: int,
    num_shards: int,
    seed: int,
    first_year: int,
    last_year: int,
    output_pattern: str,
    *,
    compresslevel: int = 1,
    density: Density = DENSITIES["default"],
    progress: bool = True,
) -> list[Path]:
    """Write the synthetic corpus as ``num_shards`` gzip'd JSONL shards; return their paths.

    Shard ``k`` holds the papers with indices ``[k*N/S, (k+1)*N/S)`` in id order. The same
    arguments give byte-identical files (for the same gzip backend), and the concatenated
    records do not depend on ``num_shards``.
    """
    _validate(num_papers, num_shards, seed, first_year, last_year, output_pattern)
    started = time.perf_counter()
    structure = build_structure(num_papers, seed, first_year, last_year)
    graph = build_citations(structure, seed, references=density.references, progress=progress)
    vocab = build_vocabulary(structure, seed)
    log.info(
        "structure: %d papers, %d topics, %d subtopics, %d citations, vocabulary %d words (%.1f s)",
        num_papers,
        structure.topic_field.shape[0],
        structure.sub_topic.shape[0],
        graph.num_edges,
        vocab.words.shape[0],
        time.perf_counter() - started,
    )
    writer = RecordWriter(structure, graph, vocab, seed, density.null_abstract_rate)
    paths = []
    with tqdm(total=num_papers, desc="papers", unit="paper", disable=not progress) as bar:
        for shard, (lo, hi) in enumerate(shard_ranges(num_papers, num_shards)):
            path = shard_path(output_pattern, shard)
            with atomic_path(path) as tmp, _gzip_writer(tmp, compresslevel) as out:
                # A shard boundary may cut a text block: build the block, keep its slice.
                for block in range(lo // TEXT_BLOCK, -(-hi // TEXT_BLOCK)):
                    start = block * TEXT_BLOCK
                    a, b = max(lo, start) - start, min(hi, start + TEXT_BLOCK) - start
                    if a >= b:
                        continue
                    out.write("".join(writer.lines(block)[a:b]).encode("utf-8"))
                    bar.update(b - a)
            paths.append(path)
    elapsed = time.perf_counter() - started
    log.info(
        "wrote %d papers in %d shards in %.1f s (%.0f papers/s)",
        num_papers,
        num_shards,
        elapsed,
        num_papers / max(elapsed, 1e-9),
    )
    return paths


# ----------------------------------------------------------------------------------------
# Command line
# ----------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m citeval.synth",
        description="Generate a synthetic S2ORC v2020 metadata corpus (gzip'd JSONL shards).",
    )
    parser.add_argument("--num-papers", type=int, required=True, help="papers to generate")
    parser.add_argument("--num-shards", type=int, default=1, help="output shards (default: 1)")
    parser.add_argument("--seed", type=int, default=13, help="random seed (default: 13)")
    parser.add_argument("--first-year", type=int, default=1990, help="default: 1990")
    parser.add_argument("--last-year", type=int, default=2019, help="default: 2019")
    parser.add_argument(
        "--output-pattern",
        required=True,
        help="shard path with a '{shard}' placeholder (5-digit, zero-padded)",
    )
    parser.add_argument(
        "--compresslevel",
        type=int,
        default=1,
        choices=range(0, 10),
        metavar="0-9",
        help="gzip level (isal uses at most 3; default: 1)",
    )
    parser.add_argument(
        "--density",
        choices=sorted(DENSITIES),
        default="default",
        help="references and abstracts per paper: the demo's (default) or S2ORC v2020's",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")
    return parser


def command(args: argparse.Namespace) -> None:
    paths = generate_corpus(
        args.num_papers,
        args.num_shards,
        args.seed,
        args.first_year,
        args.last_year,
        args.output_pattern,
        compresslevel=args.compresslevel,
        density=DENSITIES[args.density],
        progress=not args.no_progress,
    )
    for path in paths:
        log.info("wrote %s", path)


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(build_parser, command, argv)


if __name__ == "__main__":
    sys.exit(main())
