"""``extract``: the raw local contexts of one input file, no corpus needed.

The file (JSONL, gzip or not) is read in chunks of lines, one record at a time; each
full-text paper's markers become contexts (``citeval.contexts.window``), kept as Arrow
batches, and the file's contexts are written sorted by ``context_id`` (memory: the
contexts of one file, not its full text).

Context ids are ``<citing_id>:<n>``, ``n`` counting the paper's markers in reading order
from 0, dropped ones included, so an id does not depend on what is kept. A marker none of
whose references links a paper is dropped (``no_linked_reference``). Curated contexts keep
their own ids and text; their marker offsets are null.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa
import pyarrow.compute as pc

from citeval.contexts.report import MALFORMED_SPAN, NO_LINKED_REFERENCE, ExtractReport
from citeval.contexts.sources import (
    FORMATS,
    FULL_TEXT_READERS,
    Malformed,
    Paper,
    read_curated,
)
from citeval.contexts.window import (
    Window,
    chars_window,
    group_spans,
    sentence_bounds,
    sentences_window,
)
from citeval.errors import InputDataError
from citeval.ingest.lines import iter_line_chunks
from citeval.io import write_json, write_parquet

log = logging.getLogger(__name__)

STRING_LIST = pa.list_(pa.string())
RAW_SCHEMA = pa.schema(
    [
        ("context_id", pa.string()),
        ("citing_id", pa.string()),
        ("granularity", pa.string()),
        ("section", pa.string()),
        ("text", pa.string()),
        ("marker_start", pa.int32()),
        ("marker_end", pa.int32()),
        ("cited_ids", STRING_LIST),
    ]
)
BATCH_ROWS = 50_000


def granularity(unit: str, chars: int, sentences: int) -> str:
    """The granularity label of a window: ``chars-200``, ``sentences-1``."""
    return f"chars-{chars}" if unit == "chars" else f"sentences-{sentences}"


class _Rows:
    """Columns of contexts, turned into Arrow batches every ``BATCH_ROWS`` rows."""

    def __init__(self) -> None:
        self.batches: list[pa.RecordBatch] = []
        self.columns: dict[str, list[Any]] = {name: [] for name in RAW_SCHEMA.names}

    def add(self, **row: Any) -> None:
        for name, values in self.columns.items():
            values.append(row[name])
        if len(self.columns["context_id"]) >= BATCH_ROWS:
            self.flush()

    def flush(self) -> None:
        if self.columns["context_id"]:
            self.batches.append(pa.RecordBatch.from_pydict(self.columns, schema=RAW_SCHEMA))
            self.columns = {name: [] for name in RAW_SCHEMA.names}

    def table(self) -> pa.Table:
        self.flush()
        table = pa.Table.from_batches(self.batches, schema=RAW_SCHEMA)
        self.batches = []
        return table


def paper_contexts(
    paper: Paper,
    *,
    unit: str,
    chars: int,
    sentences: int,
    marker_token: str,
    report: ExtractReport,
    rows: _Rows,
) -> None:
    """Add the contexts of one full-text paper to ``rows``; count its markers."""
    label = granularity(unit, chars, sentences)
    n = 0
    for region in paper.regions:
        markers = group_spans(region.text, region.spans)
        bounds = sentence_bounds(region.text) if unit == "sentences" and markers else []
        for marker in markers:
            context_id = f"{paper.citing_id}:{n}"
            n += 1
            report.markers_found += 1
            if not marker.cited_ids:
                report.drop(NO_LINKED_REFERENCE)
                continue
            if unit == "chars":
                window: Window = chars_window(
                    region.text, marker.start, marker.end, chars, marker_token
                )
            else:
                window = sentences_window(
                    region.text, marker.start, marker.end, sentences, marker_token, bounds
                )
            report.markers_kept += 1
            rows.add(
                context_id=context_id,
                citing_id=paper.citing_id,
                granularity=label,
                section=region.section_at(marker.start),
                text=window.text,
                marker_start=window.marker_start,
                marker_end=window.marker_end,
                cited_ids=list(marker.cited_ids),
            )


def _records(path: str, report: ExtractReport):
    """(line number, decoded JSON object) of every good line; bad ones are skipped."""
    for chunk in iter_line_chunks(path):
        report.lines_read += chunk.n_lines
        for offset, line in enumerate(chunk.lines()):
            number = chunk.first_line + offset
            if not line.strip():
                report.blank_lines += 1
                continue
            report.records_read += 1
            try:
                record = msgspec.json.decode(line)
            except msgspec.DecodeError as error:
                report.skip(number, "invalid_json", None, str(error))
                continue
            if not isinstance(record, dict):
                report.skip(number, "not_an_object", None, "the line is not a JSON object")
                continue
            yield number, record


def _whole_json(path: Path) -> bool:
    """Whether ``path`` is one pretty-printed JSON object (``example_paper.json``), not
    JSON lines: it starts with ``{`` alone on its first line."""
    with open(path, "rb") as handle:
        head = handle.read(2)
        if head == b"\x1f\x8b":
            return False
        handle.seek(0)
        first = handle.readline(1 << 16).strip()
    return first == b"{"


def _whole_records(path: Path, report: ExtractReport):
    report.lines_read += 1
    report.records_read += 1
    try:
        record = msgspec.json.decode(path.read_bytes())
    except msgspec.DecodeError as error:
        report.skip(1, "invalid_json", None, str(error))
        return
    if not isinstance(record, dict):
        report.skip(1, "not_an_object", None, "the file is not a JSON object")
        return
    yield 1, record


def extract_contexts(
    input_path: str | os.PathLike,
    output: str | os.PathLike,
    report_path: str | os.PathLike,
    *,
    fmt: str,
    window_unit: str,
    window_chars: int,
    window_sentences: int,
    marker_token: str,
    max_bad_fraction: float,
) -> dict[str, Any]:
    """Write the raw contexts of one input file and its report; return the report.

    A single pretty-printed JSON object (S2ORC's ``example_paper.json``) is read as one
    record at line 1.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {FORMATS}")
    if window_unit not in ("chars", "sentences"):
        raise ValueError(f"unknown window unit {window_unit!r}")
    if not 0 <= max_bad_fraction <= 1:
        raise ValueError("max_bad_fraction must be within [0, 1]")
    path = Path(input_path)
    if not path.is_file():
        raise InputDataError("input file not found", path=str(input_path))
    settings = {
        "format": fmt,
        "window_unit": window_unit,
        "window_chars": window_chars,
        "window_sentences": window_sentences,
        "marker_token": marker_token,
        "max_bad_fraction": max_bad_fraction,
    }
    report = ExtractReport(str(input_path), fmt, path.stat().st_size, settings)
    started = time.perf_counter()
    rows = _Rows()
    records = _whole_records(path, report) if _whole_json(path) else _records(str(path), report)
    curated_papers: set[str] = set()
    for number, record in records:

        def bad_span(field: str, message: str, number: int = number) -> None:
            report.skip(number, MALFORMED_SPAN, field, message)

        try:
            if fmt == "curated":
                context = read_curated(record)
            else:
                paper = FULL_TEXT_READERS[fmt](record, bad_span)
        except Malformed as error:
            report.skip(number, error.reason, error.field, str(error))
            continue
        if fmt == "curated":
            curated_papers.add(context.citing_id)
            report.markers_found += 1
            if not context.cited_ids:
                report.drop(NO_LINKED_REFERENCE)
                continue
            report.markers_kept += 1
            rows.add(
                context_id=context.context_id,
                citing_id=context.citing_id,
                granularity=context.granularity,
                section=context.section,
                text=context.text,
                marker_start=None,
                marker_end=None,
                cited_ids=list(context.cited_ids),
            )
            continue
        report.papers_read += 1
        report.paragraphs += paper.paragraphs
        paper_contexts(
            paper,
            unit=window_unit,
            chars=window_chars,
            sentences=window_sentences,
            marker_token=marker_token,
            report=report,
            rows=rows,
        )
    if fmt == "curated":
        report.papers_read = len(curated_papers)
    report.check_bad_fraction()
    table = rows.table()
    table = table.take(pc.sort_indices(table, [("context_id", "ascending")]))
    _check_unique(table, report.input)
    report.contexts_written = table.num_rows
    write_parquet(table, output)
    result = report.to_dict()
    write_json(result, report_path)
    log.info(
        "%s: %d papers, %d markers, %d kept, dropped %s, skipped %s in %.1f s",
        input_path,
        report.papers_read,
        report.markers_found,
        report.markers_kept,
        report.markers_dropped,
        {reason: entry["count"] for reason, entry in report.skipped.items()},
        time.perf_counter() - started,
    )
    return result


def _check_unique(table: pa.Table, path: str) -> None:
    """A context id twice in one file (a paper listed twice, a curated id reused)."""
    ids = table.column("context_id")
    if len(ids) < 2:
        return
    same = pc.equal(ids.slice(1), ids.slice(0, len(ids) - 1))
    if pc.any(same).as_py():
        index = pc.index(same, True).as_py()
        raise InputDataError(
            f"context id {ids[index].as_py()!r} occurs twice (a paper or context listed twice)",
            path=path,
            field="context_id",
        )
