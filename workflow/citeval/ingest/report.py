"""What ingest reports: per input file (``shard.json``) and for the corpus
(``ingest_report.json``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from citeval.errors import InputDataError
from citeval.skips import MAX_EXAMPLES, check_bad_fraction, count_skip

if TYPE_CHECKING:
    from citeval.ingest.parts import PartWriter

# Bumped whenever the staged tables change shape; merge refuses staging of another
# version (2: the citation lists are staged as lists inside papers/).
STAGING_VERSION = 2


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
        count_skip(self.skipped, reason, line, field_name, message)
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
        check_bad_fraction(
            path=self.input,
            bad=self.bad_records,
            read=self.records_read,
            allowed=self.max_bad_fraction,
            skipped=self.skipped,
            adjective="bad",
        )

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _sum(reports: Iterable[dict[str, Any]], key: str) -> int:
    return sum(int(r.get(key, 0)) for r in reports)


def edges_read(reports: Iterable[dict[str, Any]]) -> int:
    """Citation edges the shards staged, repeats and both ends' listings included."""
    return _sum(reports, "edges_written")


def build_report(
    reports: list[dict[str, Any]],
    counts: dict[str, int],
    examples: dict[str, Any],
    papers: PartWriter,
    citations: PartWriter,
    on_duplicate: str,
    rows_per_part: int,
) -> dict[str, Any]:
    """The ``ingest_report.json`` content: inputs, per-shard reports, totals, examples.

    ``counts`` and ``examples`` are what merge counted and kept on the way; ``papers``
    and ``citations`` the closed writers of the two tables.
    """
    by_kind = {
        kind: [r for r in reports if r["kind"] == kind]
        for kind in ("papers", "abstracts", "citations")
    }
    skipped: dict[str, int] = {}
    for r in reports:
        for reason, entry in sorted(r["skipped"].items()):
            skipped[reason] = skipped.get(reason, 0) + entry["count"]
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
        "citation_edges_read": edges_read(reports),
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
        "examples": examples,
    }
