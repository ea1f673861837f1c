"""The words the synthetic full text is made of, built once per corpus.

* :class:`CitingVocabulary`: the corpus vocabulary and its templates, extended with the
  citing sentences' templates and their own fixed words;
* :class:`TitleIndex`: every paper's title as vocabulary ids, and which papers have a real
  abstract (:func:`index_titles`), since cited titles are needed for any paper;
* :func:`excl_cumsum` and :func:`gather`, the array helpers the full-text modules share.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from citeval.synth.shape import SHORT_ABSTRACT_RATE, TEXT_BLOCK
from citeval.synth.structure import Structure
from citeval.synth.text import COL_K, PUNCTUATION, SEP, SLOT_COLS, Vocabulary, block_tokens

#: Slot columns: text.py's, then {C} (a word of a cited paper) and {M} (the marker).
N_COLS = COL_K + 1
COL_C, COL_M = N_COLS, N_COLS + 1
#: Template tokens of the {C} and {M} slots (a slot is -1 - column, as in text.py).
TOK_C, TOK_M = -1 - COL_C, -1 - COL_M


def excl_cumsum(values: np.ndarray) -> np.ndarray:
    """Exclusive prefix sums (int64): where each of ``values``' ranges starts."""
    out = np.zeros(values.shape[0], dtype=np.int64)
    np.cumsum(values[:-1], out=out[1:])
    return out


def gather(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Indices of the concatenated ranges ``[starts[i], starts[i] + lens[i])``."""
    return np.repeat(starts - excl_cumsum(lens), lens) + np.arange(int(lens.sum()))


@dataclass(frozen=True)
class CitingVocabulary:
    """The vocabulary's words and templates, then the citing templates' own."""

    words: np.ndarray  # object array of str: the vocabulary's, then the new fixed words
    word_len: np.ndarray  # int64 characters per word
    content_min: int  # ids from here on are field, topic and subtopic words
    n_base_tpl: int  # templates [0, n_base_tpl) are the vocabulary's, then the citing ones
    templates: np.ndarray  # int32 tokens of every template, concatenated
    tpl_len: np.ndarray  # int64 per template
    tpl_start: np.ndarray  # int64 per template


def citing_vocabulary(vocab: Vocabulary, citing_templates: Sequence[str]) -> CitingVocabulary:
    """``vocab`` with ``citing_templates`` parsed after its own templates.

    A fixed word the vocabulary already has keeps its (first) id; new ones are appended.
    """
    n_fixed = vocab.class_range[0][0]
    index = {w: i for i, w in reversed(list(enumerate(vocab.words[:n_fixed].tolist())))}
    extra: list[str] = []
    parsed = []
    for template in citing_templates:
        tokens = []
        for tok in template.split():
            if tok in ("{C}", "{M}"):
                tokens.append(TOK_C if tok == "{C}" else TOK_M)
            elif tok.startswith("{"):
                tokens.append(-1 - SLOT_COLS[tok[1:-1]])
            else:
                word = tok if tok in PUNCTUATION else " " + tok
                if word not in index:
                    index[word] = len(vocab.words) + len(extra)
                    extra.append(word)
                tokens.append(index[word])
        parsed.append(tokens)
    words = np.concatenate([vocab.words, np.array(extra, dtype=object)])
    cite_len = np.array([len(t) for t in parsed], dtype=np.int64)
    return CitingVocabulary(
        words=words,
        word_len=np.array([len(w) for w in words.tolist()], dtype=np.int64),
        content_min=int(vocab.field_off[0]),
        n_base_tpl=vocab.tpl_len.shape[0],
        templates=np.concatenate(
            [vocab.templates, np.array([t for p in parsed for t in p], dtype=np.int32)]
        ),
        tpl_len=np.concatenate([vocab.tpl_len, cite_len]),
        tpl_start=np.concatenate(
            [vocab.tpl_start, vocab.templates.shape[0] + excl_cumsum(cite_len)]
        ),
    )


@dataclass(frozen=True)
class TitleIndex:
    """Every paper's title as vocabulary ids (CSR), and which papers have a real abstract."""

    tok: np.ndarray  # int32 vocabulary ids of every title, concatenated
    off: np.ndarray  # int64, num_papers + 1: paper p's title is tok[off[p]:off[p + 1]]
    has_abstract: np.ndarray  # bool per paper

    def lengths(self, papers: np.ndarray) -> np.ndarray:
        """Words in the titles of ``papers``."""
        return self.off[papers + 1] - self.off[papers]


def index_titles(
    structure: Structure, vocab: Vocabulary, seed: int, null_abstract_rate: float
) -> TitleIndex:
    """The title index of the whole corpus.

    Reproduces :class:`~citeval.synth.records.RecordWriter`'s first draws per block.
    """
    toks, lens, ok = [], [], []
    for block in range(-(-structure.num_papers // TEXT_BLOCK)):
        lo = block * TEXT_BLOCK
        hi = min(structure.num_papers, lo + TEXT_BLOCK)
        rng = np.random.default_rng(np.random.SeedSequence([seed, 2, block]))
        tokens = block_tokens(rng, vocab, structure, lo, hi)
        flags = rng.random((hi - lo, 13))
        ok.append(flags[:, 2] >= null_abstract_rate + SHORT_ABSTRACT_RATE)
        sep = np.flatnonzero(tokens == SEP)  # after each title and each abstract
        ends = sep[0::2]
        starts = np.concatenate([[0], sep[1::2][:-1] + 1])
        size = ends - starts
        toks.append(tokens[gather(starts, size)].astype(np.int32))
        lens.append(size)
    return TitleIndex(
        tok=np.concatenate(toks),
        off=np.concatenate([[0], np.cumsum(np.concatenate(lens))]).astype(np.int64),
        has_abstract=np.concatenate(ok),
    )
