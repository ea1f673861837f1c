"""The text of a local context: grouping cite spans into markers, and the two windows.

Everything here works on one paragraph (a string) and character offsets into it; the
format readers (``citeval.contexts.sources``) hand over checked, in-range spans.

- A *marker* is a run of cite spans separated only by whitespace and ``,``/``;``
  (:data:`SEPARATOR`): "(Hare, 1980; 1990; Puttler and Long, 1983)" printed as three
  spans, or "[3, 7]" as two, is one marker and one context.
- ``chars`` window (HAtten, ACL-200, RefSeer): ``chars // 2`` characters of the paragraph
  before the marker and ``chars - chars // 2`` after it, the marker itself replaced by the
  marker token and not counted; a word cut by either boundary is dropped.
- ``sentences`` window: the marker's sentence(s) and ``sentences`` sentences on each side,
  within the paragraph, split by :func:`sentence_bounds`.

In both, whitespace is stripped and collapsed, and the text is
``before + " " + token + " " + after`` (no space on a side that is empty).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass

# What may stand between two cite spans of one marker.
SEPARATOR = re.compile(r"[\s,;]*")
_LEADING_PART_WORD = re.compile(r"^\w+")
_TRAILING_PART_WORD = re.compile(r"\w+$")
_WORD_CHAR = re.compile(r"\w")

# A sentence ends after . ! or ? (and any closing quotes or brackets) that whitespace and
# an upper-case letter or a digit follow.
_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*(?=\s+[A-Z0-9])")
_LAST_TOKEN = re.compile(r"\S+$")
# Tokens after which a period does not end a sentence (compared lower-cased, leading
# brackets and quotes removed).
ABBREVIATIONS = frozenset(
    {
        "al.",
        "e.g.",
        "i.e.",
        "cf.",
        "vs.",
        "viz.",
        "fig.",
        "figs.",
        "eq.",
        "eqs.",
        "ref.",
        "refs.",
        "sec.",
        "secs.",
        "tab.",
        "no.",
        "nos.",
        "vol.",
        "pp.",
        "p.",
        "ch.",
        "approx.",
        "resp.",
        "dr.",
        "prof.",
        "mr.",
        "mrs.",
        "ms.",
        "st.",
        "sp.",
        "spp.",
        "var.",
        "ca.",
    }
)
_INITIAL = re.compile(r"[A-Z]\.")


@dataclass(frozen=True)
class Span:
    """One checked cite span: ``[start, end)`` in its paragraph and its linked paper ids
    (empty when the reference has no paper link or the span no reference)."""

    start: int
    end: int
    linked: tuple[str, ...]


@dataclass(frozen=True)
class Marker:
    """A group of adjacent cite spans: ``[start, end)`` and the union of their links."""

    start: int
    end: int
    cited_ids: tuple[str, ...]  # sorted, unique


@dataclass(frozen=True)
class Window:
    """A local context: its text and where the marker token sits in it."""

    text: str
    marker_start: int
    marker_end: int


def group_spans(text: str, spans: Sequence[Span]) -> list[Marker]:
    """The markers of a paragraph: its spans in reading order, adjacent ones merged.

    Two spans are adjacent when only :data:`SEPARATOR` characters lie between them (or
    they touch or overlap).
    """
    markers: list[Marker] = []
    start = end = -1
    linked: set[str] = set()
    for span in sorted(spans, key=lambda s: (s.start, s.end)):
        if start >= 0:
            between = text[end : span.start] if span.start > end else ""
            if SEPARATOR.fullmatch(between):
                end = max(end, span.end)
                linked.update(span.linked)
                continue
            markers.append(Marker(start, end, tuple(sorted(linked))))
        start, end, linked = span.start, span.end, set(span.linked)
    if start >= 0:
        markers.append(Marker(start, end, tuple(sorted(linked))))
    return markers


def _collapse(text: str) -> str:
    return " ".join(text.split())


def assemble(before: str, token: str, after: str) -> Window:
    """``before + " " + token + " " + after`` with whitespace collapsed, and the token's
    offsets."""
    before, after = _collapse(before), _collapse(after)
    start = len(before) + 1 if before else 0
    text = " ".join(part for part in (before, token, after) if part)
    return Window(text, start, start + len(token))


def _is_word(char: str) -> bool:
    return bool(_WORD_CHAR.match(char))


def chars_window(text: str, start: int, end: int, chars: int, token: str) -> Window:
    """``chars`` characters around ``text[start:end]``, which becomes ``token``.

    ``chars // 2`` come from before the marker and the rest from after it; a word that
    either boundary cuts (a word character on both sides of it) is dropped.
    """
    left = max(0, start - chars // 2)
    before = text[left:start]
    if left > 0 and before and _is_word(text[left - 1]) and _is_word(before[0]):
        before = _LEADING_PART_WORD.sub("", before)
    right = min(len(text), end + chars - chars // 2)
    after = text[end:right]
    if right < len(text) and after and _is_word(text[right]) and _is_word(after[-1]):
        after = _TRAILING_PART_WORD.sub("", after)
    return assemble(before, token, after)


def sentence_bounds(text: str) -> list[int]:
    """Start offsets of the sentences of ``text`` (the first is always 0).

    A regular-expression splitter, good enough for windows, not a linguistic one: it
    splits after ``.``, ``!`` or ``?`` (and closing quotes or brackets) that whitespace and
    an upper-case letter or digit follow, except after :data:`ABBREVIATIONS` ("et al.",
    "e.g.", "Fig.") and single-letter initials ("J. Smith"). Limits: an abbreviation
    that does end a sentence ("... and so on, etc. We") is split there only when it is
    not listed, a sentence starting in lower case or with a symbol is not split off,
    and decimal numbers or ellipses followed by a capital are split.
    """
    bounds = [0]
    for match in _SENTENCE_END.finditer(text):
        period = match.start()
        word = _LAST_TOKEN.search(text, 0, period + 1)
        token = word.group(0).lstrip("([{\"'“‘") if word else ""
        if text[period] == "." and (token.lower() in ABBREVIATIONS or _INITIAL.fullmatch(token)):
            continue
        after = match.end()
        while after < len(text) and text[after].isspace():
            after += 1
        bounds.append(after)
    return bounds


def sentences_window(
    text: str, start: int, end: int, sentences: int, token: str, bounds: Sequence[int]
) -> Window:
    """The sentences holding ``text[start:end]`` and ``sentences`` on each side of them;
    ``bounds`` are the paragraph's :func:`sentence_bounds`."""
    first = bisect.bisect_right(bounds, start) - 1
    last = bisect.bisect_right(bounds, max(start, end - 1)) - 1
    left = bounds[max(0, first - sentences)]
    stop = last + sentences + 1
    right = bounds[stop] if stop < len(bounds) else len(text)
    return assemble(text[left:start], token, text[end:right])
