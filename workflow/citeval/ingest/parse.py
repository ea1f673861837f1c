"""``parse``: stage one input file (JSONL, JSONL.gz or parquet) into a staging directory.

Decisions on messy records:

- *Bad records*: a malformed JSON line, a line that is not valid UTF-8
  (``invalid_utf8``), a line that is not a JSON object, a missing or null id, an empty
  ``paper_id``, or a value of the wrong type. With ``max_bad_fraction`` 0 the first one
  raises :class:`InputDataError` naming file, line and field. Otherwise each is skipped
  and counted by reason with the first few lines as examples, and the file fails only
  when more than that fraction of its records are bad.
- A missing or null ``title``/``abstract``/``year`` is not bad (S2ORC lacks half its
  abstracts): it is kept as null and counted (``missing_*``); the prefilter drops such
  papers later with its own counts. An empty title is kept as is. A null
  ``mag_field_of_study`` becomes ``[]``.
- Blank lines are skipped and counted (``blank_lines``).
- S2AG: an abstract that is null is counted and dropped; a citation whose
  ``citedcorpusid`` is null is dropped and counted as ``null_cited``.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from citeval.errors import InputDataError
from citeval.ingest.formats import FORMAT_KIND, FORMATS
from citeval.ingest.parse_json import parse_json
from citeval.ingest.parse_parquet import parse_parquet
from citeval.ingest.report import ShardReport
from citeval.ingest.staging import SHARD_REPORT, STAGING_ROWS_PER_PART, StagingWriters
from citeval.io import atomic_path

log = logging.getLogger(__name__)


def parse_shard(
    input_path: str | os.PathLike,
    fmt: str,
    output_dir: str | os.PathLike,
    *,
    max_bad_fraction: float,
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
                parse_parquet(path, writers)
            else:
                parse_json(report.input, fmt, writers)
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
