"""Titles and abstracts of the synthetic corpus, from templates and layered vocabularies.

Every topic and subtopic has its own pseudo-word vocabulary and every field a set of
English domain words, so the text carries both a lexical and a semantic signal. A block of
papers is assembled with a few numpy operations rather than word by word.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from citeval.synth.lexicon import (
    CODAS,
    FIELD_TERMS,
    ONSETS,
    SENTENCE_TEMPLATES,
    SUFFIXES,
    TITLE_TEMPLATES,
    VOWELS,
    WORD_CLASSES,
)
from citeval.synth.shape import FIELD_PSEUDO_WORDS, FIELDS, SUBTOPIC_WORDS, TOPIC_WORDS
from citeval.synth.structure import Structure

# Template slots become negative tokens, -1 - column. Columns: the paper's subtopic, topic,
# field and second field vocabularies, three per-paper focus terms, then WORD_CLASSES. A
# `{K}` (key term) slot resolves to one of the content columns at random.
COL_S, COL_T, COL_F, COL_X, COL_FOCUS = 0, 1, 2, 3, 4
FIRST_CLASS_COL = 7
SLOT_COLS = {"S": COL_S, "T": COL_T, "F": COL_F, "X": COL_X} | {
    name: FIRST_CLASS_COL + i for i, name in enumerate(WORD_CLASSES)
}
COL_K = FIRST_CLASS_COL + len(WORD_CLASSES)
SLOT_COLS["K"] = COL_K
# Key terms: 25% focus terms, 35% subtopic, 30% topic, 10% field words.
K_COLS = np.array([COL_FOCUS, COL_FOCUS + 1, COL_FOCUS + 2, COL_S, COL_T, COL_F])
K_CUM = np.array([0.25 / 3, 0.5 / 3, 0.25, 0.6, 0.9])
# Zipf-like skew per column (u ** power): higher powers favour a vocabulary's first words.
COL_POWER = np.array([1.6, 1.6, 1.4, 1.4, 1.0, 1.0, 1.0] + [1.2] * len(WORD_CLASSES))
SEP = 0  # vocabulary id of the title / abstract separator "\x00"
# Tokens glued to the word before them. Every other word is stored with a leading space,
# so a block's text is one "".join with no clean-up passes over the string.
PUNCTUATION = frozenset({".", ",", ":", ";", "%"})


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
        ons = rng.integers(len(ONSETS), size=(need, 3)).tolist()
        vow = rng.integers(len(VOWELS), size=(need, 3)).tolist()
        cod = rng.integers(len(CODAS), size=(need, 3)).tolist()
        suf = rng.integers(len(SUFFIXES) + 4, size=need).tolist()  # a few get no suffix
        for i in range(need):
            word = "".join(
                ONSETS[ons[i][k]] + VOWELS[vow[i][k]] + CODAS[cod[i][k]] for k in range(n_syl[i])
            )
            if suf[i] < len(SUFFIXES):
                word += SUFFIXES[suf[i]]
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
                if name not in SLOT_COLS:
                    raise ValueError(f"unknown slot {tok!r} in template {template!r}")
                tokens.append(-1 - SLOT_COLS[name])
            else:
                tokens.append(fixed(tok))
        return tokens

    parsed = [parse(t) for t in TITLE_TEMPLATES] + [parse(t) for t in SENTENCE_TEMPLATES]
    parsed.append([SEP])
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

    spaced = [w if w in PUNCTUATION or w == "\x00" else " " + w for w in words]
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


def zipf_index(rng: np.random.Generator, length: np.ndarray | int, power: float) -> np.ndarray:
    """Skewed index in ``[0, length)``: low indices are the frequent words."""
    size = np.shape(length) or None
    return (length * rng.random(size) ** power).astype(np.int64)


def block_text(
    rng: np.random.Generator, vocab: Vocabulary, s: Structure, lo: int, hi: int
) -> tuple[list[str], list[str]]:
    """Titles and abstracts of papers ``[lo, hi)``, assembled for the whole block at once."""
    return join_tokens(vocab, block_tokens(rng, vocab, s, lo, hi), hi - lo)


def join_tokens(vocab: Vocabulary, tokens: np.ndarray, nb: int) -> tuple[list[str], list[str]]:
    """The titles and abstracts that :func:`block_tokens`'s ``tokens`` spell."""
    parts = "".join(vocab.words[tokens].tolist()).split("\x00")
    # Each part starts with its first word's space; titles get a capital letter.
    titles = [t[1:2].upper() + t[2:] for t in parts[0 : 2 * nb : 2]]
    abstracts = [a[1:] for a in parts[1 : 2 * nb : 2]]
    return titles, abstracts


def block_tokens(
    rng: np.random.Generator, vocab: Vocabulary, s: Structure, lo: int, hi: int
) -> np.ndarray:
    """Vocabulary ids of papers ``[lo, hi)``: per paper its title, the separator, its
    abstract and the separator again. Makes every draw of :func:`block_text`."""
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
    n_cols = FIRST_CLASS_COL + len(WORD_CLASSES)
    off = np.empty((nb, n_cols), dtype=np.int64)
    length = np.ones((nb, n_cols), dtype=np.int64)
    off[:, COL_S], length[:, COL_S] = vocab.sub_off[sub], SUBTOPIC_WORDS
    off[:, COL_T], length[:, COL_T] = vocab.topic_off[top], TOPIC_WORDS
    off[:, COL_F], length[:, COL_F] = vocab.field_off[fld], vocab.field_len[fld]
    off[:, COL_X], length[:, COL_X] = vocab.field_off[fld2], vocab.field_len[fld2]
    # A paper repeats a few focus terms (two subtopic words, one topic word), as real
    # abstracts do; each focus column holds exactly one word.
    off[:, COL_FOCUS] = vocab.sub_off[sub] + zipf_index(rng, np.full(nb, SUBTOPIC_WORDS), 1.5)
    off[:, COL_FOCUS + 1] = vocab.sub_off[sub] + zipf_index(rng, np.full(nb, SUBTOPIC_WORDS), 1.5)
    off[:, COL_FOCUS + 2] = vocab.topic_off[top] + zipf_index(rng, np.full(nb, TOPIC_WORDS), 1.5)
    for col, (start, size) in enumerate(vocab.class_range, start=FIRST_CLASS_COL):
        off[:, col], length[:, col] = start, size

    slot = np.flatnonzero(tokens < 0)
    col = -1 - tokens[slot]
    sp = paper[slot]
    is_k = col == COL_K
    col[is_k] = K_COLS[np.searchsorted(K_CUM, rng.random(int(is_k.sum())), side="right")]
    u = rng.random(slot.shape[0])
    word = off[sp, col] + (length[sp, col] * u ** COL_POWER[col]).astype(np.int64)
    tokens[slot] = word
    # Avoid "X X" when two content slots in a row draw the same word (slot 0 never
    # repeats: every piece starts with a fixed word or follows the separator).
    dup = np.flatnonzero((word == tokens[np.maximum(slot - 1, 0)]) & (slot > 0))
    tokens[slot[dup]] = vocab.topic_off[top[sp[dup]]] + (word[dup] + 7) % TOPIC_WORDS
    return tokens
