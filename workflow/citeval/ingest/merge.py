"""``merge``: turn the staging directories of every input file into the ``corpus/`` tables.

DuckDB works out of core over the staged parquet, within the ``--memory-limit`` budget
(``citeval.memory``, ``citeval.ingest.footprint``), in one session
(``citeval.ingest.session``):

- a repeated ``paper_id`` fails naming both ``file:line`` locations, or with
  ``keep_first`` the first record by (shard order, line) is kept and the rest are counted
  (``duplicate_papers``). The citation lists of every copy still contribute edges: they
  describe the same paper. S2AG abstracts with a repeated corpus id follow the same rule.
- S2AG abstracts are attached by corpus id; one whose paper is not in the corpus is
  counted (``abstract_for_unknown_paper``).
- Each paper gets a dense integer ``pid``, its rank by ``paper_id``. Edges (outbound,
  inbound and S2AG citations) are resolved to pid pairs, deduplicated, and dropped and
  counted when they cite themselves (``self_citations``) or have an end outside the
  corpus (``dangling_edges``) (``citeval.ingest.edges``).
- Both tables are written sorted, range of pids by range of pids, in fixed-size row
  groups and parts, so the same staging gives byte-identical files
  (``citeval.ingest.papers``, ``citeval.ingest.edges``). The output directory appears
  atomically, with ``ingest_report.json``.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from citeval.errors import ConfigError, ResourceError
from citeval.ingest.edges import resolve_edges, write_citations
from citeval.ingest.footprint import out_of_memory_message
from citeval.ingest.papers import write_papers
from citeval.ingest.report import build_report
from citeval.ingest.session import Merger
from citeval.ingest.staging import load_staging
from citeval.io import atomic_path

log = logging.getLogger(__name__)

REPORT_NAME = "ingest_report.json"


def merge_staging(
    staging: Sequence[str | os.PathLike],
    output_dir: str | os.PathLike,
    *,
    on_duplicate: str,
    rows_per_part: int,
    memory_limit: str,
    threads: int = 2,
    temp_dir: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """Merge staging directories into ``output_dir`` (atomically); return the report."""
    if on_duplicate not in ("error", "keep_first"):
        raise ValueError("on_duplicate must be 'error' or 'keep_first'")
    if rows_per_part < 1:
        raise ConfigError(f"ingest.rows_per_part must be at least 1, got {rows_per_part}")
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
            merger.number_papers()
            # The lookups load after the edges are resolved: the joins with ids need
            # DuckDB's whole budget.
            edges = resolve_edges(merger)
            merger.load_lookups()
            # One table at a time: side by side, the two sorts would share DuckDB's memory.
            citations = write_citations(merger, edges, tmp / "citations", rows_per_part)
            papers = write_papers(merger, tmp / "papers", rows_per_part)
            report = build_report(
                [s.report for s in shards],
                merger.counts,
                merger.examples,
                papers,
                citations,
                on_duplicate,
                rows_per_part,
            )
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
