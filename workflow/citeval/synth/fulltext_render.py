"""The synthetic full text's JSON strings, from a block's drawn tokens, markers and entries.

Nothing here draws: :mod:`~citeval.synth.fulltext` makes every draw of a block first, then
these functions spell the tokens, cut the body into paragraphs with their citation spans,
and format the bib entries and the records.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from citeval.synth.fulltext_words import TOK_M, CitingVocabulary, TitleIndex, excl_cumsum, gather

if TYPE_CHECKING:
    from citeval.synth.fulltext import Entries, Layout, Markers, Pieces

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


@dataclass(frozen=True)
class Spelled:
    """A block's pieces as strings, one per token (a marker's text at its {M} token)."""

    strs: np.ndarray  # object array of str
    char_len: np.ndarray  # int64 per token
    m_pos: np.ndarray  # the token of each marker
    m_idx: np.ndarray  # which marker it is


def spell(words: CitingVocabulary, pieces: Pieces, markers: Markers) -> Spelled:
    """The strings of ``pieces``' tokens; their {M} tokens become the markers' texts."""
    tokens = pieces.tokens.copy()
    m_pos = np.flatnonzero(tokens == TOK_M)
    m_idx = pieces.marker[pieces.piece[m_pos]]
    tokens[m_pos] = 0
    strs = words.words[tokens]
    strs[m_pos] = np.array(markers.text, dtype=object)[m_idx]
    char_len = words.word_len[tokens]
    char_len[m_pos] = np.array([len(t) for t in markers.text], dtype=np.int64)[m_idx]
    return Spelled(strs, char_len, m_pos, m_idx)


def _spans(m_at: list[int], m_idx: list[int], markers: Markers) -> list[str]:
    """Cite spans of the markers at offsets ``m_at`` of their paragraphs (two for a pair)."""
    spans = []
    for at, i in zip(m_at, m_idx, strict=True):
        a, b, text = markers.num1[i], markers.num2[i], markers.text[i]
        if b:
            mid = at + len(str(a)) + 1
            spans.append(_SPAN2 % (at, mid, a, a - 1, mid + 2, at + len(text) - 1, b, b - 1))
        else:
            spans.append(_SPAN % (at, at + len(text) - 1, a, a - 1))
    return spans


def paragraphs(
    spelled: Spelled, pieces: Pieces, layout: Layout, markers: Markers, sections: Sequence[str]
) -> list[str]:
    """``body_text`` paragraphs of the whole block, in order, with their cite spans."""
    n_body = pieces.n_body
    body = "".join(spelled.strs[:n_body].tolist())
    tok_start = excl_cumsum(spelled.char_len[:n_body])
    par_cs = tok_start[pieces.start[layout.par_first]]
    par_ce = np.append(par_cs[1:], len(body))
    m_par = layout.par[pieces.piece[spelled.m_pos]]
    m_at = (tok_start[spelled.m_pos] - par_cs[m_par]).tolist()
    par_mk = np.searchsorted(m_par, np.arange(layout.par_first.shape[0] + 1)).tolist()
    spans = _spans(m_at, spelled.m_idx.tolist(), markers)
    section_j = [f'"{name}"' for name in sections]
    return [
        _PARA
        % (
            section_j[sec],
            body[cs + 1 : ce],
            "[" + ", ".join(spans[par_mk[p] : par_mk[p + 1]]) + "]",
        )
        for p, (sec, cs, ce) in enumerate(
            zip(layout.par_sec.tolist(), par_cs.tolist(), par_ce.tolist(), strict=True)
        )
    ]


def _join(strs: np.ndarray, char_len: np.ndarray, lens: np.ndarray) -> list[str]:
    """Titles from concatenated word strings (``lens`` words each), capitalised."""
    text = "".join(strs.tolist())
    cut = np.concatenate([[0], np.cumsum(char_len)])[np.concatenate([[0], np.cumsum(lens)])]
    return [
        text[a + 1 : a + 2].upper() + text[a + 2 : b]
        for a, b in zip(cut[:-1].tolist(), cut[1:].tolist(), strict=True)
    ]


def bib_entries(
    words: CitingVocabulary,
    titles: TitleIndex,
    spelled: Spelled,
    pieces: Pieces,
    entries: Entries,
    years: list[int],
    pid_fmt: str,
) -> list[str]:
    """``bib_entries`` items of the whole block, by citing paper and bib number.

    A linked entry has its cited paper's own title; an unresolved one the made-up title
    spelled after the body.
    """
    linked = entries.linked
    titles_e = np.empty(linked.shape[0], dtype=object)
    lt = entries.target[linked]
    t_lens = titles.lengths(lt)
    t_tok = titles.tok[gather(titles.off[lt], t_lens)]
    titles_e[linked] = _join(words.words[t_tok], words.word_len[t_tok], t_lens)
    unres = np.flatnonzero(~linked)
    if unres.shape[0]:
        n_body = pieces.n_body
        u_lens = pieces.length[pieces.n_sentences :]
        titles_e[unres] = _join(spelled.strs[n_body:], spelled.char_len[n_body:], u_lens)
    order = np.lexsort((entries.num, entries.row))
    links = ["null" if t < 0 else '"' + pid_fmt % t + '"' for t in entries.target.tolist()]
    title_l = titles_e.tolist()
    return [
        _BIB % (n, n, title_l[e], years[e], links[e])
        for e, n in zip(order.tolist(), entries.num[order].tolist(), strict=True)
    ]


def records(
    pid_fmt: str,
    seed: int,
    pid: np.ndarray,
    rows: np.ndarray,
    abstracts: list[str],
    paras: list[str],
    par_row: np.ndarray,
    bib: list[str],
    bib_start: np.ndarray,
) -> list[str]:
    """One JSON line per citing paper ``pid``; its abstract is ``abstracts[rows[j]]``."""
    par_bounds = np.searchsorted(par_row, np.arange(pid.shape[0] + 1)).tolist()
    bib_bounds = np.append(bib_start, len(bib)).tolist()
    out = []
    for j, (p, r) in enumerate(zip(pid.tolist(), rows.tolist(), strict=True)):
        paper = pid_fmt % p
        pdf_hash = hashlib.sha1(f"{seed}/{paper}".encode()).hexdigest()
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
    return out
