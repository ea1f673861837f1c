"""Counted skips of malformed input, shared by ingestion and context extraction.

A skip is counted by reason in a ``{reason: {"count": n, "examples": [...]}}`` mapping
that keeps the first :data:`MAX_EXAMPLES` as examples (line, field, message); a file whose
bad records exceed ``max_bad_fraction`` fails, naming the first one.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from citeval.errors import InputDataError

MAX_EXAMPLES = 5

Skipped = dict[str, dict[str, Any]]


def count_skip(
    skipped: Skipped, reason: str, line: int, field_name: str | None, message: str
) -> None:
    """Count one skip under ``reason``, keeping it as an example while there are few."""
    entry = skipped.setdefault(reason, {"count": 0, "examples": []})
    entry["count"] += 1
    if len(entry["examples"]) < MAX_EXAMPLES:
        entry["examples"].append({"line": line, "field": field_name, "message": message})


def check_bad_fraction(
    *,
    path: str,
    bad: int,
    read: int,
    allowed: float,
    skipped: Skipped,
    adjective: str,
    excluded: Collection[str] = (),
) -> None:
    """Fail the file when ``bad`` of ``read`` records exceed the ``allowed`` fraction.

    The error names the first example (by line) of every reason but ``excluded`` (skips
    that are not whole records).
    """
    if not bad:
        return
    fraction = bad / max(read, 1)
    if fraction <= allowed:
        return
    line, reason, _, field_name, message = min(
        (ex["line"], reason, ex["field"] or "", ex["field"], ex["message"])
        for reason, entry in skipped.items()
        if reason not in excluded
        for ex in entry["examples"]
    )
    raise InputDataError(
        f"{bad} of {read} records are {adjective} ({fraction:.2%} > max_bad_fraction "
        f"{allowed}); first at line {line} ({reason}, field {field_name!r}): {message}",
        path=path,
    )
