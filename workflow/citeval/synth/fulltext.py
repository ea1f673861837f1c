"""Full text of the synthetic corpus as S2ORC v2020 ``pdf_parses`` records, as JSON lines.

Every paper with a real abstract and at least one outgoing citation gets a record: its
abstract, a body of sections of paragraphs, and one bib entry per citation of the graph
plus about 10% references the corpus does not resolve (``link`` null). Every bib entry is
cited at least once by a numbered marker ("[n]", n = bib number + 1; a fifth of the
markers cite two entries, "[3, 7]" as the two spans "[3" and "7]"). A marker's sentence
mixes words of the cited paper's title and subtopic with the citing paper's own words,
so a citation context carries a real but imperfect lexical signal about the cited paper.

Cited titles are needed for any paper of the corpus, and citations point all over it, so
an index pass first keeps every title as vocabulary ids (int32, CSR) and which papers
have a real abstract (:mod:`~citeval.synth.fulltext_words`); a block's records are then
built from a generator seeded by ``(seed, 4, block)``, independent of the shard count.

A block is built in stages, each taking that generator in turn, so the draws always come
in one order: slot columns, bib entries, markers, the body's sentences, paragraphs and
sections, the unresolved references' titles, the slots' words, the entries' years. Only
then are the strings made, with no more draws (:mod:`~citeval.synth.fulltext_render`).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from citeval.synth import fulltext_render as render
from citeval.synth.citations import CitationGraph
from citeval.synth.fulltext_words import (
    COL_C,
    N_COLS,
    TOK_M,
    CitingVocabulary,
    TitleIndex,
    citing_vocabulary,
    excl_cumsum,
    gather,
    index_titles,
)
from citeval.synth.records import id_width
from citeval.synth.shape import NULL_ABSTRACT_RATE, SUBTOPIC_WORDS, TEXT_BLOCK, TOPIC_WORDS
from citeval.synth.structure import Structure
from citeval.synth.text import (
    COL_F,
    COL_FOCUS,
    COL_K,
    COL_POWER,
    COL_S,
    COL_T,
    COL_X,
    FIRST_CLASS_COL,
    K_COLS,
    K_CUM,
    Vocabulary,
    block_text,
    zipf_index,
)

#: Seed-sequence stream of the full text (0 structure, 1 citations, 2 records, 3 words).
STREAM = 4
#: Section names, in order; a paper walks through a prefix of them.
SECTIONS: tuple[str, ...] = (
    "Introduction",
    "Related Work",
    "Methods",
    "Results",
    "Discussion",
    "Conclusion",
)
UNRESOLVED_RATE = 0.11  # unresolved bib entries per linked one: ~10% of the entries
REPEAT_RATE = 0.2  # bib entries cited a second time
PAIR_RATE = 1 / 3  # mention pairs merged into one two-entry marker: a fifth of markers
FILLER_SENTENCES = (12, 28)  # sentences without a marker per paper (low, high)
NEW_PARAGRAPH_RATE = 0.27
NEW_SECTION_RATE = 0.45
CITED_TITLE_RATE = 0.65  # a {C} word comes from the cited title, else its subtopic
MAX_UNRESOLVED_AGE = 15  # years before the citing paper an unresolved reference may be

# Citing sentences: {C} is a word of the cited paper (of the citing paper for unresolved
# references), {M} the marker; the other slots are the citing paper's, as in text.py.
CITING_TEMPLATES: tuple[str, ...] = (
    "{M} {Vd} that {C} {C} {Vs} {K} {Gp} .",
    "{M} {Vp} {C} {C} {Gp} with a {A} {K} {G} .",
    "Previous {Gp} of {C} {C} have {Vp} the {K} {G} {M} .",
    "The {C} {C} {G} was first {Vp} in {M} .",
    "A {A} {G} of {C} {C} and {C} was {Vp} for {K} {Gp} {M} .",
    "We follow the {C} {G} of {M} for {K} {K} {Gp} .",
    "Several {Gp} {V} that {C} {C} {Vs} {C} {K} . {M}",
    "{C} {C} {Gp} were {Vd} in {C} {K} {M} .",
    "In contrast to {M} , our {G} {Vs} {C} {C} without {K} {Gp} .",
    "Related {Gp} on {C} {K} {C} are {Vp} in {M} , which {Vs} {A} {C} {Gp} .",
    "It has been {Vd} that {C} {Vs} {C} {C} in {X} {K} . {M}",
)


@dataclass(frozen=True)
class Columns:
    """Per citing paper and slot column: the first word and the count (as text.py's)."""

    off: np.ndarray  # int64, (papers, N_COLS)
    length: np.ndarray  # int64, (papers, N_COLS)
    top: np.ndarray  # int64 topic per paper


@dataclass(frozen=True)
class Entries:
    """A block's bib entries, grouped by citing paper: its citations, then unresolved ones."""

    row: np.ndarray  # citing paper, as an index into the block's citing papers
    target: np.ndarray  # cited paper; -1 for an unresolved reference
    linked: np.ndarray  # bool: target >= 0
    num: np.ndarray  # bib number within the citing paper, from 0
    start: np.ndarray  # first entry of each citing paper


@dataclass(frozen=True)
class Markers:
    """A block's citation markers, grouped by citing paper; each cites one or two entries."""

    row: np.ndarray  # citing paper
    t1: np.ndarray  # cited paper of the (lower-numbered) first entry, -1 if unresolved
    t2: np.ndarray  # of the second entry, -1 if unresolved, -2 for a one-entry marker
    num1: list[int]  # bib numbers as printed, from 1
    num2: list[int]  # 0 for a one-entry marker
    text: list[str]  # " [3]" or " [3, 7]"


@dataclass(frozen=True)
class Layout:
    """A block's body sentences in reading order, with their paragraphs and sections."""

    row: np.ndarray  # citing paper per sentence
    tpl: np.ndarray  # template per sentence
    marker: np.ndarray  # marker of a citing sentence; -1 for a filler sentence
    par: np.ndarray  # paragraph per sentence
    par_first: np.ndarray  # first sentence of each paragraph
    par_row: np.ndarray  # citing paper per paragraph
    par_sec: np.ndarray  # index into SECTIONS per paragraph


@dataclass(frozen=True)
class Pieces:
    """Tokens of a block's pieces: the body's sentences, then the unresolved entries' titles."""

    tokens: np.ndarray  # int64 vocabulary ids; negative slots until filled, TOK_M stays
    row: np.ndarray  # citing paper per token
    start: np.ndarray  # first token of each piece
    length: np.ndarray  # tokens per piece
    piece: np.ndarray  # piece per token
    marker: np.ndarray  # marker per piece, -1 for none
    n_sentences: int  # pieces [0, n_sentences) are the body's
    n_body: int  # tokens of the body


def _columns(rng: np.random.Generator, s: Structure, v: Vocabulary, pid: np.ndarray) -> Columns:
    """The slot columns of citing papers ``pid``, with their focus terms drawn."""
    n = pid.shape[0]
    sub = s.subtopic[pid].astype(np.int64)
    top = s.topic[pid].astype(np.int64)
    fld = s.field[pid].astype(np.int64)
    fld2 = s.field2[pid].astype(np.int64)
    fld2 = np.where(fld2 >= 0, fld2, fld)
    off = np.empty((n, N_COLS), dtype=np.int64)
    length = np.ones((n, N_COLS), dtype=np.int64)
    off[:, COL_S], length[:, COL_S] = v.sub_off[sub], SUBTOPIC_WORDS
    off[:, COL_T], length[:, COL_T] = v.topic_off[top], TOPIC_WORDS
    off[:, COL_F], length[:, COL_F] = v.field_off[fld], v.field_len[fld]
    off[:, COL_X], length[:, COL_X] = v.field_off[fld2], v.field_len[fld2]
    off[:, COL_FOCUS] = v.sub_off[sub] + zipf_index(rng, np.full(n, SUBTOPIC_WORDS), 1.5)
    off[:, COL_FOCUS + 1] = v.sub_off[sub] + zipf_index(rng, np.full(n, SUBTOPIC_WORDS), 1.5)
    off[:, COL_FOCUS + 2] = v.topic_off[top] + zipf_index(rng, np.full(n, TOPIC_WORDS), 1.5)
    for col, (start, size) in enumerate(v.class_range, start=FIRST_CLASS_COL):
        off[:, col], length[:, col] = start, size
    return Columns(off, length, top)


def _entries(rng: np.random.Generator, g: CitationGraph, pid: np.ndarray, k: np.ndarray) -> Entries:
    """Bib entries of citing papers ``pid`` (``k`` citations each), numbered at random."""
    nbib = k + rng.poisson(UNRESOLVED_RATE * k)
    bib_start = excl_cumsum(nbib)
    n_ent = int(nbib.sum())
    ent_row = np.repeat(np.arange(pid.shape[0]), nbib)
    within = np.arange(n_ent) - bib_start[ent_row]
    linked = within < k[ent_row]
    ent_target = np.full(n_ent, -1, dtype=np.int64)
    ent_target[linked] = g.out_targets[g.out_offsets[pid[ent_row[linked]]] + within[linked]]
    order = np.lexsort((rng.random(n_ent), ent_row))
    ent_num = np.empty(n_ent, dtype=np.int64)
    ent_num[order] = within
    return Entries(ent_row, ent_target, linked, ent_num, bib_start)


def _markers(rng: np.random.Generator, ent: Entries, nq: int) -> Markers:
    """Markers of the mentions of ``ent`` (every entry once, some twice) in random order.

    Some consecutive pairs of mentions of different entries share one marker.
    """
    n_ent = ent.row.shape[0]
    men = np.concatenate([np.arange(n_ent), np.flatnonzero(rng.random(n_ent) < REPEAT_RATE)])
    men_row = ent.row[men]
    order = np.lexsort((rng.random(men.shape[0]), men_row))
    men, men_row = men[order], men_row[order]
    count = np.bincount(men_row, minlength=nq)
    pos = np.arange(men.shape[0]) - excl_cumsum(count)[men_row]
    cand = np.flatnonzero((pos % 2 == 0) & (pos + 1 < count[men_row]))
    cand = cand[(rng.random(cand.shape[0]) < PAIR_RATE) & (men[cand] != men[cand + 1])]
    second = np.full(men.shape[0], -1, dtype=np.int64)
    second[cand] = men[cand + 1]
    keep = np.ones(men.shape[0], dtype=bool)
    keep[cand + 1] = False
    mk_e1, mk_e2, mk_row = men[keep], second[keep], men_row[keep]
    swap = (mk_e2 >= 0) & (ent.num[np.maximum(mk_e2, 0)] < ent.num[mk_e1])
    mk_e1[swap], mk_e2[swap] = mk_e2[swap], mk_e1[swap]
    num1 = (ent.num[mk_e1] + 1).tolist()
    num2 = np.where(mk_e2 >= 0, ent.num[np.maximum(mk_e2, 0)] + 1, 0).tolist()
    return Markers(
        row=mk_row,
        t1=ent.target[mk_e1],
        t2=np.where(mk_e2 >= 0, ent.target[np.maximum(mk_e2, 0)], -2),
        num1=num1,
        num2=num2,
        text=[f" [{a}, {b}]" if b else f" [{a}]" for a, b in zip(num1, num2, strict=True)],
    )


def _layout(
    rng: np.random.Generator, v: Vocabulary, n_base_tpl: int, nq: int, mk_row: np.ndarray
) -> Layout:
    """Body sentences of ``nq`` citing papers, cut into paragraphs and sections.

    Filler sentences come from the abstract templates, and there is one citing sentence
    per marker, biased to the start, where Introduction and Related Work are.
    """
    n_mk = mk_row.shape[0]
    n_fill = rng.integers(*FILLER_SENTENCES, size=nq)
    n_f = int(n_fill.sum())
    pc_row = np.concatenate([np.repeat(np.arange(nq), n_fill), mk_row])
    pc_tpl = np.concatenate(
        [
            v.n_title + rng.integers(v.n_sentence, size=n_f),
            n_base_tpl + rng.integers(len(CITING_TEMPLATES), size=n_mk),
        ]
    )
    pc_mk = np.concatenate([np.full(n_f, -1), np.arange(n_mk)])
    key = rng.random(n_f + n_mk)
    key[n_f:] **= 1.5
    order = np.lexsort((key, pc_row))
    pc_row, pc_tpl, pc_mk = pc_row[order], pc_tpl[order], pc_mk[order]
    n_pc = pc_row.shape[0]
    paper_first = np.concatenate([[True], pc_row[1:] != pc_row[:-1]])
    new_par = (rng.random(n_pc) < NEW_PARAGRAPH_RATE) | paper_first
    pc_par = np.cumsum(new_par) - 1
    par_first_pc = np.flatnonzero(new_par)
    n_par = par_first_pc.shape[0]
    par_paper_first = paper_first[par_first_pc]
    step = np.cumsum((rng.random(n_par) < NEW_SECTION_RATE) & ~par_paper_first)
    first_idx = np.maximum.accumulate(np.where(par_paper_first, np.arange(n_par), 0))
    return Layout(
        row=pc_row,
        tpl=pc_tpl,
        marker=pc_mk,
        par=pc_par,
        par_first=par_first_pc,
        par_row=pc_row[par_first_pc],
        par_sec=np.minimum(step - step[first_idx], len(SECTIONS) - 1),
    )


def _pieces(
    rng: np.random.Generator, v: Vocabulary, words: CitingVocabulary, lay: Layout, ent: Entries
) -> Pieces:
    """The template tokens of the body's sentences, then of made-up titles for the
    unresolved references (title templates, filled with the citing paper's words)."""
    unres = np.flatnonzero(~ent.linked)
    n_u = unres.shape[0]
    piece_tpl = np.concatenate([lay.tpl, rng.integers(v.n_title, size=n_u)])
    piece_row = np.concatenate([lay.row, ent.row[unres]])
    piece_mk = np.concatenate([lay.marker, np.full(n_u, -1)])
    lens = words.tpl_len[piece_tpl]
    piece_tok = excl_cumsum(lens)
    tok_piece = np.repeat(np.arange(piece_tpl.shape[0]), lens)
    tokens = words.templates[gather(words.tpl_start[piece_tpl], lens)].astype(np.int64)
    n_pc = lay.row.shape[0]
    return Pieces(
        tokens=tokens,
        row=piece_row[tok_piece],
        start=piece_tok,
        length=lens,
        piece=tok_piece,
        marker=piece_mk,
        n_sentences=n_pc,
        n_body=int(piece_tok[n_pc]) if n_u else tokens.shape[0],
    )


def _cited_words(
    rng: np.random.Generator,
    s: Structure,
    v: Vocabulary,
    titles: TitleIndex,
    content_min: int,
    target: np.ndarray,
) -> np.ndarray:
    """One word of each (linked) cited paper: of its title or of its subtopic."""
    n = target.shape[0]
    sub = s.subtopic[target].astype(np.int64)
    word = v.sub_off[sub] + zipf_index(rng, np.full(n, SUBTOPIC_WORDS), 1.4)
    a = titles.off[target]
    size = titles.off[target + 1] - a
    tries = titles.tok[a[:, None] + (size[:, None] * rng.random((n, 3))).astype(np.int64)]
    content = tries >= content_min
    use = (rng.random(n) < CITED_TITLE_RATE) & content.any(axis=1)
    word[use] = tries[use, content[use].argmax(axis=1)]
    return word


def _fill_slots(
    rng: np.random.Generator,
    s: Structure,
    v: Vocabulary,
    words: CitingVocabulary,
    titles: TitleIndex,
    cols: Columns,
    mk: Markers,
    pieces: Pieces,
) -> None:
    """Draw the words of ``pieces``' slots, in place; the {M} tokens stay."""
    tokens = pieces.tokens
    slot = np.flatnonzero((tokens < 0) & (tokens != TOK_M))
    col = -1 - tokens[slot]
    sr = pieces.row[slot]
    is_k = col == COL_K
    col[is_k] = K_COLS[np.searchsorted(K_CUM, rng.random(int(is_k.sum())), side="right")]
    is_c = col == COL_C
    # {C}: a word of one of the marker's cited papers; of the citing paper's subtopic
    # or topic when that reference is unresolved.
    c_slot = slot[is_c]
    c_mk = pieces.marker[pieces.piece[c_slot]]
    t1, t2 = mk.t1[c_mk], mk.t2[c_mk]
    target = np.where((t2 > -2) & (rng.random(c_slot.shape[0]) < 0.5), t2, t1)
    col[is_c] = np.where(rng.random(c_slot.shape[0]) < 0.6, COL_S, COL_T)
    u = rng.random(slot.shape[0])
    word = cols.off[sr, col] + (cols.length[sr, col] * u ** COL_POWER[col]).astype(np.int64)
    resolved = target >= 0
    c_word = word[is_c]
    c_word[resolved] = _cited_words(rng, s, v, titles, words.content_min, target[resolved])
    word[is_c] = c_word
    tokens[slot] = word
    dup = np.flatnonzero((word == tokens[np.maximum(slot - 1, 0)]) & (slot > 0))
    tokens[slot[dup]] = v.topic_off[cols.top[sr[dup]]] + (word[dup] + 7) % TOPIC_WORDS


def _years(rng: np.random.Generator, s: Structure, pid: np.ndarray, ent: Entries) -> list[int]:
    """Year per entry: the cited paper's, or for an unresolved reference the citing
    paper's less fewer than :data:`MAX_UNRESOLVED_AGE` years."""
    return np.where(
        ent.linked,
        s.year[np.maximum(ent.target, 0)],
        s.year[pid[ent.row]] - rng.integers(0, MAX_UNRESOLVED_AGE, size=ent.row.shape[0]),
    ).tolist()


class FullTextWriter:
    """Builds the ``pdf_parses`` JSON lines of blocks of papers."""

    def __init__(
        self,
        structure: Structure,
        graph: CitationGraph,
        vocab: Vocabulary,
        seed: int,
        null_abstract_rate: float = NULL_ABSTRACT_RATE,
    ) -> None:
        self.s, self.g, self.vocab, self.seed = structure, graph, vocab, seed
        self.pid_fmt = f"s2-%0{id_width(structure.num_papers)}d"
        self.words = citing_vocabulary(vocab, CITING_TEMPLATES)
        started = time.perf_counter()
        self.titles = index_titles(structure, vocab, seed, null_abstract_rate)
        self.index_seconds = time.perf_counter() - started

    def lines(self, block: int) -> tuple[np.ndarray, list[str]]:
        """Paper indices and JSON lines of the full-text records of text block ``block``.

        Every draw is made for the whole block in a fixed order, so a record depends only
        on ``(seed, block)`` and never on how papers are split into shards.
        """
        s, v, words = self.s, self.vocab, self.words
        lo = block * TEXT_BLOCK
        hi = min(s.num_papers, lo + TEXT_BLOCK)
        deg = np.diff(self.g.out_offsets[lo : hi + 1])
        rows = np.flatnonzero(self.titles.has_abstract[lo:hi] & (deg > 0))
        pid = lo + rows
        nq = pid.shape[0]
        if nq == 0:
            return pid, []
        _, abstracts = block_text(
            np.random.default_rng(np.random.SeedSequence([self.seed, 2, block])), v, s, lo, hi
        )
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, STREAM, block]))
        # The stages' order is the order of the draws: changing it changes the corpus.
        cols = _columns(rng, s, v, pid)
        ent = _entries(rng, self.g, pid, deg[rows])
        mk = _markers(rng, ent, nq)
        lay = _layout(rng, v, words.n_base_tpl, nq, mk.row)
        pieces = _pieces(rng, v, words, lay, ent)
        _fill_slots(rng, s, v, words, self.titles, cols, mk, pieces)
        years = _years(rng, s, pid, ent)

        spelled = render.spell(words, pieces, mk)
        paras = render.paragraphs(spelled, pieces, lay, mk, SECTIONS)
        bib = render.bib_entries(words, self.titles, spelled, pieces, ent, years, self.pid_fmt)
        return pid, render.records(
            self.pid_fmt, self.seed, pid, rows, abstracts, paras, lay.par_row, bib, ent.start
        )

    def block(self, block: int) -> list[dict[str, Any]]:
        """Records of text block ``block``, parsed back into dicts (for tests)."""
        return [json.loads(line) for line in self.lines(block)[1]]
