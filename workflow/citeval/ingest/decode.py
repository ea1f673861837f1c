"""Decode a chunk of JSON lines into msgspec records.

The whole chunk is decoded at once where every line is a good record. Otherwise it is
decoded line by line, the exact path, which locates every problem: a bad record is
counted by reason (``classify_error``), or raises naming its file, line and field.
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from citeval.ingest.formats import DECODE_ERRORS, classify_error
from citeval.ingest.lines import LineChunk
from citeval.ingest.report import ShardReport


def decode_whole_chunk(decoder: msgspec.json.Decoder, chunk: LineChunk) -> list[Any] | None:
    """One record per line of the chunk, decoded at once; None when any line needs the
    line-by-line path: a bad record, or a line that may be blank."""
    if chunk.may_hold_blank_lines:
        return None
    try:
        records = decoder.decode_lines(chunk.text)
    except DECODE_ERRORS:
        return None
    # decode_lines also accepts several values on one line: the count catches that.
    return records if len(records) == chunk.n_lines else None


def decode_each_line(
    decoder: msgspec.json.Decoder, chunk: LineChunk, report: ShardReport
) -> tuple[list[Any], np.ndarray]:
    """Decode the chunk line by line; return the good records and their line numbers.

    Blank lines are counted and skipped; a bad record is skipped and counted, or raises
    when the shard allows none (``ShardReport.skip``).
    """
    report.lines_read += chunk.n_lines
    records = []
    lines = []
    for offset, text in enumerate(chunk.lines()):
        number = chunk.first_line + offset
        if not text.strip():
            report.blank_lines += 1
            continue
        report.records_read += 1
        try:
            records.append(decoder.decode(text))
        except DECODE_ERRORS as error:
            reason, field_name = classify_error(error)
            report.skip(number, reason, field_name, str(error))
            continue
        lines.append(number)
    return records, np.asarray(lines, dtype=np.int64)


def decode_chunk(
    decoder: msgspec.json.Decoder, chunk: LineChunk, report: ShardReport
) -> tuple[list[Any], np.ndarray]:
    """Decode one chunk of lines; return the records and their 1-based line numbers."""
    records = decode_whole_chunk(decoder, chunk)
    if records is None:
        return decode_each_line(decoder, chunk, report)
    report.lines_read += chunk.n_lines
    report.records_read += chunk.n_lines
    return records, chunk.line_numbers
