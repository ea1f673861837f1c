"""Ingest: turn S2ORC / S2AG input shards into the canonical ``corpus/`` tables.

Two steps, so that Snakemake runs one ``parse`` job per input shard (resumable, bounded
memory) and one ``merge`` job over all of them::

    python -m citeval.ingest parse --format s2orc_v2020 --input s2orc-00000.jsonl.gz \\
        --output-dir results/demo/staging/s2orc-00000 --max-bad-fraction 0
    python -m citeval.ingest merge --staging results/demo/staging/s2orc-0000{0,1} \\
        --output-dir results/demo/corpus --on-duplicate error --rows-per-part 1000000 \\
        --memory-limit 2GB --threads 2

**parse** streams one input file (``.jsonl``, ``.jsonl.gz`` — gzip is detected from the
magic bytes — or ``.parquet``) into a staging directory::

    <staging>/shard.json             per-shard report (see ``ShardReport``)
    <staging>/papers/part-NNNNN.parquet     paper_id, title, abstract, year, fields,
                                            outbound_citations, inbound_citations, _line
    <staging>/edges/part-NNNNN.parquet      citing_id, cited_id     (s2ag-citations)
    <staging>/abstracts/part-NNNNN.parquet  paper_id, abstract, _line   (s2ag-abstracts)

``_line`` is the 1-based line (JSON) or row (parquet) number of the source record; the
input path is in ``shard.json`` rather than in every row, and ``merge`` numbers the shards
in the order it is given them, so "first" means (shard order, line). A v2020 chunk goes
first to the compiled decoder (``citeval.v2020_decoder``, where it is built), which copies
the fields into Arrow buffers. A chunk it refuses goes to msgspec: when its citation lists
are all plain (ids without escapes, brackets, commas or whitespace), they go to Arrow
without becoming Python strings (``citeval.json_lists``); any other chunk is decoded in
full, record by record where needed. The staged rows, the counts and the errors are the
same whichever path ran.

Fields read per ``--format`` (every other key is ignored):

- ``s2orc_v2020`` (S2ORC 2020-07-05 metadata): ``paper_id`` (string, required),
  ``title``, ``abstract`` (string or null), ``year`` (integer or null),
  ``mag_field_of_study`` (list of strings or null → ``fields``), ``outbound_citations``
  (→ edges ``(paper_id, x)``) and ``inbound_citations`` (→ edges ``(x, paper_id)``), both
  lists of strings or null.
- ``s2ag-papers`` (Semantic Scholar Datasets API ``papers``): ``corpusid`` (integer from
  0 to 2**63 - 1, required; ``paper_id = str(corpusid)``), ``title``, ``year``,
  ``s2fieldsofstudy`` (list of ``{category, source}``; the distinct categories in order),
  or, when that is absent or null, ``fieldsofstudy`` (list of strings, older releases).
- ``s2ag-abstracts``: ``corpusid``, ``abstract``. A null abstract is counted and dropped.
- ``s2ag-citations``: ``citingcorpusid`` (required), ``citedcorpusid`` (null or absent when
  the cited work is not in S2; such rows are dropped and counted as ``null_cited``).
- ``parquet``: columns ``paper_id`` (string), ``title``, ``abstract`` (string), ``year``
  (any integer type), ``mag_field_of_study``, ``outbound_citations``,
  ``inbound_citations`` (list of string). The schema is checked before any row is read.

Decisions on messy records:

- *Bad records* — a malformed JSON line, a line that is not valid UTF-8
  (``invalid_utf8``), a line that is not a JSON object, a missing or null id, an empty
  ``paper_id``, or a value of the wrong type (``"year": "2019"`` included: numeric
  strings are rejected, not coerced, because a quoted year usually means a mis-exported
  column; ``title: 5``; ``outbound_citations`` not a list of strings; a year outside
  int32). With ``--max-bad-fraction 0`` the first one raises
  :class:`InputDataError` naming file, line and field. Otherwise each is skipped and
  counted by reason with the first few ``file:line`` examples, and the file fails only
  when more than that fraction of its records are bad.
- A truncated or corrupt gzip stream always fails, naming the file and the last complete
  line read: silently dropping the tail of a shard would bias every later count.
- A missing or null ``title``/``abstract``/``year`` is not bad (S2ORC lacks half its
  abstracts): it is kept as null and counted (``missing_*``); the prefilter drops such
  papers later with its own counts. An empty title string is kept as is (the prefilter
  treats blank titles as missing). A null ``mag_field_of_study`` becomes ``[]``.
- Blank lines are skipped and counted (``blank_lines``).

**merge** uses DuckDB out of core over the staging parquet (``--memory-limit`` is the
merge's budget: DuckDB gets 3/4 of it, less the arrays merge holds beside it, and spills
to a temporary directory beyond that; the rest covers the Arrow batches being written.
Whatever the limit, merge holds about 600 MB + 46 bytes per paper
(``out_of_memory_message``), so a limit much under 1GB is exceeded):

- a repeated ``paper_id`` fails naming both ``file:line`` locations, or with ``keep_first``
  the first record by (shard order, line) is kept and the rest are counted
  (``duplicate_papers``). The citation lists of every copy still contribute edges: they
  describe the same paper. S2AG abstracts with a repeated corpus id follow the same rule.
- S2AG abstracts are attached by corpus id; one whose paper is not in the corpus is
  counted (``abstract_for_unknown_paper``).
- Edges (outbound, inbound and S2AG citations) are deduplicated; self-citations
  (``self_citations``) and edges with an end outside the corpus (``dangling_edges``) are
  dropped and counted, with the first few as examples. ``n_cited_by``/``n_references``
  are counted on the edges that remain.
- Each paper gets a dense integer ``pid``, its rank by ``paper_id``; edges are resolved,
  deduplicated and counted as pid pairs.
- The tables (docs/contracts.md) are written sorted, in fixed-size row groups and parts,
  so the same staging input gives byte-identical files; ``ingest_report.json`` holds the
  inputs, every shard report and the totals. The output directory appears atomically.
- Each table is written in consecutive pid ranges sized to a quarter of DuckDB's memory,
  however many that makes, so a sort holds one range rather than the table. The parquet
  encoding runs on other threads while the next rows are produced: one per papers part
  (up to ``--threads`` parts at once, as the budget allows), and for the citations up to
  two parts at once, ``min(--threads, 2)``, while numpy sorts the next citing range.
  Papers ranges read the staging once each; past ``MAX_RANGES`` ranges the papers are
  first written out once, one Arrow file per range, instead.
- DuckDB resolves the edge ends to pids (one row per edge read, one kind of edge at a
  time), and the rows go straight out to one file of sort keys per citing range, so no
  range rescans them. Each citing range is then sorted, deduplicated and counted in
  numpy, and its ids looked up in every paper_id held in pid order beside DuckDB (with
  the two count arrays, about id length + 12 bytes per paper, taken out of its budget).
  Papers leave DuckDB sorted by paper_id within a range and get their counts by
  position; up to ``--threads`` papers parts are written at once, as the budget allows.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import math
import os
import queue
import re
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypeVar

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from tqdm import tqdm

from citeval import cli, v2020_decoder
from citeval.cli import memory_bytes, memory_size, positive_int, run_cli
from citeval.errors import InputDataError, ResourceError
from citeval.io import PARQUET_OPTIONS, atomic_path
from citeval.json_lists import plain_string_lists

T = TypeVar("T")
log = logging.getLogger(__name__)

FORMATS = ("s2orc_v2020", "s2ag-papers", "s2ag-abstracts", "s2ag-citations", "parquet")
# What each format stages: papers (with edges), abstracts only, or edges only.
FORMAT_KIND = {
    "s2orc_v2020": "papers",
    "parquet": "papers",
    "s2ag-papers": "papers",
    "s2ag-abstracts": "abstracts",
    "s2ag-citations": "citations",
}
SHARD_REPORT = "shard.json"
# Bumped whenever the staged tables change shape; merge refuses staging of another
# version (2: the citation lists are staged as lists inside papers/).
STAGING_VERSION = 2
REPORT_NAME = "ingest_report.json"
MAX_EXAMPLES = 5
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

# Decompressed bytes handed to the decoder at once: big enough that per-chunk overhead
# vanishes, small enough that a chunk's Python objects stay a few hundred MB at most.
CHUNK_BYTES = 8 << 20
STAGING_ROWS_PER_PART = 100_000
PAPERS_ROW_GROUP = 65_536
# Papers leave DuckDB in quarter row groups: at 5M papers, whole row groups (85 MB of
# text each) in flight took the merge's peak from 1.9 to 2.2 GB.
PAPERS_READ_BATCH = PAPERS_ROW_GROUP // 4
CITATIONS_ROW_GROUP = 1 << 20
# Edge rows per batch while they are written out by citing range (12 bytes each).
EDGES_READ_BATCH = 1 << 20
# Staging files are temporary and read once by merge: no compression, no dictionaries
# (lz4 cost parse ~0.4 CPU-s per 125k papers; the files are ~2.7x larger, ~1.6 KB/paper).
STAGING_PARQUET_OPTIONS: dict[str, Any] = {
    "compression": "none",
    "use_dictionary": False,
    "write_statistics": False,
}

# The corpus tables: the package's settings at zstd level 1 (level 3 cost ~40% more CPU
# for ~10% smaller files), no dictionary for the columns that are unique per row
# (building one and discarding it at the size limit only costs time), and no min/max
# statistics for title and abstract, which no reader can prune on (10% of the encoding).
CORPUS_PARQUET_OPTIONS: dict[str, dict[str, Any]] = {
    "papers": {
        **PARQUET_OPTIONS,
        "compression_level": 1,
        "use_dictionary": ["year", "fields.list.element", "n_cited_by", "n_references"],
        "write_statistics": [
            "paper_id",
            "year",
            "fields.list.element",
            "n_cited_by",
            "n_references",
        ],
    },
    "citations": {**PARQUET_OPTIONS, "compression_level": 1, "use_dictionary": False},
}

STRING_LIST = pa.list_(pa.string())
# The citation lists stay lists in staging, and merge unnests them: parse converts them
# in one nested pass instead of exploding them into (citing_id, cited_id) rows that
# repeat the paper's own id (2M papers: staging 2.4 GB instead of 3.1, parse 5-10%
# faster; merge's edge step takes the same time).
STAGE_PAPERS_SCHEMA = pa.schema(
    [
        ("paper_id", pa.string()),
        ("title", pa.string()),
        ("abstract", pa.string()),
        ("year", pa.int32()),
        ("fields", STRING_LIST),
        ("outbound_citations", STRING_LIST),
        ("inbound_citations", STRING_LIST),
        ("_line", pa.int64()),
    ]
)
# S2AG citation rows; they carry no _line: no error ever points at one.
STAGE_EDGES_SCHEMA = pa.schema([("citing_id", pa.string()), ("cited_id", pa.string())])
STAGE_ABSTRACTS_SCHEMA = pa.schema(
    [("paper_id", pa.string()), ("abstract", pa.string()), ("_line", pa.int64())]
)
PAPERS_SCHEMA = pa.schema(
    [
        ("paper_id", pa.string()),
        ("title", pa.string()),
        ("abstract", pa.string()),
        ("year", pa.int32()),
        ("fields", STRING_LIST),
        ("n_cited_by", pa.int32()),
        ("n_references", pa.int32()),
    ]
)
CITATIONS_SCHEMA = pa.schema([("citing_id", pa.string()), ("cited_id", pa.string())])

# --------------------------------------------------------------------------------------
# Record types. gc=False: the structs hold no cycles, and untracked objects keep the
# cyclic collector from rescanning millions of records per chunk.

NonEmptyStr = Annotated[str, msgspec.Meta(min_length=1)]
Int32 = Annotated[int, msgspec.Meta(ge=INT32_MIN, le=INT32_MAX)]
CorpusId = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]  # int64 in Arrow


class V2020Paper(msgspec.Struct, gc=False):
    """The S2ORC v2020 metadata fields the pipeline reads."""

    paper_id: NonEmptyStr
    title: str | None = None
    abstract: str | None = None
    year: Int32 | None = None
    mag_field_of_study: list[str] | None = None
    outbound_citations: list[str] | None = None
    inbound_citations: list[str] | None = None


class V2020PaperRawCitations(V2020Paper):
    """``V2020Paper`` with the citation lists left as raw JSON (``json_lists``)."""

    outbound_citations: msgspec.Raw = msgspec.Raw(b"")
    inbound_citations: msgspec.Raw = msgspec.Raw(b"")


class S2agFieldOfStudy(msgspec.Struct, gc=False):
    category: str | None = None
    source: str | None = None


class S2agPaper(msgspec.Struct, gc=False):
    """The S2AG ``papers`` dataset fields the pipeline reads."""

    corpusid: CorpusId
    title: str | None = None
    year: Int32 | None = None
    s2fieldsofstudy: list[S2agFieldOfStudy] | None = None
    fieldsofstudy: list[str] | None = None


class S2agAbstract(msgspec.Struct, gc=False):
    corpusid: CorpusId
    abstract: str | None = None


class S2agCitation(msgspec.Struct, gc=False):
    citingcorpusid: CorpusId
    citedcorpusid: CorpusId | None = None


RECORD_TYPES: dict[str, type] = {
    "s2orc_v2020": V2020Paper,
    "s2ag-papers": S2agPaper,
    "s2ag-abstracts": S2agAbstract,
    "s2ag-citations": S2agCitation,
}

# --------------------------------------------------------------------------------------
# Per-shard bookkeeping


@dataclass
class ShardReport:
    """Counts for one input file; serialised as the staging directory's ``shard.json``."""

    input: str
    format: str
    kind: str
    input_bytes: int
    max_bad_fraction: float
    staging_version: int = STAGING_VERSION
    lines_read: int = 0
    blank_lines: int = 0
    records_read: int = 0
    records_written: int = 0
    bad_records: int = 0
    edges_written: int = 0
    missing_title: int = 0
    missing_abstract: int = 0
    missing_year: int = 0
    # reason -> {"count": n, "examples": [{"line", "field", "message"}, ...]}
    skipped: dict[str, dict[str, Any]] = field(default_factory=dict)
    parts: dict[str, int] = field(default_factory=dict)

    def skip(
        self, line: int, reason: str, field_name: str | None, message: str, *, bad: bool = True
    ) -> None:
        """Count a skipped record; a bad one raises at once when no bad records are allowed."""
        if bad and self.max_bad_fraction == 0:
            raise InputDataError(
                f"bad record ({reason}): {message} "
                "(set ingest.max_bad_fraction above 0 to skip and count bad records)",
                path=self.input,
                line=line,
                field=field_name,
            )
        entry = self.skipped.setdefault(reason, {"count": 0, "examples": []})
        entry["count"] += 1
        if len(entry["examples"]) < MAX_EXAMPLES:
            entry["examples"].append({"line": line, "field": field_name, "message": message})
        if bad:
            self.bad_records += 1

    def skip_many(
        self, lines: np.ndarray, reason: str, field_name: str | None, message: str, *, bad: bool
    ) -> None:
        """``skip`` for many records at once: each counts, the first lines are examples."""
        for line in lines[:MAX_EXAMPLES].tolist():
            self.skip(line, reason, field_name, message, bad=bad)
        rest = len(lines) - min(len(lines), MAX_EXAMPLES)
        if rest:
            self.skipped[reason]["count"] += rest
            if bad:
                self.bad_records += rest

    def check_bad_fraction(self) -> None:
        """Fail the file when its bad records exceed the allowed fraction."""
        if self.bad_records == 0:
            return
        fraction = self.bad_records / max(self.records_read, 1)
        if fraction > self.max_bad_fraction:
            first = min(
                (ex["line"], reason, ex["field"], ex["message"])
                for reason, entry in self.skipped.items()
                for ex in entry["examples"]
            )
            raise InputDataError(
                f"{self.bad_records} of {self.records_read} records are bad "
                f"({fraction:.2%} > max_bad_fraction {self.max_bad_fraction}); first at line "
                f"{first[0]} ({first[1]}, field {first[2]!r}): {first[3]}",
                path=self.input,
            )

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


_PATH_RE = re.compile(r" - at `\$\.?([^`]*)`$")
_MISSING_RE = re.compile(r"^Object missing required field `([^`]+)`")


# What decoding one line may raise: msgspec reports invalid UTF-8 in a string as a
# UnicodeDecodeError rather than as one of its own errors.
DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError)


def classify_error(error: Exception) -> tuple[str, str | None]:
    """Map a decoding error to (reason, field path) for the report and the error message."""
    if isinstance(error, UnicodeDecodeError):
        return "invalid_utf8", None
    if isinstance(error, msgspec.ValidationError):
        message = str(error)
        match = _PATH_RE.search(message)
        path = match.group(1) if match else None
        missing = _MISSING_RE.match(message)
        if missing:
            name = missing.group(1)
            return f"missing_{name}", f"{path}.{name}" if path else name
        if path is None and message.startswith("Expected `object`"):
            return "not_object", None
        return ("wrong_type" if ", got `" in message else "invalid_value"), path
    return "malformed_json", None


# --------------------------------------------------------------------------------------
# Staging part writer (also writes the final tables)


class PartWriter:
    """Write record batches as ``part-NNNNN.parquet`` files of ``rows_per_part`` rows.

    With ``fixed_row_groups`` (the canonical tables), batches are re-cut into row groups of
    exactly ``row_group_size`` rows (the last one of a part or of the table may be shorter)
    and combined into one contiguous chunk before writing, so the bytes depend only on the
    rows, never on how a producer batched them.
    """

    def __init__(
        self,
        directory: Path,
        schema: pa.Schema,
        *,
        rows_per_part: int,
        row_group_size: int,
        options: dict[str, Any],
        fixed_row_groups: bool = True,
        first_part: int = 0,
    ) -> None:
        self.directory = directory
        self.first_part = first_part
        self.fixed_row_groups = fixed_row_groups
        self.schema = schema
        self.rows_per_part = rows_per_part
        self.row_group_size = max(1, min(row_group_size, rows_per_part))
        self.options = options
        self.parts = 0
        self.rows = 0
        self.null_counts: dict[str, int] = dict.fromkeys(schema.names, 0)
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = 0
        self._writer: pq.ParquetWriter | None = None
        self._part_rows = 0
        directory.mkdir(parents=True, exist_ok=True)

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        if batch.schema != self.schema:
            batch = batch.cast(self.schema)
        if not self.fixed_row_groups:
            self._write_direct(batch)
            return
        self._pending.append(batch)
        self._pending_rows += batch.num_rows
        while self._pending_rows >= self._next_size():
            self._write_chunk(self._next_size())

    def _next_size(self) -> int:
        return min(self.row_group_size, self.rows_per_part - self._part_rows)

    def _write_chunk(self, size: int) -> None:
        table = pa.Table.from_batches(self._pending, schema=self.schema)
        chunk = table.slice(0, size).combine_chunks()
        rest = table.slice(size)
        self._pending = rest.to_batches()
        self._pending_rows = rest.num_rows
        if self._writer is None:
            self._writer = pq.ParquetWriter(self._part_path(), self.schema, **self.options)
        self._writer.write_table(chunk, row_group_size=size)
        for name in self.schema.names:
            self.null_counts[name] += chunk.column(name).null_count
        self._part_rows += size
        self.rows += size
        if self._part_rows >= self.rows_per_part:
            self._close_part()

    def _write_direct(self, batch: pa.RecordBatch) -> None:
        """One row group per batch, no re-cutting: for staging files, which merge reads in
        any order and which need not be byte-stable."""
        if self._writer is None:
            self._writer = pq.ParquetWriter(self._part_path(), self.schema, **self.options)
        self._writer.write_batch(batch)
        self._part_rows += batch.num_rows
        self.rows += batch.num_rows
        if self._part_rows >= self.rows_per_part:
            self._close_part()

    def _close_part(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
            self.parts += 1
            self._part_rows = 0

    def close(self) -> None:
        """Flush the rest; an empty table still gets one (empty) part so globs match."""
        if self._pending_rows:
            self._write_chunk(self._pending_rows)
        self._close_part()
        if self.parts == 0:
            pq.write_table(self.schema.empty_table(), self._part_path(), **self.options)
            self.parts = 1

    def _part_path(self) -> Path:
        """The file of the part being started: this writer's parts follow ``first_part``."""
        return self.directory / f"part-{self.first_part + self.parts:05d}.parquet"


@dataclass
class WrittenTable:
    """What the part writers of one table wrote, summed over them."""

    rows: int
    parts: int
    null_counts: dict[str, int]

    @classmethod
    def of(cls, writers: Sequence[PartWriter]) -> WrittenTable:
        null_counts: dict[str, int] = {}
        for writer in writers:
            for name, count in writer.null_counts.items():
                null_counts[name] = null_counts.get(name, 0) + count
        return cls(
            rows=sum(w.rows for w in writers),
            parts=sum(w.parts for w in writers),
            null_counts=null_counts,
        )


# --------------------------------------------------------------------------------------
# parse: JSON lines


def _open_binary(path: Path) -> tuple[Any, Any]:
    """Open ``path`` for reading bytes, decompressing gzip; return (stream, raw file)."""
    raw = open(path, "rb")  # noqa: SIM115 - closed by the caller
    magic = raw.read(2)
    raw.seek(0)
    if magic == b"\x1f\x8b":
        from isal import igzip

        return igzip.IGzipFile(fileobj=raw, mode="rb"), raw
    return raw, raw


def _decompression_errors() -> tuple[type[BaseException], ...]:
    import zlib

    from isal import isal_zlib

    return (EOFError, OSError, zlib.error, isal_zlib.error)


@dataclass
class LineChunk:
    """A run of complete lines of one input file."""

    first_line: int  # 1-based
    text: bytes | memoryview
    n_lines: int
    # Some line starts with whitespace, so it may be blank: ``decode_lines`` would skip it
    # silently and shift the line numbers.
    may_hold_blank_lines: bool

    @property
    def line_numbers(self) -> np.ndarray:
        return np.arange(self.first_line, self.first_line + self.n_lines, dtype=np.int64)


_WHITESPACE = np.zeros(256, dtype=bool)
_WHITESPACE[list(b"\n\r \t")] = True
_NEWLINE = ord("\n")


def scan_lines(text: bytes | bytearray | memoryview) -> tuple[int, int, bool]:
    """(newlines, offset of the last one or -1, whether a line starts with whitespace).

    One numpy pass: counting the newlines and a regex search for a newline followed by
    whitespace took three times as long (11 against 3.6 ms per 8 MB chunk). The compiled
    ``v2020_decoder`` does it in ~0.3 ms where it is built.
    """
    if v2020_decoder.AVAILABLE:
        return v2020_decoder.scan_lines(text)
    codes = np.frombuffer(text, dtype=np.uint8)
    newlines = np.flatnonzero(codes == _NEWLINE)
    if not newlines.size:
        return 0, -1, False
    starts_with_space = bool(_WHITESPACE[codes[0]] or _WHITESPACE[codes[newlines[:-1] + 1]].any())
    return int(newlines.size), int(newlines[-1]), starts_with_space


def iter_line_chunks(
    path: Path, report: ShardReport, chunk_bytes: int | None = None
) -> Iterator[LineChunk]:
    """Yield runs of complete lines.

    A chunk's text is a view into one reused buffer, valid only until the next iteration:
    re-allocating (and page-faulting) a fresh multi-MB buffer per chunk cost more system
    time than decoding. A truncated or corrupt gzip stream raises
    :class:`InputDataError` naming the last complete line, after the lines before it have
    been yielded.
    """
    chunk_bytes = chunk_bytes or CHUNK_BYTES
    stream, raw = _open_binary(path)
    errors = _decompression_errors()
    next_line = 1
    buf = bytearray(chunk_bytes)
    filled = 0
    with (
        raw,
        stream,
        tqdm(
            total=report.input_bytes,
            unit="B",
            unit_scale=True,
            desc=f"parse {path.name}",
            mininterval=5,
            leave=False,
        ) as bar,
    ):
        while True:
            if filled == len(buf):  # one line longer than the buffer: grow it
                buf.extend(bytes(len(buf)))
            target = memoryview(buf)[filled:]
            try:
                got = stream.readinto(target)
            except errors as error:
                raise InputDataError(
                    f"truncated or corrupt compressed stream ({type(error).__name__}: {error}); "
                    f"the last complete line read is line {next_line - 1}",
                    path=str(report.input),
                ) from error
            finally:
                target.release()
            bar.update(raw.tell() - bar.n)
            if not got:
                break
            end = filled + got
            with memoryview(buf)[:end] as view:
                n_lines, cut, may_hold_blank = scan_lines(view)
            if not n_lines:
                filled = end
                continue
            chunk = memoryview(buf)[: cut + 1]
            try:
                yield LineChunk(next_line, chunk, n_lines, may_hold_blank)
            finally:
                chunk.release()
            next_line += n_lines
            filled = end - cut - 1
            buf[:filled] = buf[cut + 1 : end]
        if filled:
            tail = bytes(buf[:filled])
            yield LineChunk(next_line, tail, 1, _WHITESPACE[tail[0]].item())


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


def decode_chunk(
    decoder: msgspec.json.Decoder, chunk: LineChunk, report: ShardReport
) -> tuple[list[Any], np.ndarray]:
    """Decode one chunk of lines; return the records and their 1-based line numbers.

    The fast path decodes the whole chunk at once. When that fails, or the chunk may hold
    blank lines, it is decoded line by line so every problem is located exactly.
    """
    report.lines_read += chunk.n_lines
    records = decode_whole_chunk(decoder, chunk)
    if records is not None:
        report.records_read += chunk.n_lines
        return records, chunk.line_numbers
    records = []
    lines = []
    for offset, text in enumerate(bytes(chunk.text).split(b"\n")[: chunk.n_lines]):
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


def _papers_batch(
    ids: pa.Array,
    titles: list[str | None],
    abstracts: list[str | None] | None,
    years: list[int | None],
    fields: list[list[str]] | pa.ListArray,
    lines: pa.Array,
    citations: tuple[pa.ListArray, pa.ListArray] | None = None,
) -> pa.RecordBatch:
    """One staged papers batch; ``citations`` is (outbound, inbound), null lists if None."""
    n = len(ids)
    outbound, inbound = citations or (pa.nulls(n, STRING_LIST), pa.nulls(n, STRING_LIST))
    return pa.RecordBatch.from_arrays(
        [
            ids,
            pa.array(titles, pa.string()),
            pa.array(abstracts, pa.string()) if abstracts is not None else pa.nulls(n, pa.string()),
            pa.array(years, pa.int32()),
            fields if isinstance(fields, pa.Array) else pa.array(fields, STRING_LIST),
            outbound,
            inbound,
            lines,
        ],
        schema=STAGE_PAPERS_SCHEMA,
    )


def _n_items(lists: pa.ListArray) -> int:
    """How many ids a (possibly sliced) list array holds, nulls counting as none."""
    return int(pc.sum(pc.list_value_length(lists)).as_py() or 0)


def _lists_or_empty(lists: list[list[str] | None]) -> pa.ListArray:
    """``list<string>`` with None as [] (the fields of study: no field is not unknown)."""
    array = pa.array(lists, STRING_LIST)
    if array.null_count:  # a null list has no items, so its offsets already say []
        array = pa.ListArray.from_arrays(array.offsets, array.values)
    return array


def _stage_v2020(
    records: list[V2020Paper] | list[V2020PaperRawCitations],
    lines: np.ndarray,
    out: StagingWriters,
    citations: tuple[pa.ListArray, pa.ListArray] | None = None,
) -> None:
    """Stage decoded records; ``citations`` are their (outbound, inbound) lists when the
    records hold them raw (``stage_v2020_chunk``)."""
    ids = pa.array([r.paper_id for r in records], pa.string())
    titles = [r.title for r in records]
    abstracts = [r.abstract for r in records]
    years = [r.year for r in records]
    fields = _lists_or_empty([r.mag_field_of_study for r in records])
    out.count_missing(titles, abstracts, years)
    if citations is None:
        citations = (
            pa.array([r.outbound_citations for r in records], STRING_LIST),
            pa.array([r.inbound_citations for r in records], STRING_LIST),
        )
    outbound, inbound = citations
    out.report.edges_written += _n_items(outbound) + _n_items(inbound)
    out.papers.write(
        _papers_batch(
            ids, titles, abstracts, years, fields, pa.array(lines), citations=(outbound, inbound)
        )
    )


def stage_v2020_chunk(decoder: msgspec.json.Decoder, chunk: LineChunk, out: StagingWriters) -> bool:
    """Stage a chunk of v2020 lines with their citation lists decoded by ``json_lists``.

    ``decoder`` decodes ``V2020PaperRawCitations``. Returns False, having counted and
    staged nothing, when any line or list needs the exact path (``decode_chunk``): a
    malformed or mistyped record, a blank line, or a list that is not plain.
    """
    records = decode_whole_chunk(decoder, chunk)
    if records is None:
        return False
    raw_outbound = [r.outbound_citations for r in records]
    raw_inbound = [r.inbound_citations for r in records]
    try:
        outbound = plain_string_lists(raw_outbound)
        inbound = None if outbound is None else plain_string_lists(raw_inbound)
        if inbound is None:
            return False
        out.report.lines_read += chunk.n_lines
        out.report.records_read += chunk.n_lines
        _stage_v2020(records, chunk.line_numbers, out, citations=(outbound, inbound))
        return True
    finally:
        # Raw values are views of the chunk's buffer, which iter_line_chunks releases and
        # refills: none may outlive this call, not even in the traceback of an error.
        records.clear()
        raw_outbound.clear()
        raw_inbound.clear()


def stage_v2020_native(chunk: LineChunk, out: StagingWriters) -> bool:
    """Stage a chunk of v2020 lines decoded by the compiled decoder (``v2020_decoder``).

    Returns False, having counted and staged nothing, when the decoder leaves the chunk to
    the exact path.
    """
    columns = v2020_decoder.decode_columns(chunk.text, chunk.n_lines)
    if columns is None:
        return False
    _, titles, abstracts, years, _, outbound, inbound = columns
    report = out.report
    report.lines_read += chunk.n_lines
    report.records_read += chunk.n_lines
    report.missing_title += titles.null_count
    report.missing_abstract += abstracts.null_count
    report.missing_year += years.null_count
    report.edges_written += _n_items(outbound) + _n_items(inbound)
    lines = pa.array(chunk.line_numbers)
    out.papers.write(pa.RecordBatch.from_arrays([*columns, lines], schema=STAGE_PAPERS_SCHEMA))
    return True


def _corpus_ids(values: list[int]) -> pa.Array:
    """S2AG corpus ids as the decimal strings that are their paper ids (nulls stay null).

    Cast in Arrow rather than by ``str()`` per record: the S2AG citations dataset has
    billions of rows, and the Python loop was most of its parse time.
    """
    return pc.cast(pa.array(values, pa.int64()), pa.string())


def _s2ag_fields(record: S2agPaper) -> list[str]:
    if record.s2fieldsofstudy is not None:
        categories = (f.category for f in record.s2fieldsofstudy if f.category is not None)
    else:
        categories = iter(record.fieldsofstudy or ())
    return list(dict.fromkeys(categories))


def _stage_s2ag_papers(records: list[S2agPaper], lines: np.ndarray, out: StagingWriters) -> None:
    ids = _corpus_ids([r.corpusid for r in records])
    titles = [r.title for r in records]
    years = [r.year for r in records]
    # Abstracts come from their own dataset and are counted after merge attaches them.
    out.count_missing(titles, None, years)
    fields = [_s2ag_fields(r) for r in records]
    out.papers.write(_papers_batch(ids, titles, None, years, fields, pa.array(lines)))


def _stage_s2ag_abstracts(
    records: list[S2agAbstract], lines: np.ndarray, out: StagingWriters
) -> None:
    keep = [i for i, r in enumerate(records) if r.abstract is not None]
    out.report.missing_abstract += len(records) - len(keep)
    if len(keep) != len(records):
        records = [records[i] for i in keep]
        lines = lines[keep]
    batch = pa.RecordBatch.from_arrays(
        [
            _corpus_ids([r.corpusid for r in records]),
            pa.array([r.abstract for r in records], pa.string()),
            pa.array(lines, pa.int64()),
        ],
        schema=STAGE_ABSTRACTS_SCHEMA,
    )
    out.abstracts.write(batch)
    out.report.records_written += batch.num_rows


def _stage_s2ag_citations(
    records: list[S2agCitation], lines: np.ndarray, out: StagingWriters
) -> None:
    citing = _corpus_ids([r.citingcorpusid for r in records])
    cited = _corpus_ids([r.citedcorpusid for r in records])
    if cited.null_count:
        null = cited.is_null()
        out.report.skip_many(
            lines[null.to_numpy(zero_copy_only=False)],
            "null_cited",
            "citedcorpusid",
            "cited work not in S2AG",
            bad=False,
        )
        known = pc.invert(null)
        citing, cited = citing.filter(known), cited.filter(known)
    batch = pa.RecordBatch.from_arrays([citing, cited], schema=STAGE_EDGES_SCHEMA)
    out.write_edges(batch)
    out.report.records_written += batch.num_rows


STAGERS: dict[str, Callable[[list[Any], np.ndarray, StagingWriters], None]] = {
    "s2orc_v2020": _stage_v2020,
    "s2ag-papers": _stage_s2ag_papers,
    "s2ag-abstracts": _stage_s2ag_abstracts,
    "s2ag-citations": _stage_s2ag_citations,
}


class StagingWriters:
    """The part writers of one staging directory, created only for the kind staged."""

    def __init__(self, root: Path, report: ShardReport, rows_per_part: int) -> None:
        self.report = report

        def writer(name: str, schema: pa.Schema) -> PartWriter:
            return PartWriter(
                root / name,
                schema,
                rows_per_part=rows_per_part,
                row_group_size=rows_per_part,
                options=STAGING_PARQUET_OPTIONS,
                fixed_row_groups=False,
            )

        kind = report.kind
        self.papers = writer("papers", STAGE_PAPERS_SCHEMA) if kind == "papers" else None
        self.edges = writer("edges", STAGE_EDGES_SCHEMA) if kind == "citations" else None
        self.abstracts = (
            writer("abstracts", STAGE_ABSTRACTS_SCHEMA) if kind == "abstracts" else None
        )

    def count_missing(
        self,
        titles: list[str | None],
        abstracts: list[str | None] | None,
        years: list[int | None],
    ) -> None:
        self.report.missing_title += titles.count(None)
        if abstracts is not None:
            self.report.missing_abstract += abstracts.count(None)
        self.report.missing_year += years.count(None)

    def write_edges(self, batch: pa.RecordBatch) -> None:
        self.edges.write(batch)
        self.report.edges_written += batch.num_rows

    def close(self) -> None:
        for name in ("papers", "edges", "abstracts"):
            writer = getattr(self, name)
            if writer is not None:
                writer.close()
                self.report.parts[name] = writer.parts
        if self.papers is not None:
            self.report.records_written = self.papers.rows


def _parse_json(path: Path, fmt: str, out: StagingWriters) -> None:
    decoder = msgspec.json.Decoder(RECORD_TYPES[fmt])
    raw_citations = msgspec.json.Decoder(V2020PaperRawCitations) if fmt == "s2orc_v2020" else None
    stage = STAGERS[fmt]
    native = fmt == "s2orc_v2020" and v2020_decoder.AVAILABLE
    if fmt == "s2orc_v2020" and not native:
        log.log(
            logging.INFO if v2020_decoder.BUILT else logging.WARNING,
            "%s: decoding with msgspec alone (parse takes ~1.5x the CPU): %s",
            path,
            "CITEVAL_PURE_PYTHON is set"
            if v2020_decoder.BUILT
            else "citeval._v2020 is not built; with a C compiler, pip install --no-deps -e .",
        )
    for chunk in iter_line_chunks(path, out.report):
        if native and stage_v2020_native(chunk, out):
            continue
        if raw_citations is not None and stage_v2020_chunk(raw_citations, chunk, out):
            continue
        records, lines = decode_chunk(decoder, chunk, out.report)
        if records:
            stage(records, lines, out)


# --------------------------------------------------------------------------------------
# parse: parquet


PARQUET_COLUMNS: dict[str, str] = {
    "paper_id": "string",
    "title": "string",
    "abstract": "string",
    "year": "integer",
    "mag_field_of_study": "list<string>",
    "outbound_citations": "list<string>",
    "inbound_citations": "list<string>",
}


def _is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def _type_ok(expected: str, t: pa.DataType, *, nullable_ok: bool) -> bool:
    if pa.types.is_null(t):
        return nullable_ok
    if expected == "string":
        return _is_string(t)
    if expected == "integer":
        return pa.types.is_integer(t)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t):
        return _is_string(t.value_type) or pa.types.is_null(t.value_type)
    return False


def check_parquet_schema(path: Path, schema: pa.Schema) -> None:
    """Fail before reading rows when a v2020 column is missing or has the wrong type."""
    for name, expected in PARQUET_COLUMNS.items():
        index = schema.get_field_index(name)
        if index < 0:
            raise InputDataError(
                f"parquet input lacks the column {name!r} ({expected}); it has "
                f"{', '.join(schema.names) or 'no columns'}",
                path=str(path),
                field=name,
            )
        column_type = schema.field(index).type
        if not _type_ok(expected, column_type, nullable_ok=name != "paper_id"):
            raise InputDataError(
                f"column {name!r} has type {column_type}, expected {expected}",
                path=str(path),
                field=name,
            )


def _string_list(column: pa.Array) -> pa.ListArray:
    if pa.types.is_null(column.type):
        return pa.nulls(len(column), STRING_LIST)
    return column.cast(STRING_LIST)


def _stage_parquet_batch(batch: pa.RecordBatch, first_row: int, out: StagingWriters) -> None:
    n = batch.num_rows
    report = out.report
    report.lines_read += n
    report.records_read += n
    ids = batch.column("paper_id").cast(pa.string())
    year64 = batch.column("year").cast(pa.int64())
    lists = {
        c: _string_list(batch.column(c)) for c in PARQUET_COLUMNS if "list" in PARQUET_COLUMNS[c]
    }

    # (row, reason, field, message) for every rejected row, reported in row order.
    problems: list[tuple[int, str, str, str]] = []

    def flag(mask: pa.Array, reason: str, name: str, message: str) -> None:
        for row in np.flatnonzero(mask.fill_null(False).to_numpy(zero_copy_only=False)):
            problems.append((int(row), reason, name, message))

    flag(pc.is_null(ids), "missing_paper_id", "paper_id", "paper_id is null")
    flag(pc.equal(pc.utf8_length(ids), 0), "invalid_value", "paper_id", "paper_id is empty")
    flag(
        pc.or_(pc.less(year64, INT32_MIN), pc.greater(year64, INT32_MAX)),
        "invalid_value",
        "year",
        "year outside the int32 range",
    )
    for name, lst in lists.items():
        values = pc.list_flatten(lst)
        if values.null_count:
            parents = pc.list_parent_indices(lst).filter(pc.is_null(values))
            for row in np.unique(parents.to_numpy()):
                problems.append((int(row), "wrong_type", name, f"{name} holds a null id"))

    keep = None
    if problems:
        problems.sort()
        rejected: set[int] = set()
        for row, reason, name, message in problems:
            # A row with several problems is one bad record, reported by its first.
            if row not in rejected:
                rejected.add(row)
                report.skip(first_row + row, reason, name, message)
        mask = np.ones(n, dtype=bool)
        mask[sorted(rejected)] = False
        keep = pa.array(mask)
    lines = pa.array(np.arange(first_row, first_row + n, dtype=np.int64))
    titles = batch.column("title").cast(pa.string())
    abstracts = batch.column("abstract").cast(pa.string())
    years = year64
    fields = pc.if_else(
        pc.is_null(lists["mag_field_of_study"]),
        pa.scalar([], STRING_LIST),
        lists["mag_field_of_study"],
    )
    outbound, inbound = lists["outbound_citations"], lists["inbound_citations"]
    if keep is not None:
        ids, lines, titles, abstracts, years, fields, outbound, inbound = (
            a.filter(keep)
            for a in (ids, lines, titles, abstracts, years, fields, outbound, inbound)
        )
    years = years.cast(pa.int32())
    report.missing_title += titles.null_count
    report.missing_abstract += abstracts.null_count
    report.missing_year += years.null_count
    report.edges_written += _n_items(outbound) + _n_items(inbound)
    out.papers.write(
        pa.RecordBatch.from_arrays(
            [ids, titles, abstracts, years, fields, outbound, inbound, lines],
            schema=STAGE_PAPERS_SCHEMA,
        )
    )


def _parse_parquet(path: Path, out: StagingWriters, batch_rows: int = 65_536) -> None:
    try:
        handle = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as error:
        raise InputDataError(f"cannot read as parquet: {error}", path=str(path)) from error
    with handle:
        check_parquet_schema(path, handle.schema_arrow)
        first_row = 1
        bar = tqdm(
            total=handle.metadata.num_rows,
            unit="rows",
            desc=f"parse {path.name}",
            mininterval=5,
            leave=False,
        )
        with bar:
            try:
                for batch in handle.iter_batches(
                    batch_size=batch_rows, columns=list(PARQUET_COLUMNS)
                ):
                    _stage_parquet_batch(batch, first_row, out)
                    first_row += batch.num_rows
                    bar.update(batch.num_rows)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as error:
                raise InputDataError(
                    f"cannot read parquet near row {first_row}: {error}", path=str(path)
                ) from error


# --------------------------------------------------------------------------------------
# parse: entry point


def parse_shard(
    input_path: str | os.PathLike,
    fmt: str,
    output_dir: str | os.PathLike,
    *,
    max_bad_fraction: float = 0.0,
    rows_per_part: int = STAGING_ROWS_PER_PART,
) -> dict[str, Any]:
    """Stage one input file into ``output_dir`` (atomically); return its shard report."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {FORMATS}")
    if not 0 <= max_bad_fraction <= 1:
        raise ValueError("max_bad_fraction must be within [0, 1]")
    path = Path(input_path)
    if not path.is_file():
        raise InputDataError("input file not found", path=str(input_path))
    report = ShardReport(
        input=str(input_path),
        format=fmt,
        kind=FORMAT_KIND[fmt],
        input_bytes=path.stat().st_size,
        max_bad_fraction=max_bad_fraction,
    )
    started = time.perf_counter()
    # Chunks allocate millions of small containers; the cyclic GC would rescan all of
    # them repeatedly without ever finding garbage (the records hold no cycles).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        with atomic_path(output_dir) as tmp:
            tmp.mkdir()
            writers = StagingWriters(tmp, report, rows_per_part)
            if fmt == "parquet":
                _parse_parquet(path, writers)
            else:
                _parse_json(path, fmt, writers)
            writers.close()
            report.check_bad_fraction()
            (tmp / SHARD_REPORT).write_text(
                json.dumps(report.to_dict(), indent=2, sort_keys=True) + "\n"
            )
    finally:
        if gc_was_enabled:
            gc.enable()
    seconds = time.perf_counter() - started
    log.info(
        "%s: %d records read, %d written, %d edges, %d skipped, %d blank lines in %.1f s",
        input_path,
        report.records_read,
        report.records_written,
        report.edges_written,
        sum(e["count"] for e in report.skipped.values()),
        report.blank_lines,
        seconds,
    )
    return report.to_dict()


# --------------------------------------------------------------------------------------
# merge


def _sql_str(value: str | os.PathLike) -> str:
    return "'" + str(value).replace("'", "''") + "'"


def _sql_list(paths: Iterable[Path]) -> str:
    return "[" + ", ".join(_sql_str(p) for p in paths) + "]"


@dataclass
class StagedShard:
    index: int
    directory: Path
    report: dict[str, Any]

    def parts(self, name: str) -> list[Path]:
        # By number, not name: merge orders rows by (file, line), so parts must come in
        # line order even past part-99999.
        return sorted(
            (self.directory / name).glob("part-*.parquet"),
            key=lambda path: int(path.stem.split("-")[1]),
        )

    def location(self, line: int) -> str:
        return f"{self.report['input']}:{line}"


def load_staging(directories: Sequence[str | os.PathLike]) -> list[StagedShard]:
    """Read each staging directory's shard report; a missing one means parse never finished."""
    shards = []
    for index, directory in enumerate(directories):
        report_path = Path(directory) / SHARD_REPORT
        try:
            report = json.loads(report_path.read_text())
        except FileNotFoundError:
            raise InputDataError(
                "not a finished staging directory (no shard.json); run ingest parse first",
                path=str(directory),
            ) from None
        version = report.get("staging_version", 1)
        if version != STAGING_VERSION:
            raise InputDataError(
                f"staging format {version} was written by another citeval version; merge "
                f"reads format {STAGING_VERSION}: parse this shard again (with Snakemake: "
                "--forcerun ingest_parse)",
                path=str(directory),
            )
        shards.append(StagedShard(index, Path(directory), report))
    if not any(s.report["kind"] == "papers" for s in shards):
        raise InputDataError("no papers shard among the staging directories; nothing to merge")
    return shards


@dataclass
class StagedTable:
    """One staged table (papers, abstracts) of every shard, read as a single scan.

    ``sql`` selects the given columns plus ``_file``, the position of the row's file in
    the scan's file list, and ``_line``. Files are listed shard by shard and, within a
    shard, in part order, which is line order, so ordering by (``_file``, ``_line``) is
    ordering by (shard, line). One ``read_parquet`` of every file rather than a UNION
    ALL of one per shard: each branch of the union held its own scan buffers, ~25 MB
    per shard (5M papers in 20 shards: 796 against 314 MB to scan the papers once),
    which S2ORC's 100 shards would have multiplied.
    """

    sql: str
    shard_of_file: list[int]

    @classmethod
    def of(cls, shards: list[StagedShard], part: str, columns: str) -> StagedTable | None:
        files, shard_of_file = [], []
        for shard in shards:
            if (shard.directory / part).is_dir():
                parts = shard.parts(part)
                files += parts
                shard_of_file += [shard.index] * len(parts)
        if not files:
            return None
        sql = (
            f"SELECT {columns}, file_index::INTEGER AS _file, _line "
            f"FROM read_parquet({_sql_list(files)})"
        )
        return cls(sql, shard_of_file)


class Merger:
    """``merge``: one private in-memory DuckDB database, the lookups beside it, and the
    counts and examples of the report on the way.

    Tables live in the main schema (not TEMP) so that the writers' own cursors see them.
    """

    def __init__(
        self,
        shards: list[StagedShard],
        *,
        on_duplicate: str,
        memory_limit: str,
        threads: int,
        temp_dir: Path,
    ) -> None:
        import duckdb

        self.shards = shards
        self.on_duplicate = on_duplicate
        self.memory_limit = memory_limit
        self.threads = threads
        self.temp_dir = temp_dir
        self.con = duckdb.connect(
            config={
                "threads": threads,
                "temp_directory": str(temp_dir),
                "preserve_insertion_order": False,
            }
        )
        self.memory_bytes = self.limit_duckdb(cli.duckdb_memory_bytes(memory_limit))
        self.con.execute("SET enable_progress_bar = false")
        self.counts: dict[str, int] = {}
        self.examples: dict[str, list[Any]] = {}
        self.staged: dict[str, StagedTable] = {}  # by the name of its view
        # Set by run(): the deduplicated papers view, whether S2AG abstracts are attached
        # and the number of papers; n_citations is set by write_citations().
        self.papers = ""
        self.has_abstracts = False
        # Set by load_lookups(): every paper_id and the citation counts, in pid order.
        self.ids = pa.array([], pa.string())
        self.n_cited_by = self.n_references = np.zeros(0, dtype=np.int32)
        self.n_papers = self.n_citations = 0
        # Set by write_papers() when the papers are first written out by pid range: the
        # folder holding one file per range, and the pids per range.
        self.papers_by_range: Path | None = None
        self.papers_range_step = 0
        # Set by _build_edges(): the citing pid ranges, the folder of their edge rows'
        # keys, one file per range, the pids per range, and the distinct dangling pairs,
        # without and with citing == cited.
        self.citing_ranges: list[tuple[int, int]] = []
        self.edges_by_range = temp_dir / "edges-by-range"
        self.edges_range_step = 1
        self.dangling = self.dangling_self = 0

    def sql(self, query: str, step: str | None = None) -> Any:
        started = time.perf_counter()
        result = self.con.execute(query)
        if step:
            log.info("merge: %s (%.1f s)", step, time.perf_counter() - started)
        return result

    def scalar(self, query: str) -> Any:
        # fetchall: a result left unfinished would block the connection's next relation.
        return self.con.execute(query).fetchall()[0][0]

    def _locations(self, view: str, key: str, limit: int) -> list[tuple[int, int]]:
        """The first (shard, line) places where ``key`` occurs, in input order."""
        rows = self.con.execute(
            f"SELECT _file, _line FROM {view} WHERE paper_id = ? ORDER BY _file, _line "
            f"LIMIT {limit}",
            [key],
        ).fetchall()
        shard_of_file = self.staged[view].shard_of_file
        return [(shard_of_file[file], line) for file, line in rows]

    def _where(self, shard: int, line: int) -> str:
        return self.shards[shard].location(line)

    def create_staged_view(self, view: str, table: StagedTable) -> None:
        self.staged[view] = table
        self.sql(f"CREATE VIEW {view} AS {table.sql}")

    def dedupe(self, view: str, what: str) -> str:
        """Resolve repeated paper_ids in ``view`` (a staged view); return the name of the
        deduplicated view."""
        self.sql(
            f"CREATE TABLE {view}_dup AS SELECT paper_id, count(*) AS n "
            f"FROM {view} GROUP BY paper_id HAVING count(*) > 1",
            f"find duplicate {what}",
        )
        dup_ids, extra = self.con.execute(
            f"SELECT count(*), coalesce(sum(n - 1), 0) FROM {view}_dup"
        ).fetchone()
        self.counts[f"duplicate_{what}"] = int(extra)
        self.counts[f"duplicate_{what}_ids"] = int(dup_ids)
        if not dup_ids:
            return view
        first = [
            r[0]
            for r in self.con.execute(
                f"SELECT paper_id FROM {view}_dup ORDER BY paper_id LIMIT {MAX_EXAMPLES}"
            ).fetchall()
        ]
        if self.on_duplicate == "error":
            (shard, line), again = self._locations(view, first[0], 2)
            raise InputDataError(
                f"duplicate {what} id {first[0]!r}, again at {self._where(*again)} "
                f"({dup_ids} ids repeated, {extra} extra records in all); set "
                "ingest.on_duplicate: keep_first to keep the first record of each",
                path=self.shards[shard].report["input"],
                line=line,
                field="paper_id",
            )
        self.examples[f"duplicate_{what}"] = [
            {
                "paper_id": key,
                "locations": [self._where(*at) for at in self._locations(view, key, 3)],
            }
            for key in first
        ]
        # Only the (few) repeated ids go through the window; the bulk is an anti-join.
        self.sql(
            f"CREATE TABLE {view}_losers AS SELECT _file, _line FROM ("
            f"  SELECT _file, _line, row_number() OVER "
            f"    (PARTITION BY paper_id ORDER BY _file, _line) AS rn"
            f"  FROM {view} WHERE paper_id IN (SELECT paper_id FROM {view}_dup)"
            f") WHERE rn > 1",
            f"keep the first of each duplicate {what}",
        )
        self.sql(
            f"CREATE VIEW {view}_kept AS SELECT * FROM {view} v WHERE NOT EXISTS ("
            f"SELECT 1 FROM {view}_losers l WHERE l._file = v._file AND l._line = v._line)"
        )
        return f"{view}_kept"

    def _attach_abstracts(self) -> bool:
        """Stage the S2AG abstracts, if any were parsed; return whether there are any."""
        staged = StagedTable.of(self.shards, "abstracts", "paper_id, abstract")
        if staged is None:
            return False
        self.create_staged_view("abstracts_raw", staged)
        abstracts = self.dedupe("abstracts_raw", "abstracts")
        # pid is null for an abstract of an unknown paper.
        self.sql(
            "CREATE TABLE abstracts AS SELECT a.paper_id, ids.pid, a.abstract "
            f"FROM {abstracts} a LEFT JOIN ids USING (paper_id)",
            "collect abstracts",
        )
        unknown = "FROM abstracts WHERE pid IS NULL"
        self.counts["abstract_for_unknown_paper"] = self.scalar(f"SELECT count(*) {unknown}")
        if self.counts["abstract_for_unknown_paper"]:
            self.examples["abstract_for_unknown_paper"] = [
                r[0]
                for r in self.con.execute(
                    f"SELECT paper_id {unknown} ORDER BY paper_id LIMIT {MAX_EXAMPLES}"
                ).fetchall()
            ]
        return True

    def _build_edges(self) -> None:
        """Resolve both ends of every edge read to pids and write them out by citing range.

        Each paper has a dense integer ``pid``, its rank by ``paper_id``. A paper's
        citation lists are unnested after its own id has been looked up, so per edge only
        the listed id is (S2AG citation rows look up both ends). The resolved rows, one
        per edge read, repeats included, stream out of DuckDB as the sort keys
        ``write_citations`` uses, into one file per citing pid range: DuckDB never holds
        them (a table of them spilled at 5M papers under 1 GB, and every range read from
        it scanned all of it), and ``write_citations`` drops the repeats and
        self-citations in numpy, which is cheaper than a ``DISTINCT`` (2M papers, 50M edge
        rows: 6 s of the 14 s this step took with it). An end outside the corpus gets a
        null pid; only when one did is the input read again to count those edges
        (distinct pairs, with examples).
        """
        lists = StagedTable.of(
            self.shards, "papers", "paper_id, outbound_citations, inbound_citations"
        )
        self.create_staged_view("paper_lists", lists)
        # Each paper's own id is looked up once (every copy's lists count), then unnested.
        own = (
            "(SELECT i.pid, unnest(l.{0}) AS other "
            "FROM paper_lists l JOIN ids i USING (paper_id)) o"
        )
        pid_pairs = [
            "SELECT o.pid AS citing, b.pid AS cited "
            f"FROM {own.format('outbound_citations')} LEFT JOIN ids b ON b.paper_id = o.other",
            "SELECT a.pid AS citing, o.pid AS cited "
            f"FROM {own.format('inbound_citations')} LEFT JOIN ids a ON a.paper_id = o.other",
        ]
        # The same edges as id strings, read again only to count dangling ones.
        as_ids = [
            "SELECT paper_id AS citing_id, unnest(outbound_citations) AS cited_id FROM paper_lists",
            "SELECT unnest(inbound_citations) AS citing_id, paper_id AS cited_id FROM paper_lists",
        ]
        pairs = [p for s in self.shards for p in s.parts("edges")]
        if pairs:
            citation_rows = f"read_parquet({_sql_list(pairs)})"
            pid_pairs.append(
                "SELECT a.pid AS citing, b.pid AS cited "
                f"FROM {citation_rows} e "
                "LEFT JOIN ids a ON e.citing_id = a.paper_id "
                "LEFT JOIN ids b ON e.cited_id = b.paper_id"
            )
            as_ids.append(f"SELECT citing_id, cited_id FROM {citation_rows}")
        # Sized by the edges read, which bound the resolved ones, and by the memory left
        # once the lookups are held, when they are sorted.
        edges_read = _sum((s.report for s in self.shards), "edges_written")
        self.citing_ranges = pid_ranges(
            self.n_papers,
            edges_read * self.CITATION_ROW_BYTES,
            self.memory_bytes - self.lookup_bytes(),
        )
        step = max(1, self.citing_ranges[0][1] - self.citing_ranges[0][0])
        self.edges_range_step = step
        self.edges_by_range.mkdir()
        started = time.perf_counter()
        unresolved = 0
        with (
            self.con.cursor() as cursor,  # a streamed result keeps its connection busy
            tqdm(
                total=edges_read, unit="edges", desc="resolve edges", mininterval=5, leave=False
            ) as bar,
        ):
            # One kind of edge at a time: streamed as one UNION ALL, the joins of every
            # kind held their hash tables at once (5M papers ran out of memory under 1 GB).
            for pairs_of_kind in pid_pairs:
                query = cursor.sql(
                    f"SELECT (citing // {step})::INTEGER AS range, "
                    f"((citing % {step})::UBIGINT << 32) | cited::UBIGINT AS key "
                    f"FROM ({pairs_of_kind})"
                )
                for batch in query.to_arrow_reader(EDGES_READ_BATCH):
                    bar.update(batch.num_rows)
                    if batch.column("key").null_count:
                        unresolved += batch.column("key").null_count
                        batch = batch.filter(pc.is_valid(batch.column("key")))
                    self._append_by_range(
                        batch.column("range").to_numpy(), batch.column("key").to_numpy()
                    )
        log.info(
            "merge: map edge ends to paper numbers, %d citing pid ranges (%.1f s)",
            len(self.citing_ranges),
            time.perf_counter() - started,
        )
        if unresolved:
            source = "(" + " UNION ALL ".join(as_ids) + ")"
            self.dangling, self.dangling_self = self._count_dangling(source)
        self.counts["dangling_edges"] = self.dangling

    def _append_by_range(self, range_of: np.ndarray, keys: np.ndarray) -> None:
        """Append each key to its range's file (see ``range_keys``)."""
        order, runs = runs_by_range(range_of)
        keys = keys[order]
        for k, lo, hi in runs:
            # Appended and closed each time: ranges may outnumber open-file limits.
            with open(self.edges_by_range / f"{k:06d}.keys", "ab") as out:
                keys[lo:hi].tofile(out)

    def range_keys(self, lo: int) -> np.ndarray:
        """The sorted keys of the edge rows of the citing range starting at pid ``lo``,
        repeats kept: (citing - lo) in the high 32 bits, cited in the low 32."""
        path = self.edges_by_range / f"{lo // self.edges_range_step:06d}.keys"
        if not path.exists():  # no edge cites from this range
            return np.empty(0, np.uint64)
        keys = np.fromfile(path, dtype=np.uint64)
        path.unlink()  # each range is read once; its disk space is free for the next steps
        keys.sort()
        return keys

    def _count_dangling(self, source: str) -> tuple[int, int]:
        """(dangling, self-citing dangling) distinct pairs; keeps the first few as examples."""
        self.sql(
            "CREATE TABLE dangling AS SELECT DISTINCT e.citing_id, e.cited_id "
            f"FROM {source} e LEFT JOIN ids a ON e.citing_id = a.paper_id "
            "LEFT JOIN ids b ON e.cited_id = b.paper_id "
            "WHERE a.pid IS NULL OR b.pid IS NULL",
            "collect dangling edges",
        )
        total, selfs = self.con.execute(
            "SELECT count(*), count(*) FILTER (WHERE citing_id = cited_id) FROM dangling"
        ).fetchone()
        if total > selfs:
            self.examples["dangling_edges"] = [
                list(r)
                for r in self.con.execute(
                    "SELECT citing_id, cited_id FROM dangling WHERE citing_id <> cited_id "
                    f"ORDER BY citing_id, cited_id LIMIT {MAX_EXAMPLES}"
                ).fetchall()
            ]
        self.sql("DROP TABLE dangling")
        return int(total) - int(selfs), int(selfs)

    def run(self) -> None:
        """Number the papers, attach abstracts and resolve the ends of every edge."""
        papers = StagedTable.of(self.shards, "papers", "paper_id, title, abstract, year, fields")
        self.create_staged_view("papers_raw", papers)
        self.papers = self.dedupe("papers_raw", "papers")
        # pid order is paper_id order, so sorting pid pairs sorts by (citing_id, cited_id).
        self.sql(
            "CREATE TABLE ids AS SELECT paper_id, "
            "(row_number() OVER (ORDER BY paper_id) - 1)::INTEGER AS pid "
            f"FROM {self.papers}",
            "number the papers",
        )
        self.n_papers = self.scalar("SELECT count(*) FROM ids")
        needed = merge_memory_bytes(self.n_papers)
        if needed > memory_bytes(self.memory_limit):
            log.warning(
                "merge: %d papers need about %.2f GB whatever the limit, so the merge will "
                "exceed --memory-limit %s (or stop); set ingest.memory_limit to about %gGB",
                self.n_papers,
                needed / 1e9,
                self.memory_limit,
                suggested_memory_limit(self.memory_limit, self.n_papers),
            )
        self.has_abstracts = self._attach_abstracts()
        # The lookups load after the edges: the joins with ids need DuckDB's whole budget
        # (5M papers ran out of memory under 1 GB with the lookups held beside them).
        self._build_edges()
        self.load_lookups()

    def papers_select(self, bounded: bool) -> str:
        """SQL for the deduplicated papers with their abstracts, without counts, unsorted.

        ``bounded`` keeps only the rows whose paper_id is between ``$first`` and
        ``$last``: the staging scan then drops the rows outside before reading their text.
        """
        where = "WHERE paper_id BETWEEN $first AND $last" if bounded else ""
        abstract, join = "p.abstract", ""
        if self.has_abstracts:
            abstract = "coalesce(a.abstract, p.abstract)"
            join = (
                f"LEFT JOIN (SELECT paper_id, abstract FROM abstracts {where}) a "
                "ON a.paper_id = p.paper_id"
            )
        return (
            f"SELECT p.paper_id, p.title, {abstract} AS abstract, p.year, "
            f"coalesce(p.fields, []::VARCHAR[]) AS fields "
            f"FROM (SELECT * FROM {self.papers} {where}) p {join}"
        )

    def papers_query(self, lo: int, hi: int) -> tuple[str, dict[str, Any]]:
        """The papers with ``lo <= pid < hi``, in pid (= paper_id) order, without counts.

        The range is given to DuckDB as its first and last paper_id, so the staging scan
        drops the rows outside it before reading their text, and the sort holds one range
        only; ``write_papers`` adds the citation counts by position. (Bounding the range
        through a join with ``ids`` and joining the counts here cost more than twice the
        CPU: 2M papers, 8 ranges, 14 against 6 CPU-s.)
        """
        sql = self.papers_select(bounded=True) + " ORDER BY p.paper_id"
        return sql, {"first": self.ids[lo].as_py(), "last": self.ids[hi - 1].as_py()}

    def partition_papers(self, step: int, n_ranges: int) -> None:
        """Write the papers out once, one Arrow file per range of ``step`` pids.

        Used past ``MAX_RANGES`` ranges, where rescanning the staging for every range
        would cost more than this one pass; each range then reads only its own file
        (``range_papers``). A row's range is found by binary search of its paper_id
        among the ranges' first ids, outside DuckDB: joining ``ids`` there ran out of
        memory at 5M papers under 1 GB, and DuckDB's partitioned COPY buffers a parquet
        row group for every open range.
        """
        target = self.temp_dir / "papers-by-range"
        target.mkdir()
        self.limit_duckdb(self.memory_bytes)
        started = time.perf_counter()
        firsts = self.ids.take(pa.array(range(0, self.n_papers, step)))
        query = self.con.sql(self.papers_select(bounded=False))
        writers: dict[int, pa.ipc.RecordBatchStreamWriter] = {}
        try:
            for batch in query.to_arrow_reader(PAPERS_READ_BATCH):
                order, runs = runs_by_range(range_index(batch.column("paper_id"), firsts))
                batch = batch.take(pa.array(order))
                for k, lo, hi in runs:
                    if k not in writers:
                        writers[k] = pa.ipc.new_stream(target / f"{k:06d}.arrow", batch.schema)
                    writers[k].write_batch(batch.slice(lo, hi - lo))
        finally:
            for writer in writers.values():
                writer.close()
        log.info(
            "merge: wrote the papers out in %d pid ranges (%.1f s)",
            n_ranges,
            time.perf_counter() - started,
        )
        self.papers_by_range, self.papers_range_step = target, step

    def range_papers(self, lo: int, hi: int) -> Iterator[pa.RecordBatch]:
        """The papers with ``lo <= pid < hi`` from their range's file, in paper_id order."""
        k = lo // self.papers_range_step
        path = self.papers_by_range / f"{k:06d}.arrow"
        with pa.memory_map(str(path)) as source:
            table = pa.ipc.open_stream(source).read_all()
        table = table.take(pc.sort_indices(table, [("paper_id", "ascending")]))
        offset = k * self.papers_range_step
        table = table.slice(lo - offset, hi - lo)
        if not table.column("paper_id").equals(pa.chunked_array([self.ids[lo:hi]])):
            raise RuntimeError(f"{path} does not hold exactly the papers of pids {lo}..{hi - 1}")
        yield from table.to_batches(PAPERS_READ_BATCH)

    # Bytes per edge row of a citing range while write_citations sorts it: the uint64 key
    # read from its file (sorted in place), the mask, and the int32 pids split from it
    # before and after dropping repeats and self-citations.
    CITATION_ROW_BYTES = 40

    def load_lookups(self) -> None:
        """Hold every paper_id in pid order and one count array per direction, in memory.

        The ids turn the citations' pid pairs into strings; ``write_citations`` fills the
        counts, and ``write_papers`` attaches them by position. They take about (id length
        + 12) bytes per paper, which come out of DuckDB's budget, so the merge as a whole
        stays within ``--memory-limit``.
        """
        held = self.lookup_bytes()
        table = self.con.sql("SELECT paper_id FROM ids ORDER BY pid").to_arrow_table()
        self.ids = table.column("paper_id").combine_chunks()
        # Every later step looks ids up here; DuckDB's table of them (~23 bytes per
        # paper) would only sit in its budget.
        self.sql("DROP TABLE ids")
        self.n_cited_by = np.zeros(self.n_papers, dtype=np.int32)
        self.n_references = np.zeros(self.n_papers, dtype=np.int32)
        self.memory_bytes = self.limit_duckdb(self.memory_bytes - held)

    def lookup_bytes(self) -> int:
        """What ``load_lookups`` holds: the ids' characters and offsets, and two counts.

        Reads DuckDB's ``ids`` table, which ``load_lookups`` drops.
        """
        characters = self.scalar("SELECT coalesce(sum(strlen(paper_id)), 0) FROM ids")
        return int(characters) + 4 * (self.n_papers + 1) + 8 * self.n_papers

    def limit_duckdb(self, memory_bytes: int) -> int:
        """Set DuckDB's memory limit (at least ``cli.DUCKDB_MIN_MEMORY``); return it."""
        memory_bytes = max(cli.DUCKDB_MIN_MEMORY, memory_bytes)
        self.con.execute(f"SET memory_limit = '{memory_bytes // 2**20}MiB'")
        return memory_bytes

    def write(
        self,
        produce: Callable[[Any, int, int], Iterable[pa.RecordBatch]],
        groups: Sequence[tuple[int, Sequence[tuple[int, int]]]],
        directory: Path,
        schema: pa.Schema,
        rows_per_part: int,
        row_group: int,
        what: str,
        prepare: Callable[[pa.RecordBatch], pa.RecordBatch] | None = None,
        concurrent: int = 1,
        part_writers: int = 1,
    ) -> WrittenTable:
        """Write the batches ``produce(cursor, lo, hi)`` yields for each pid range, in order.

        Each group is (number of its first part, its pid ranges): its ranges are produced
        in order on its own DuckDB cursor, and its rows fill its parts from that one on.
        The parquet encoding runs behind the producer, on up to ``part_writers`` threads
        per group, one part each (``write_behind``), so up to ``concurrent *
        part_writers`` encoders in all. The papers table runs ``concurrent`` groups of
        one part each, as one encoder thread per producer is what bounds it (2M papers:
        ~9 CPU-s of page encoding and zstd); the citations table has one producer and
        ``part_writers`` encoders. Rows arrive sorted and row groups are cut at fixed
        sizes from the start of each part, so the files do not depend on the grouping or
        on the threads. ``prepare`` turns each batch into ``schema`` on the writing
        thread, where its work overlaps with the producer's, one row group's worth of
        rows at a time.
        """
        started = time.perf_counter()

        def write_part(part: int, batches: Iterable[pa.RecordBatch]) -> PartWriter:
            writer = PartWriter(
                directory,
                schema,
                rows_per_part=rows_per_part,
                row_group_size=row_group,
                options=CORPUS_PARQUET_OPTIONS[what],
                first_part=part,
            )
            for batch in batches:
                if prepare is None:
                    writer.write(batch)
                    continue
                # A row group at a time: what ``prepare`` makes may be several times
                # larger than its input (citations: 8 bytes of pids become ~30 of ids).
                for offset in range(0, batch.num_rows, row_group):
                    writer.write(prepare(batch.slice(offset, row_group)))
            writer.close()
            return writer

        def write_group(first_part: int, ranges: Sequence[tuple[int, int]]) -> list[PartWriter]:
            # Tables live in the main schema (not TEMP), so every cursor sees them.
            with self.con.cursor() as cursor:

                def batches() -> Iterator[pa.RecordBatch]:
                    for lo, hi in ranges:
                        if lo == hi:  # the one range of an empty corpus
                            continue
                        for batch in produce(cursor, lo, hi):
                            bar.update(batch.num_rows)
                            yield batch

                pieces = cut_at_parts(batches(), rows_per_part, first_part * rows_per_part)
                return write_behind(pieces, write_part, part_writers)

        with (
            tqdm(unit="rows", desc=f"write {what}", mininterval=5, leave=False) as bar,
            ThreadPoolExecutor(max_workers=max(1, min(concurrent, len(groups)))) as pool,
        ):
            writers = [w for group in pool.map(lambda g: write_group(*g), groups) for w in group]
        if not writers:  # an empty table still gets one (empty) part, so globs match
            writers = [write_part(0, [])]
        written = WrittenTable.of(writers)
        log.info(
            "merge: wrote %d %s rows in %d parts from %d pid ranges (%.1f s)",
            written.rows,
            what,
            written.parts,
            sum(len(ranges) for _, ranges in groups),
            time.perf_counter() - started,
        )
        return written

    def write_citations(self, directory: Path, rows_per_part: int) -> WrittenTable:
        """Write the citations table and count citations per paper, by citing pid range.

        Each range's edge rows come unsorted from its file (``_build_edges``); numpy
        sorts them as one uint64 key per (citing, cited) pair (x86-simd-sort: 25M keys in
        0.6 s, against 1.9 s for DuckDB's sort on two threads), drops repeats and
        self-citations, counts what is left, and the ids are looked up in ``self.ids``.
        """
        distinct = self_citations = 0

        def citations_in(cursor: Any, lo: int, hi: int) -> Iterator[pa.RecordBatch]:
            nonlocal distinct, self_citations
            keys = self.range_keys(lo)
            first = np.ones(len(keys), dtype=bool)
            np.not_equal(keys[1:], keys[:-1], out=first[1:])
            keys = keys[first]
            del first
            citing = (keys >> np.uint64(32)).astype(np.int32) + np.int32(lo)
            cited = (keys & np.uint64(0xFFFFFFFF)).astype(np.int32)
            del keys
            distinct += len(citing)
            cites_other = citing != cited
            self_citations += len(citing) - int(np.count_nonzero(cites_other))
            citing, cited = citing[cites_other], cited[cites_other]
            self.n_references[lo:hi] += np.bincount(citing - lo, minlength=hi - lo).astype(np.int32)
            # np.add.at took 6 s for 25M pids; unique pids can be added to directly.
            cited_pids, times = np.unique(cited, return_counts=True)
            self.n_cited_by[cited_pids] += times.astype(np.int32)
            # One batch per range: the part writers look up and encode this range's
            # parts while the next range is sorted here (batches of a row group each
            # left the threads taking turns: 10 s instead of 6).
            yield pa.RecordBatch.from_arrays(
                [pa.array(citing), pa.array(cited)], names=["citing", "cited"]
            )

        def to_ids(pairs: pa.RecordBatch) -> pa.RecordBatch:
            return pa.RecordBatch.from_arrays(
                [self.ids.take(pairs.column("citing")), self.ids.take(pairs.column("cited"))],
                schema=CITATIONS_SCHEMA,
            )

        written = self.write(
            citations_in,
            [(0, self.citing_ranges)],
            directory,
            CITATIONS_SCHEMA,
            rows_per_part,
            CITATIONS_ROW_GROUP,
            "citations",
            prepare=to_ids,
            # Two encoders already outpace the one sorting thread (2M papers: 3.9 s for
            # the step against 4.6-5.0 with one), and each holds a few row groups of id
            # strings (~30 MB per million rows), so more threads would add memory only.
            part_writers=min(self.threads, 2),
        )
        self.counts["citation_edges_distinct"] = distinct + self.dangling + self.dangling_self
        self.counts["self_citations"] = self_citations + self.dangling_self
        self.n_citations = written.rows
        return written

    def staged_papers_bytes(self) -> int:
        """Uncompressed bytes of the staged columns the papers table is written from."""
        columns = {"paper_id", "title", "abstract", "year", "fields.list.element"}
        total = 0
        for shard in self.shards:
            for kind in ("papers", "abstracts"):
                for path in shard.parts(kind):
                    metadata = pq.read_metadata(path)
                    for group in range(metadata.num_row_groups):
                        row_group = metadata.row_group(group)
                        total += sum(
                            row_group.column(i).total_uncompressed_size
                            for i in range(row_group.num_columns)
                            if row_group.column(i).path_in_schema in columns
                        )
        return total

    def write_papers(self, directory: Path, rows_per_part: int) -> WrittenTable:
        """Write the papers table, one group of pid ranges per part (row = pid).

        Needs the counts ``write_citations`` fills.
        """
        table_bytes = self.staged_papers_bytes()
        n_parts = max(1, math.ceil(self.n_papers / rows_per_part))
        # A writer holds up to about six row groups outside DuckDB (DuckDB's result and
        # the queued batch, the rows being cut, the combined row group and the encoder's
        # pages and buffers), and they come out of DuckDB's budget. Parts are written
        # side by side only while DuckDB keeps at least half of its budget: at 5M papers
        # under a 2 GB limit two writers peaked at 2.4 GB.
        writer_bytes = 6 * PAPERS_ROW_GROUP * table_bytes // max(1, self.n_papers)
        concurrent = min(self.threads, n_parts)
        while concurrent > 1 and concurrent * writer_bytes > self.memory_bytes // 2:
            concurrent -= 1
        budget = max(cli.DUCKDB_MIN_MEMORY, self.memory_bytes - concurrent * writer_bytes)
        ranges = pid_ranges(self.n_papers, table_bytes, budget // concurrent)
        if len(ranges) > MAX_RANGES:  # before the writers start: with all of the budget
            self.partition_papers(ranges[0][1] - ranges[0][0], len(ranges))
        self.limit_duckdb(budget)

        def papers_in(cursor: Any, lo: int, hi: int) -> Iterator[pa.RecordBatch]:
            if self.papers_by_range is not None:
                batches = self.range_papers(lo, hi)
            else:
                sql, params = self.papers_query(lo, hi)
                batches = cursor.sql(sql, params=params).to_arrow_reader(PAPERS_READ_BATCH)
            start = lo
            for batch in batches:
                # One row per pid, in pid order: the counts of this batch are a slice.
                end = start + batch.num_rows
                yield pa.RecordBatch.from_arrays(
                    [
                        *batch.columns,
                        pa.array(self.n_cited_by[start:end]),
                        pa.array(self.n_references[start:end]),
                    ],
                    schema=PAPERS_SCHEMA,
                )
                start = end

        written = self.write(
            papers_in,
            split_at_parts(ranges, rows_per_part),
            directory,
            PAPERS_SCHEMA,
            rows_per_part,
            PAPERS_ROW_GROUP,
            "papers",
            concurrent=concurrent,
        )
        if written.rows != self.n_papers:
            raise RuntimeError(
                f"wrote {written.rows} papers rows for {self.n_papers} numbered papers"
            )
        return written

    def close(self) -> None:
        self.con.close()


# Share of DuckDB's memory that the rows of one written pid range may take: its sort
# needs about as much again, and the join tables sit beside it.
RANGE_MEMORY_SHARE = 0.25
# Every papers range read from the staging scans all the staged papers (skipping the
# text outside the range). Past this many ranges the papers are first written out once,
# one Arrow file per range, instead: at 5M papers 15 rescans cost ~8 s more than sorting
# the same ranges alone, against 17-19 s for one partitioning pass (this one: 16.6 s for
# 65 ranges; DuckDB's partitioned COPY: 19 s), and both costs grow with the input.
MAX_RANGES = 32


def pid_ranges(n_papers: int, table_bytes: int, memory_bytes: int) -> list[tuple[int, int]]:
    """Split pids ``[0, n_papers)`` into equal ranges small enough to sort in memory.

    Sorting the whole papers table at once spilled most of it to disk from 2M papers on
    (2M papers: 14 CPU-s and 1.9 GB RSS, against 10 CPU-s and 1.1 GB in five ranges).
    The ranges are as small as the budget needs, however many that makes, so what one
    range holds does not grow with the input.
    """
    wanted = max(1, math.ceil(table_bytes / max(1, int(memory_bytes * RANGE_MEMORY_SHARE))))
    step = max(1, math.ceil(n_papers / wanted))
    return [(lo, min(lo + step, n_papers)) for lo in range(0, n_papers, step)] or [(0, 0)]


def range_index(paper_ids: pa.Array, firsts: pa.Array) -> np.ndarray:
    """For each paper_id, the index of the last of the sorted ``firsts`` not above it.

    A vectorised binary search: one Arrow comparison per halving. Arrow, like DuckDB's
    ``ORDER BY`` that numbered the papers, compares strings byte by byte.
    """
    low = np.zeros(len(paper_ids), dtype=np.int64)
    high = np.full(len(paper_ids), len(firsts), dtype=np.int64)
    while (open_ := low < high).any():
        middle = (low + high) // 2
        above = pc.greater_equal(
            paper_ids, firsts.take(pa.array(np.minimum(middle, len(firsts) - 1)))
        )
        above = above.to_numpy(zero_copy_only=False) & open_
        low = np.where(above, middle + 1, low)
        high = np.where(above | ~open_, high, middle)
    return low - 1


def runs_by_range(range_of: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int, int]]]:
    """The stable order that groups rows by range, and ``(range, start, end)`` of each
    range's run of rows in that order."""
    if not len(range_of):
        return np.empty(0, dtype=np.intp), []
    # numpy's stable sort is a radix sort for 16-bit keys: 2-4x faster than on int32,
    # and _build_edges sorts every batch of a million edges this way.
    keys = range_of.astype(np.uint16) if range_of.max() < 2**16 else range_of
    order = np.argsort(keys, kind="stable")
    counts = np.bincount(range_of)
    ends = np.cumsum(counts)
    runs = [
        (k, end - n, end)
        for k, (n, end) in enumerate(zip(counts.tolist(), ends.tolist(), strict=True))
        if n
    ]
    return order, runs


def split_at_parts(
    ranges: Sequence[tuple[int, int]], rows_per_part: int
) -> list[tuple[int, list[tuple[int, int]]]]:
    """Group pid ranges by the part their rows fall in (one row per pid, as in papers).

    A range that crosses a part boundary is cut there, so every part can be written by
    its own writer: ``[(first part, ranges)]`` in part order.
    """
    groups: dict[int, list[tuple[int, int]]] = {}
    for lo, hi in ranges:
        while True:
            part = lo // rows_per_part
            cut = min(hi, (part + 1) * rows_per_part)
            groups.setdefault(part, []).append((lo, cut))
            if cut >= hi:
                break
            lo = cut
    return sorted(groups.items())


def cut_at_parts(
    batches: Iterable[pa.RecordBatch], rows_per_part: int, first_row: int = 0
) -> Iterator[tuple[int, pa.RecordBatch]]:
    """(part number, slice) for the rows of ``batches``, the first of them being row
    ``first_row`` of the table: each batch is sliced where a part ends."""
    row = first_row
    for batch in batches:
        start = 0
        while start < batch.num_rows:
            part = row // rows_per_part
            size = min(batch.num_rows - start, (part + 1) * rows_per_part - row)
            yield part, batch.slice(start, size)
            start += size
            row += size


def write_behind(
    pieces: Iterable[tuple[int, pa.RecordBatch]],
    write_part: Callable[[int, Iterable[pa.RecordBatch]], T],
    workers: int = 1,
) -> list[T]:
    """Call ``write_part(part, its batches)`` on other threads, one call per part, while
    the next pieces are produced; return the results in part order.

    ``pieces`` is ``(part number, batch)`` with part numbers rising, as ``cut_at_parts``
    gives. Up to ``workers`` parts are written at once: every part is a file of its own,
    so they can be encoded side by side. DuckDB (join, sort), Arrow and the parquet
    encoder (zstd) release the GIL, so on two cores they overlap. At most ``workers + 2``
    batches are held: one per writer, one queued for the part being produced and the one
    in the producer's hand. Whatever ``write_part`` leaves unread is drained, so the
    producer never blocks on a finished or failed writer; after a failure the producer
    stops, and the parts already started are finished.
    """
    failed = threading.Event()

    def consume(part: int, pending: queue.Queue[pa.RecordBatch | None]) -> T:
        def batches() -> Iterator[pa.RecordBatch]:
            while (batch := pending.get()) is not None:
                yield batch

        received = batches()
        try:
            return write_part(part, received)
        except BaseException:  # re-raised below, in the caller's thread
            failed.set()
            raise
        finally:
            for _ in received:
                pass

    futures: list[Future[T]] = []
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        pending: queue.Queue[pa.RecordBatch | None] | None = None
        current = None
        try:
            for part, batch in pieces:
                if failed.is_set():
                    break
                if part != current:
                    if current is not None and part < current:
                        raise ValueError(f"part {part} comes after part {current}")
                    if pending is not None:
                        pending.put(None)
                    pending, current = queue.Queue(maxsize=1), part
                    futures.append(pool.submit(consume, part, pending))
                pending.put(batch)
        finally:
            if pending is not None:
                pending.put(None)
        return [future.result() for future in futures]


def _sum(reports: Iterable[dict[str, Any]], key: str) -> int:
    return sum(int(r.get(key, 0)) for r in reports)


def merge_staging(
    staging: Sequence[str | os.PathLike],
    output_dir: str | os.PathLike,
    *,
    on_duplicate: str = "error",
    rows_per_part: int = 1_000_000,
    memory_limit: str = "2GB",
    threads: int = 2,
    temp_dir: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """Merge staging directories into ``output_dir`` (atomically); return the report."""
    if on_duplicate not in ("error", "keep_first"):
        raise ValueError("on_duplicate must be 'error' or 'keep_first'")
    if rows_per_part < 1:
        raise ValueError("rows_per_part must be positive")
    import duckdb

    shards = load_staging(staging)
    final = Path(output_dir)
    final.parent.mkdir(parents=True, exist_ok=True)
    spill = Path(
        tempfile.mkdtemp(prefix=".ingest-duckdb-", dir=temp_dir if temp_dir else final.parent)
    )
    started = time.perf_counter()
    merger = Merger(
        shards,
        on_duplicate=on_duplicate,
        memory_limit=memory_limit,
        threads=threads,
        temp_dir=spill,
    )
    try:
        with atomic_path(final) as tmp:
            tmp.mkdir()
            merger.run()
            # One table at a time: run side by side, the two sorts shared DuckDB's memory,
            # spilled more and were slower (2M papers: 69 s vs 55 s, higher peak).
            citations = merger.write_citations(tmp / "citations", rows_per_part)
            papers = merger.write_papers(tmp / "papers", rows_per_part)
            report = build_report(shards, merger, papers, citations, on_duplicate, rows_per_part)
            (tmp / REPORT_NAME).write_text(
                json.dumps(report, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
            )
    except duckdb.OutOfMemoryException as error:
        raise ResourceError(out_of_memory_message(memory_limit, merger.n_papers)) from error
    finally:
        merger.close()
        shutil.rmtree(spill, ignore_errors=True)
    totals = report["totals"]
    log.info(
        "merge: %d papers, %d citations (%d dangling, %d self, %d duplicate papers) in %.1f s",
        totals["papers_written"],
        totals["citation_edges_written"],
        totals["dangling_edges"],
        totals["self_citations"],
        totals["duplicate_papers"],
        time.perf_counter() - started,
    )
    return report


# What merge holds whatever its limit, measured on the synthetic corpus: at 2M and 5M
# papers under --memory-limit 200MB it peaked at 580 and 764 MB, DuckDB spilling the
# rest; 10M papers under 1GB peaked at 1.10 GB. What still grows with the corpus is
# about this much per paper, an empirical figure: the lookups beside DuckDB (paper_id
# and two counts, ~23 bytes) and DuckDB's table of paper_ids while the edges are
# resolved (~23 bytes; dropped once the lookups are loaded). While the staged tables
# were read as a UNION ALL of one scan per shard, the joins that resolve the citations
# could not spill and took ~130 bytes per paper.
MERGE_FIXED_BYTES = 600 * 10**6
MERGE_BYTES_PER_PAPER = 46


def merge_memory_bytes(n_papers: int) -> int:
    """About what merge holds for ``n_papers`` papers, whatever its limit."""
    return MERGE_FIXED_BYTES + MERGE_BYTES_PER_PAPER * n_papers


def suggested_memory_limit(memory_limit: str, n_papers: int) -> float:
    """A limit in GB, in steps of 0.5, that covers ``n_papers`` and exceeds ``memory_limit``."""
    needed = math.ceil(merge_memory_bytes(n_papers) / 0.5e9) * 0.5
    return max(needed, memory_bytes(memory_limit) / 1e9 + 0.5)


def out_of_memory_message(memory_limit: str, n_papers: int) -> str:
    """Why merge ran out of memory, and the ``--memory-limit`` to try instead."""
    message = f"merge ran out of memory under --memory-limit {memory_limit}"
    if not n_papers:
        return f"{message}; raise it (ingest.memory_limit in the config)"
    suggested = suggested_memory_limit(memory_limit, n_papers)
    return (
        f"{message} with {n_papers} papers (merge holds about "
        f"{MERGE_FIXED_BYTES // 10**6} MB + {MERGE_BYTES_PER_PAPER} bytes per paper whatever "
        f"the limit); raise --memory-limit (ingest.memory_limit in the config) to about "
        f"{suggested:g}GB"
    )


def build_report(
    shards: list[StagedShard],
    merger: Merger,
    papers: WrittenTable,
    citations: WrittenTable,
    on_duplicate: str,
    rows_per_part: int,
) -> dict[str, Any]:
    """The ``ingest_report.json`` content: inputs, per-shard reports, totals, examples."""
    reports = [s.report for s in shards]
    by_kind = {
        kind: [r for r in reports if r["kind"] == kind]
        for kind in ("papers", "abstracts", "citations")
    }
    skipped: dict[str, int] = {}
    for r in reports:
        for reason, entry in sorted(r["skipped"].items()):
            skipped[reason] = skipped.get(reason, 0) + entry["count"]
    counts = merger.counts
    totals = {
        "records_read": _sum(reports, "records_read"),
        "blank_lines": _sum(reports, "blank_lines"),
        "bad_records": _sum(reports, "bad_records"),
        "records_skipped": sum(skipped.values()),
        "skipped": skipped,
        "papers_read": _sum(by_kind["papers"], "records_written"),
        "duplicate_papers": counts["duplicate_papers"],
        "duplicate_paper_ids": counts["duplicate_papers_ids"],
        "papers_written": papers.rows,
        "citation_edges_read": _sum(reports, "edges_written"),
        "citation_edges_distinct": counts["citation_edges_distinct"],
        "self_citations": counts["self_citations"],
        "dangling_edges": counts["dangling_edges"],
        "citation_edges_written": citations.rows,
        # Counted on the written table, so they hold after duplicates and abstracts.
        "missing_title": papers.null_counts["title"],
        "missing_abstract": papers.null_counts["abstract"],
        "missing_year": papers.null_counts["year"],
    }
    if by_kind["abstracts"]:
        totals.update(
            abstracts_read=_sum(by_kind["abstracts"], "records_written"),
            duplicate_abstracts=counts["duplicate_abstracts"],
            abstract_for_unknown_paper=counts["abstract_for_unknown_paper"],
        )
    return {
        "formats": sorted({r["format"] for r in reports}),
        "inputs": [
            {"path": r["input"], "bytes": r["input_bytes"], "format": r["format"]} for r in reports
        ],
        "shards": reports,
        "on_duplicate": on_duplicate,
        "rows_per_part": rows_per_part,
        "parts": {"papers": papers.parts, "citations": citations.parts},
        "totals": totals,
        "examples": merger.examples,
    }


# --------------------------------------------------------------------------------------
# CLI


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m citeval.ingest",
        description="Ingest S2ORC/S2AG shards: parse each into staging, then merge.",
    )
    sub = parser.add_subparsers(dest="step", required=True)
    parse = sub.add_parser("parse", help="stage one input file as parquet parts")
    parse.add_argument("--format", required=True, choices=FORMATS)
    parse.add_argument("--input", required=True, help="JSONL, JSONL.gz or parquet file")
    parse.add_argument("--output-dir", required=True, help="staging directory of this shard")
    parse.add_argument(
        "--max-bad-fraction",
        type=float,
        default=0.0,
        help="fraction of bad records skipped (and counted) before the file fails; 0 = none",
    )
    parse.add_argument(
        "--rows-per-part", type=positive_int, default=STAGING_ROWS_PER_PART, help=argparse.SUPPRESS
    )
    merge = sub.add_parser("merge", help="merge staging directories into corpus tables")
    merge.add_argument(
        "--staging", nargs="+", required=True, help="staging directories, in input order"
    )
    merge.add_argument("--output-dir", required=True, help="corpus directory to write")
    merge.add_argument("--on-duplicate", choices=["error", "keep_first"], default="error")
    merge.add_argument("--rows-per-part", type=positive_int, default=1_000_000)
    merge.add_argument(
        "--memory-limit",
        default="2GB",
        type=memory_size,
        help="memory budget of the merge (e.g. 2GB); DuckDB gets 3/4 of it and spills beyond",
    )
    merge.add_argument(
        "--threads",
        type=positive_int,
        default=2,
        help=(
            "DuckDB threads, and at most how many papers parts (and up to 2 citations "
            "parts) are written at once (default 2)"
        ),
    )
    merge.add_argument(
        "--temp-dir", default=None, help="where DuckDB spills (default: next to the output)"
    )
    return parser


def command(args: argparse.Namespace) -> None:
    if args.step == "parse":
        parse_shard(
            args.input,
            args.format,
            args.output_dir,
            max_bad_fraction=args.max_bad_fraction,
            rows_per_part=args.rows_per_part,
        )
    else:
        merge_staging(
            args.staging,
            args.output_dir,
            on_duplicate=args.on_duplicate,
            rows_per_part=args.rows_per_part,
            memory_limit=args.memory_limit,
            threads=args.threads,
            temp_dir=args.temp_dir,
        )


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(build_parser, command, argv)


if __name__ == "__main__":
    sys.exit(main())
