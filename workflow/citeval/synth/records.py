"""S2ORC v2020 metadata records of the synthetic corpus, as JSON lines.

A block of papers is formatted at once from pre-formatted JSON fragments; the prefilter
failures S2ORC has (null year, empty title, short or missing abstract) are drawn here.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import numpy as np

from citeval.synth.citations import CitationGraph
from citeval.synth.lexicon import FIELD_TERMS, FIRST_NAMES, LAST_NAMES, SHORT_ABSTRACTS
from citeval.synth.shape import (
    EMPTY_TITLE_RATE,
    FIELDS,
    NULL_ABSTRACT_RATE,
    NULL_FIELDS_RATE,
    NULL_TITLE_RATE,
    NULL_YEAR_RATE,
    SHORT_ABSTRACT_RATE,
    TEXT_BLOCK,
)
from citeval.synth.structure import Structure
from citeval.synth.text import Vocabulary, block_text

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


def paper_id(index: int, width: int) -> str:
    """The corpus id of paper ``index`` ("s2-" + zero-padded number)."""
    return f"s2-{index:0{width}d}"


def id_width(num_papers: int) -> int:
    """Digits of the number in a paper id of a corpus of ``num_papers`` (at least 8)."""
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
        self.width = id_width(structure.num_papers)
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
        titles, abstracts = block_text(rng, self.vocab, s, lo, hi)
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
