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
have a real abstract; a block's records are then built from a generator seeded by
``(seed, 4, block)``, independent of the shard count.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

import numpy as np

from citeval.synth.citations import CitationGraph
from citeval.synth.records import id_width
from citeval.synth.shape import (
    NULL_ABSTRACT_RATE,
    SHORT_ABSTRACT_RATE,
    SUBTOPIC_WORDS,
    TEXT_BLOCK,
    TOPIC_WORDS,
)
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
    PUNCTUATION,
    SEP,
    SLOT_COLS,
    Vocabulary,
    block_text,
    block_tokens,
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
_N_COLS = COL_K + 1
_COL_C, _COL_M = _N_COLS, _N_COLS + 1
_TOK_C, _TOK_M = -1 - _COL_C, -1 - _COL_M

# Pre-formatted JSON, separators as json.dumps writes them. Generated text never holds a
# quote, a backslash or a control character, so plain string formatting gives valid JSON.
_RECORD = (
    '{"paper_id": "%s", "_pdf_hash": "%s", "abstract": [{"section": "Abstract", '
    '"text": "%s", "cite_spans": [], "ref_spans": []}], "body_text": [%s], '
    '"bib_entries": {%s}, "ref_entries": {}}\n'
)
_PARA = '{"section": %s, "text": "%s", "cite_spans": %s, "ref_spans": []}'
_SPAN = '{"start": %d, "end": %d, "text": "[%d]", "ref_id": "BIBREF%d"}'
_SPAN2 = (
    '{"start": %d, "end": %d, "text": "[%d", "ref_id": "BIBREF%d"}, '
    '{"start": %d, "end": %d, "text": "%d]", "ref_id": "BIBREF%d"}'
)
_BIB = (
    '"BIBREF%d": {"ref_id": "b%d", "title": "%s", "authors": [], "year": %d, "venue": "", '
    '"volume": "", "issn": "", "pages": "", "other_ids": {}, "link": %s}'
)


def _excl_cumsum(values: np.ndarray) -> np.ndarray:
    out = np.zeros(values.shape[0], dtype=np.int64)
    np.cumsum(values[:-1], out=out[1:])
    return out


def _gather(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Indices of the concatenated ranges ``[starts[i], starts[i] + lens[i])``."""
    return np.repeat(starts - _excl_cumsum(lens), lens) + np.arange(int(lens.sum()))


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
        self.null_abstract_rate = null_abstract_rate
        self.pid_fmt = f"s2-%0{id_width(structure.num_papers)}d"
        # Words: the vocabulary, then the citing templates' own fixed words.
        n_fixed = vocab.class_range[0][0]
        index = {w: i for i, w in reversed(list(enumerate(vocab.words[:n_fixed].tolist())))}
        extra: list[str] = []
        parsed = []
        for template in CITING_TEMPLATES:
            tokens = []
            for tok in template.split():
                if tok in ("{C}", "{M}"):
                    tokens.append(_TOK_C if tok == "{C}" else _TOK_M)
                elif tok.startswith("{"):
                    tokens.append(-1 - SLOT_COLS[tok[1:-1]])
                else:
                    word = tok if tok in PUNCTUATION else " " + tok
                    if word not in index:
                        index[word] = len(vocab.words) + len(extra)
                        extra.append(word)
                    tokens.append(index[word])
            parsed.append(tokens)
        self.words = np.concatenate([vocab.words, np.array(extra, dtype=object)])
        self.word_len = np.array([len(w) for w in self.words.tolist()], dtype=np.int64)
        self.content_min = int(vocab.field_off[0])  # field, topic, subtopic words
        self.n_base_tpl = vocab.tpl_len.shape[0]
        cite_len = np.array([len(t) for t in parsed], dtype=np.int64)
        self.templates = np.concatenate(
            [vocab.templates, np.array([t for p in parsed for t in p], dtype=np.int32)]
        )
        self.tpl_len = np.concatenate([vocab.tpl_len, cite_len])
        self.tpl_start = np.concatenate(
            [vocab.tpl_start, vocab.templates.shape[0] + _excl_cumsum(cite_len)]
        )
        self.index_seconds = 0.0
        self._index_titles()

    def _index_titles(self) -> None:
        """Every title as vocabulary ids, and which papers have a real abstract.

        Reproduces :class:`~citeval.synth.records.RecordWriter`'s first draws per block.
        """
        started = time.perf_counter()
        s, v = self.s, self.vocab
        toks, lens, ok = [], [], []
        for block in range(-(-s.num_papers // TEXT_BLOCK)):
            lo = block * TEXT_BLOCK
            hi = min(s.num_papers, lo + TEXT_BLOCK)
            rng = np.random.default_rng(np.random.SeedSequence([self.seed, 2, block]))
            tokens = block_tokens(rng, v, s, lo, hi)
            flags = rng.random((hi - lo, 13))
            ok.append(flags[:, 2] >= self.null_abstract_rate + SHORT_ABSTRACT_RATE)
            sep = np.flatnonzero(tokens == SEP)  # after each title and each abstract
            ends = sep[0::2]
            starts = np.concatenate([[0], sep[1::2][:-1] + 1])
            size = ends - starts
            toks.append(tokens[_gather(starts, size)].astype(np.int32))
            lens.append(size)
        self.title_tok = np.concatenate(toks)
        self.title_off = np.concatenate([[0], np.cumsum(np.concatenate(lens))]).astype(np.int64)
        self.has_abstract = np.concatenate(ok)
        self.index_seconds = time.perf_counter() - started

    def _columns(
        self, rng: np.random.Generator, pid: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per citing paper and slot column: first word and count (as text.py's)."""
        s, v = self.s, self.vocab
        n = pid.shape[0]
        sub = s.subtopic[pid].astype(np.int64)
        top = s.topic[pid].astype(np.int64)
        fld = s.field[pid].astype(np.int64)
        fld2 = s.field2[pid].astype(np.int64)
        fld2 = np.where(fld2 >= 0, fld2, fld)
        off = np.empty((n, _N_COLS), dtype=np.int64)
        length = np.ones((n, _N_COLS), dtype=np.int64)
        off[:, COL_S], length[:, COL_S] = v.sub_off[sub], SUBTOPIC_WORDS
        off[:, COL_T], length[:, COL_T] = v.topic_off[top], TOPIC_WORDS
        off[:, COL_F], length[:, COL_F] = v.field_off[fld], v.field_len[fld]
        off[:, COL_X], length[:, COL_X] = v.field_off[fld2], v.field_len[fld2]
        off[:, COL_FOCUS] = v.sub_off[sub] + zipf_index(rng, np.full(n, SUBTOPIC_WORDS), 1.5)
        off[:, COL_FOCUS + 1] = v.sub_off[sub] + zipf_index(rng, np.full(n, SUBTOPIC_WORDS), 1.5)
        off[:, COL_FOCUS + 2] = v.topic_off[top] + zipf_index(rng, np.full(n, TOPIC_WORDS), 1.5)
        for col, (start, size) in enumerate(v.class_range, start=FIRST_CLASS_COL):
            off[:, col], length[:, col] = start, size
        return off, length, top

    def _cited_words(self, rng: np.random.Generator, target: np.ndarray) -> np.ndarray:
        """One word of each (linked) cited paper: of its title or of its subtopic."""
        v, n = self.vocab, target.shape[0]
        sub = self.s.subtopic[target].astype(np.int64)
        word = v.sub_off[sub] + zipf_index(rng, np.full(n, SUBTOPIC_WORDS), 1.4)
        a = self.title_off[target]
        size = self.title_off[target + 1] - a
        tries = self.title_tok[a[:, None] + (size[:, None] * rng.random((n, 3))).astype(np.int64)]
        content = tries >= self.content_min
        use = (rng.random(n) < CITED_TITLE_RATE) & content.any(axis=1)
        word[use] = tries[use, content[use].argmax(axis=1)]
        return word

    def lines(self, block: int) -> tuple[np.ndarray, list[str]]:
        """Paper indices and JSON lines of the full-text records of text block ``block``.

        Every draw is made for the whole block in a fixed order, so a record depends only
        on ``(seed, block)`` and never on how papers are split into shards.
        """
        s, g, v = self.s, self.g, self.vocab
        lo = block * TEXT_BLOCK
        hi = min(s.num_papers, lo + TEXT_BLOCK)
        deg = np.diff(g.out_offsets[lo : hi + 1])
        rows = np.flatnonzero(self.has_abstract[lo:hi] & (deg > 0))
        pid = lo + rows
        nq = pid.shape[0]
        if nq == 0:
            return pid, []
        _, abstracts = block_text(
            np.random.default_rng(np.random.SeedSequence([self.seed, 2, block])), v, s, lo, hi
        )
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, STREAM, block]))
        off, length, top = self._columns(rng, pid)

        # Bib entries: the graph's citations, then unresolved ones, numbered at random.
        k = deg[rows]
        nbib = k + rng.poisson(UNRESOLVED_RATE * k)
        bib_start = _excl_cumsum(nbib)
        n_ent = int(nbib.sum())
        ent_row = np.repeat(np.arange(nq), nbib)
        within = np.arange(n_ent) - bib_start[ent_row]
        linked = within < k[ent_row]
        ent_target = np.full(n_ent, -1, dtype=np.int64)
        ent_target[linked] = g.out_targets[g.out_offsets[pid[ent_row[linked]]] + within[linked]]
        order = np.lexsort((rng.random(n_ent), ent_row))
        ent_num = np.empty(n_ent, dtype=np.int64)
        ent_num[order] = within

        # Mentions (every entry once, some twice) in random order; some consecutive pairs
        # of mentions of different entries share one marker.
        men = np.concatenate([np.arange(n_ent), np.flatnonzero(rng.random(n_ent) < REPEAT_RATE)])
        men_row = ent_row[men]
        order = np.lexsort((rng.random(men.shape[0]), men_row))
        men, men_row = men[order], men_row[order]
        count = np.bincount(men_row, minlength=nq)
        pos = np.arange(men.shape[0]) - _excl_cumsum(count)[men_row]
        cand = np.flatnonzero((pos % 2 == 0) & (pos + 1 < count[men_row]))
        cand = cand[(rng.random(cand.shape[0]) < PAIR_RATE) & (men[cand] != men[cand + 1])]
        second = np.full(men.shape[0], -1, dtype=np.int64)
        second[cand] = men[cand + 1]
        keep = np.ones(men.shape[0], dtype=bool)
        keep[cand + 1] = False
        mk_e1, mk_e2, mk_row = men[keep], second[keep], men_row[keep]
        swap = (mk_e2 >= 0) & (ent_num[np.maximum(mk_e2, 0)] < ent_num[mk_e1])
        mk_e1[swap], mk_e2[swap] = mk_e2[swap], mk_e1[swap]
        n_mk = mk_e1.shape[0]
        num1 = (ent_num[mk_e1] + 1).tolist()
        num2 = np.where(mk_e2 >= 0, ent_num[np.maximum(mk_e2, 0)] + 1, 0).tolist()
        mk_text = [f" [{a}, {b}]" if b else f" [{a}]" for a, b in zip(num1, num2, strict=True)]
        mk_t1 = ent_target[mk_e1]
        mk_t2 = np.where(mk_e2 >= 0, ent_target[np.maximum(mk_e2, 0)], -2)

        # Body sentences: filler from the abstract templates, one citing sentence per
        # marker (biased to the start, where Introduction and Related Work are).
        n_fill = rng.integers(*FILLER_SENTENCES, size=nq)
        n_f = int(n_fill.sum())
        pc_row = np.concatenate([np.repeat(np.arange(nq), n_fill), mk_row])
        pc_tpl = np.concatenate(
            [
                v.n_title + rng.integers(v.n_sentence, size=n_f),
                self.n_base_tpl + rng.integers(len(CITING_TEMPLATES), size=n_mk),
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
        par_row = pc_row[par_first_pc]
        par_paper_first = paper_first[par_first_pc]
        step = np.cumsum((rng.random(n_par) < NEW_SECTION_RATE) & ~par_paper_first)
        first_idx = np.maximum.accumulate(np.where(par_paper_first, np.arange(n_par), 0))
        par_sec = np.minimum(step - step[first_idx], len(SECTIONS) - 1)

        # Unresolved references get made-up titles in the citing paper's words.
        unres = np.flatnonzero(~linked)
        n_u = unres.shape[0]
        piece_tpl = np.concatenate([pc_tpl, rng.integers(v.n_title, size=n_u)])
        piece_row = np.concatenate([pc_row, ent_row[unres]])
        piece_mk = np.concatenate([pc_mk, np.full(n_u, -1)])

        # Tokens of every piece, then their slots.
        lens = self.tpl_len[piece_tpl]
        piece_tok = _excl_cumsum(lens)
        tok_piece = np.repeat(np.arange(piece_tpl.shape[0]), lens)
        tokens = self.templates[_gather(self.tpl_start[piece_tpl], lens)].astype(np.int64)
        tok_row = piece_row[tok_piece]
        slot = np.flatnonzero((tokens < 0) & (tokens != _TOK_M))
        col = -1 - tokens[slot]
        sr = tok_row[slot]
        is_k = col == COL_K
        col[is_k] = K_COLS[np.searchsorted(K_CUM, rng.random(int(is_k.sum())), side="right")]
        is_c = col == _COL_C
        # {C}: a word of one of the marker's cited papers; of the citing paper's subtopic
        # or topic when that reference is unresolved.
        c_slot = slot[is_c]
        c_mk = piece_mk[tok_piece[c_slot]]
        t1, t2 = mk_t1[c_mk], mk_t2[c_mk]
        target = np.where((t2 > -2) & (rng.random(c_slot.shape[0]) < 0.5), t2, t1)
        col[is_c] = np.where(rng.random(c_slot.shape[0]) < 0.6, COL_S, COL_T)
        u = rng.random(slot.shape[0])
        word = off[sr, col] + (length[sr, col] * u ** COL_POWER[col]).astype(np.int64)
        resolved = target >= 0
        c_word = word[is_c]
        c_word[resolved] = self._cited_words(rng, target[resolved])
        word[is_c] = c_word
        tokens[slot] = word
        dup = np.flatnonzero((word == tokens[np.maximum(slot - 1, 0)]) & (slot > 0))
        tokens[slot[dup]] = v.topic_off[top[sr[dup]]] + (word[dup] + 7) % TOPIC_WORDS

        # Strings and their lengths; markers are the {M} tokens, one per citing piece.
        m_pos = np.flatnonzero(tokens == _TOK_M)
        m_idx = piece_mk[tok_piece[m_pos]]
        tokens[m_pos] = 0
        strs = self.words[tokens]
        strs[m_pos] = np.array(mk_text, dtype=object)[m_idx]
        char_len = self.word_len[tokens]
        char_len[m_pos] = np.array([len(t) for t in mk_text], dtype=np.int64)[m_idx]
        n_body = int(piece_tok[n_pc]) if n_u else tokens.shape[0]
        body = "".join(strs[:n_body].tolist())
        tok_start = _excl_cumsum(char_len[:n_body])
        par_cs = tok_start[piece_tok[par_first_pc]]
        par_ce = np.append(par_cs[1:], len(body))
        m_par = pc_par[tok_piece[m_pos]]
        m_at = (tok_start[m_pos] - par_cs[m_par]).tolist()
        par_mk = np.searchsorted(m_par, np.arange(n_par + 1)).tolist()
        spans = []
        for at, i in zip(m_at, m_idx.tolist(), strict=True):
            a, b, text = num1[i], num2[i], mk_text[i]
            if b:
                mid = at + len(str(a)) + 1
                spans.append(_SPAN2 % (at, mid, a, a - 1, mid + 2, at + len(text) - 1, b, b - 1))
            else:
                spans.append(_SPAN % (at, at + len(text) - 1, a, a - 1))
        section_j = [f'"{name}"' for name in SECTIONS]
        paras = [
            _PARA
            % (
                section_j[sec],
                body[cs + 1 : ce],
                "[" + ", ".join(spans[par_mk[p] : par_mk[p + 1]]) + "]",
            )
            for p, (sec, cs, ce) in enumerate(
                zip(par_sec.tolist(), par_cs.tolist(), par_ce.tolist(), strict=True)
            )
        ]

        # Bib titles: the cited papers' own titles, or the made-up ones.
        titles = np.empty(n_ent, dtype=object)
        lt = ent_target[linked]
        t_lens = self.title_off[lt + 1] - self.title_off[lt]
        t_tok = self.title_tok[_gather(self.title_off[lt], t_lens)]
        titles[linked] = self._join(self.words[t_tok], self.word_len[t_tok], t_lens)
        if n_u:
            u_lens = lens[n_pc:]
            titles[unres] = self._join(strs[n_body:], char_len[n_body:], u_lens)
        year = np.where(
            linked,
            s.year[np.maximum(ent_target, 0)],
            s.year[pid[ent_row]] - rng.integers(0, MAX_UNRESOLVED_AGE, size=n_ent),
        ).tolist()
        order = np.lexsort((ent_num, ent_row))
        links = ["null" if t < 0 else '"' + self.pid_fmt % t + '"' for t in ent_target.tolist()]
        title_l = titles.tolist()
        bib = [
            _BIB % (n, n, title_l[e], year[e], links[e])
            for e, n in zip(order.tolist(), ent_num[order].tolist(), strict=True)
        ]

        # Records.
        par_bounds = np.searchsorted(par_row, np.arange(nq + 1)).tolist()
        bib_bounds = np.append(bib_start, n_ent).tolist()
        out = []
        for j, (p, r) in enumerate(zip(pid.tolist(), rows.tolist(), strict=True)):
            paper = self.pid_fmt % p
            pdf_hash = hashlib.sha1(f"{self.seed}/{paper}".encode()).hexdigest()
            out.append(
                _RECORD
                % (
                    paper,
                    pdf_hash,
                    abstracts[r],
                    ", ".join(paras[par_bounds[j] : par_bounds[j + 1]]),
                    ", ".join(bib[bib_bounds[j] : bib_bounds[j + 1]]),
                )
            )
        return pid, out

    @staticmethod
    def _join(strs: np.ndarray, char_len: np.ndarray, lens: np.ndarray) -> list[str]:
        """Titles from concatenated word strings (``lens`` words each), capitalised."""
        text = "".join(strs.tolist())
        cut = np.concatenate([[0], np.cumsum(char_len)])[np.concatenate([[0], np.cumsum(lens)])]
        return [
            text[a + 1 : a + 2].upper() + text[a + 2 : b]
            for a, b in zip(cut[:-1].tolist(), cut[1:].tolist(), strict=True)
        ]

    def block(self, block: int) -> list[dict[str, Any]]:
        """Records of text block ``block``, parsed back into dicts (for tests)."""
        return [json.loads(line) for line in self.lines(block)[1]]
