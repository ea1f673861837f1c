"""Read one decoded input record of each format into what the windows need.

- ``s2orc_v2020``: a ``pdf_parses`` record (``paper_id``, ``body_text``,
  ``bib_entries[ref].link``), or the older layout with both under ``grobid_parse`` and
  ``links`` instead of ``link`` (``shared/data/s2orc-sample/example_paper.json``).
- ``s2ag``: a record of the Semantic Scholar ``s2orc`` dataset (``corpusid``,
  ``content.text``, ``content.annotations`` of JSON strings of span lists: ``paragraph``,
  ``sectionheader``, ``bibref`` with ``attributes.ref_id``, ``bibentry`` with
  ``attributes.id`` and ``attributes.matched_paper_id``). Offsets are taken as Python
  string (code point) offsets. A bibref outside every paragraph is read within the text
  between the paragraphs around it; a marker's section is the last section header that
  starts before it.
- ``curated``: one context as printed (``context_id``, ``citing_paper_id``,
  ``granularity``, ``section``, ``text``, ``cited``).

A record that lacks a required field or holds a value of the wrong type raises
:class:`Malformed` (the caller counts it or fails, naming the field). A cite span whose
offsets are not inside its paragraph, or whose reference is not in the bibliography, is
handed to ``bad_span(field, message)`` and left out; a span with no reference
(``ref_id`` null) is kept and links nothing.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from citeval.contexts.window import Span
from citeval.corpus_formats import CONTEXT_FORMATS

# The formats extract takes: each corpus format's full text, and curated contexts
# (citeval.corpus_formats).
FORMATS = CONTEXT_FORMATS

BadSpan = Callable[[str, str], None]


class Malformed(Exception):
    """A record that cannot be read: ``reason`` and the ``field`` at fault."""

    def __init__(self, reason: str, field: str | None, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.field = field


@dataclass(frozen=True)
class Region:
    """A stretch of text (a paragraph) and its checked cite spans.

    ``sections`` are (offset, section name) pairs, by offset: a marker's section is the
    last one starting at or before it.
    """

    text: str
    spans: tuple[Span, ...]
    sections: tuple[tuple[int, str | None], ...]

    def section_at(self, offset: int) -> str | None:
        index = bisect.bisect_right([o for o, _ in self.sections], offset) - 1
        return self.sections[max(index, 0)][1] if self.sections else None


@dataclass(frozen=True)
class Paper:
    """A full-text record: its id, its paragraphs read, and its regions in reading order."""

    citing_id: str
    paragraphs: int
    regions: tuple[Region, ...]


@dataclass(frozen=True)
class CuratedContext:
    context_id: str
    citing_id: str
    granularity: str
    section: str | None
    text: str
    cited_ids: tuple[str, ...]


# --------------------------------------------------------------------------------------
# Field access


def _require(record: dict[str, Any], key: str, field: str) -> Any:
    if key not in record or record[key] is None:
        raise Malformed("missing_field", field, f"required field {field!r} is missing or null")
    return record[key]


def _typed(value: Any, kind: type | tuple[type, ...], field: str, what: str) -> Any:
    if not isinstance(value, kind) or isinstance(value, bool):
        raise Malformed("wrong_type", field, f"{field!r} is not {what}: {value!r:.80}")
    return value


def _id(value: Any, field: str) -> str:
    """A paper id: a non-empty string, or an integer written in decimal."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value
    raise Malformed("wrong_type", field, f"{field!r} is not a paper id: {value!r:.80}")


def _link(value: Any) -> tuple[str, ...]:
    """The paper ids of a bibliography link: a string or integer id, null, or a list."""
    if value is None or value == "":
        return ()
    if isinstance(value, list):
        return tuple(sorted({item for v in value for item in _link(v)}))
    if isinstance(value, bool):
        return ()
    return (str(value),)


def _offsets(span: Any, limit: int, field: str, bad_span: BadSpan) -> tuple[int, int] | None:
    """A span's checked ``(start, end)`` within ``[0, limit]``; None (reported) if bad."""
    if not isinstance(span, dict):
        bad_span(field, f"span is not an object: {span!r:.80}")
        return None
    start, end = span.get("start"), span.get("end")
    for name, value in (("start", start), ("end", end)):
        if not isinstance(value, int) or isinstance(value, bool):
            bad_span(f"{field}.{name}", f"offset is not an integer: {value!r:.40}")
            return None
    if not 0 <= start < limit:
        bad_span(f"{field}.start", f"start {start} is outside the text (length {limit})")
        return None
    if not start < end <= limit:
        bad_span(f"{field}.end", f"end {end} is not after start {start} within length {limit}")
        return None
    return start, end


# --------------------------------------------------------------------------------------
# S2ORC v2020 pdf_parses


def read_v2020(record: dict[str, Any], bad_span: BadSpan) -> Paper:
    citing_id = _id(_require(record, "paper_id", "paper_id"), "paper_id")
    prefix = ""
    holder = record
    if "body_text" not in record and "grobid_parse" in record:
        prefix = "grobid_parse."
        holder = record["grobid_parse"]
        if holder is None:  # no PDF parse: a paper without paragraphs
            return Paper(citing_id, 0, ())
        _typed(holder, dict, "grobid_parse", "an object")
    body = _typed(
        _require(holder, "body_text", prefix + "body_text"), list, prefix + "body_text", "a list"
    )
    bibs = holder.get("bib_entries") or {}
    _typed(bibs, dict, prefix + "bib_entries", "an object")
    regions = []
    for i, paragraph in enumerate(body):
        where = f"{prefix}body_text[{i}]"
        _typed(paragraph, dict, where, "an object")
        text = _typed(_require(paragraph, "text", where + ".text"), str, where + ".text", "text")
        section = paragraph.get("section")
        section = section if isinstance(section, str) and section.strip() else None
        cite_spans = paragraph.get("cite_spans") or []
        _typed(cite_spans, list, where + ".cite_spans", "a list")
        spans = []
        for j, cite in enumerate(cite_spans):
            field = f"{where}.cite_spans[{j}]"
            offsets = _offsets(cite, len(text), field, bad_span)
            if offsets is None:
                continue
            ref_id = cite.get("ref_id")
            if ref_id is None:
                linked: tuple[str, ...] = ()
            elif not isinstance(ref_id, str) or not isinstance(bibs.get(ref_id), dict):
                bad_span(f"{field}.ref_id", f"reference {ref_id!r:.40} is not in bib_entries")
                continue
            else:
                entry = bibs[ref_id]
                linked = _link(entry["link"] if "link" in entry else entry.get("links"))
            spans.append(Span(offsets[0], offsets[1], linked))
        regions.append(Region(text, tuple(spans), ((0, section),)))
    return Paper(citing_id, len(body), tuple(regions))


# --------------------------------------------------------------------------------------
# Semantic Scholar s2orc


def _annotation(annotations: dict[str, Any], name: str) -> list[Any]:
    """One annotation layer: a JSON string of a span list (or null, or already a list)."""
    field = f"content.annotations.{name}"
    value = annotations.get(name)
    if value is None:
        return []
    if isinstance(value, str):
        try:
            value = msgspec.json.decode(value)
        except msgspec.DecodeError as error:
            raise Malformed("invalid_json", field, f"{field!r} is not JSON: {error}") from None
    return _typed(value, list, field, "a list of spans") if value is not None else []


def _attributes(span: dict[str, Any]) -> dict[str, Any]:
    attributes = span.get("attributes")
    return attributes if isinstance(attributes, dict) else {}


def read_s2ag(record: dict[str, Any], bad_span: BadSpan) -> Paper:
    citing_id = _id(_require(record, "corpusid", "corpusid"), "corpusid")
    content = _typed(_require(record, "content", "content"), dict, "content", "an object")
    text = _typed(_require(content, "text", "content.text"), str, "content.text", "text")
    annotations = content.get("annotations") or {}
    _typed(annotations, dict, "content.annotations", "an object")
    layers = {
        name: _annotation(annotations, name)
        for name in ("paragraph", "sectionheader", "bibref", "bibentry")
    }

    def checked(name: str) -> list[tuple[int, int, dict[str, Any]]]:
        out = []
        for i, span in enumerate(layers[name]):
            offsets = _offsets(span, len(text), f"content.annotations.{name}[{i}]", bad_span)
            if offsets is not None:
                out.append((offsets[0], offsets[1], span))
        return sorted(out, key=lambda item: (item[0], item[1]))

    paragraphs = [(start, end) for start, end, _ in checked("paragraph")]
    headers = [
        (start, text[start:end].strip() or None) for start, end, _ in checked("sectionheader")
    ]
    links: dict[str, tuple[str, ...]] = {}
    for i, entry in enumerate(layers["bibentry"]):
        attributes = _attributes(entry) if isinstance(entry, dict) else {}
        ref = attributes.get("id")
        if not isinstance(ref, str) or not ref:
            bad_span(f"content.annotations.bibentry[{i}].attributes.id", "bibentry without an id")
            continue
        links[ref] = _link(attributes.get("matched_paper_id"))
    # Each bibref goes to the paragraph holding it, else to the gap between paragraphs.
    starts = [start for start, _ in paragraphs]
    by_region: dict[tuple[int, int], list[Span]] = {}
    for i, span in enumerate(layers["bibref"]):
        field = f"content.annotations.bibref[{i}]"
        offsets = _offsets(span, len(text), field, bad_span)
        if offsets is None:
            continue
        start, end = offsets
        ref = _attributes(span).get("ref_id")
        if ref is None:
            linked: tuple[str, ...] = ()
        elif ref in links:
            linked = links[ref]
        else:
            bad_span(f"{field}.attributes.ref_id", f"reference {ref!r:.40} is not a bibentry")
            continue
        k = bisect.bisect_right(starts, start) - 1
        if k >= 0 and end <= paragraphs[k][1]:
            region = paragraphs[k]
        else:
            low = max((e for _, e in paragraphs[: k + 1]), default=0)
            high = paragraphs[k + 1][0] if k + 1 < len(paragraphs) else len(text)
            region = (min(low, start), max(high, end))
        by_region.setdefault(region, []).append(Span(start, end, linked))
    header_starts = [start for start, _ in headers]
    regions = []
    for (low, high), spans in sorted(by_region.items()):
        before = bisect.bisect_right(header_starts, low) - 1
        sections = [(0, headers[before][1] if before >= 0 else None)]
        sections += [(start - low, name) for start, name in headers if low < start < high]
        regions.append(
            Region(
                text[low:high],
                tuple(Span(s.start - low, s.end - low, s.linked) for s in spans),
                tuple(sections),
            )
        )
    return Paper(citing_id, len(paragraphs), tuple(regions))


# --------------------------------------------------------------------------------------
# Curated contexts


def _optional_text(record: dict[str, Any], key: str) -> str | None:
    value = record.get(key)
    if value is None:
        return None
    return _typed(value, str, key, "text") or None


def read_curated(record: dict[str, Any]) -> CuratedContext:
    context_id = _id(_require(record, "context_id", "context_id"), "context_id")
    citing_id = _id(_require(record, "citing_paper_id", "citing_paper_id"), "citing_paper_id")
    granularity = _typed(_require(record, "granularity", "granularity"), str, "granularity", "text")
    text = _typed(_require(record, "text", "text"), str, "text", "text")
    cited = _typed(_require(record, "cited", "cited"), list, "cited", "a list")
    cited_ids = tuple(sorted({_id(value, f"cited[{i}]") for i, value in enumerate(cited)}))
    return CuratedContext(
        context_id, citing_id, granularity, _optional_text(record, "section"), text, cited_ids
    )


FULL_TEXT_READERS: dict[str, Callable[[dict[str, Any], BadSpan], Paper]] = {
    "s2orc_v2020": read_v2020,
    "s2ag": read_s2ag,
}
