"""What ``extract`` counts for one input file, and the sum over files that ``merge`` reports.

Malformed records (lines) and malformed cite spans are both skipped and counted by reason,
with the first few as examples; with ``max_bad_fraction`` 0 the first one raises
:class:`InputDataError` naming file, line and field instead. Only malformed records count
towards the fraction that fails a file (a span is part of a line, not a line).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from citeval.errors import InputDataError
from citeval.skips import check_bad_fraction, count_skip

MALFORMED_SPAN = "malformed_span"
NO_LINKED_REFERENCE = "no_linked_reference"

# Counts that add up over files.
SUMMED = (
    "input_bytes",
    "lines_read",
    "blank_lines",
    "records_read",
    "bad_records",
    "papers_read",
    "paragraphs",
    "markers_found",
    "markers_kept",
    "contexts_written",
)


@dataclass
class ExtractReport:
    """Counts for one input file of ``extract``; serialised as its report JSON."""

    input: str
    format: str
    input_bytes: int
    settings: dict[str, Any]
    lines_read: int = 0
    blank_lines: int = 0
    records_read: int = 0
    bad_records: int = 0
    papers_read: int = 0
    paragraphs: int = 0
    markers_found: int = 0
    markers_kept: int = 0
    contexts_written: int = 0
    # reason -> markers dropped (no_linked_reference)
    markers_dropped: dict[str, int] = field(default_factory=dict)
    # reason -> {"count": n, "examples": [{"line", "field", "message"}, ...]}
    skipped: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def max_bad_fraction(self) -> float:
        return float(self.settings["max_bad_fraction"])

    def skip(self, line: int, reason: str, field_name: str | None, message: str) -> None:
        """Count a malformed record or span; raise at once when none are allowed."""
        if self.max_bad_fraction == 0:
            raise InputDataError(
                f"malformed {'cite span' if reason == MALFORMED_SPAN else 'record'} "
                f"({reason}): {message} (set ingest.max_bad_fraction above 0 to skip and "
                "count malformed records)",
                path=self.input,
                line=line,
                field=field_name,
            )
        count_skip(self.skipped, reason, line, field_name, message)
        if reason != MALFORMED_SPAN:
            self.bad_records += 1

    def drop(self, reason: str) -> None:
        self.markers_dropped[reason] = self.markers_dropped.get(reason, 0) + 1

    def check_bad_fraction(self) -> None:
        """Fail the file when its malformed records exceed the allowed fraction."""
        check_bad_fraction(
            path=self.input,
            bad=self.bad_records,
            read=self.records_read,
            allowed=self.max_bad_fraction,
            skipped=self.skipped,
            adjective="malformed",
            excluded=(MALFORMED_SPAN,),
        )

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def sum_reports(reports: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The counts of several extract reports added up (skips and drops by reason)."""
    reports = list(reports)
    totals: dict[str, Any] = {key: sum(int(r.get(key, 0)) for r in reports) for key in SUMMED}
    dropped: dict[str, int] = {}
    skipped: dict[str, int] = {}
    for r in reports:
        for reason, count in r.get("markers_dropped", {}).items():
            dropped[reason] = dropped.get(reason, 0) + int(count)
        for reason, entry in r.get("skipped", {}).items():
            skipped[reason] = skipped.get(reason, 0) + int(entry["count"])
    totals["markers_dropped"] = dict(sorted(dropped.items()))
    totals["skipped"] = dict(sorted(skipped.items()))
    return totals
