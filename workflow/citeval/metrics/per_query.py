"""The metrics stage's file: per-query values and their mean (query id ``all``) as TSV."""

from __future__ import annotations

import os
from collections.abc import Mapping

from citeval.errors import InputDataError
from citeval.io import write_text

PerQuery = dict[str, dict[str, float]]

ALL_QUERIES = "all"
TSV_HEADER = ("query_id", "measure", "value")
VALUE_FORMAT = "%.10f"


def format_per_query_tsv(
    per_query: Mapping[str, Mapping[str, float]], mean: Mapping[str, float]
) -> str:
    """TSV text: header, rows sorted by (query_id, measure), then the ``all`` rows.

    Values are written as ``%.10f``: far below the 1e-6 tolerance of any later
    aggregation, yet short and immune to last-bit differences between platforms.
    """
    if ALL_QUERIES in per_query:
        raise ValueError(f"query id {ALL_QUERIES!r} is reserved for the mean")
    lines = ["\t".join(TSV_HEADER) + "\n"]
    for qid in sorted(per_query):
        for measure in sorted(per_query[qid]):
            lines.append(f"{qid}\t{measure}\t{VALUE_FORMAT % per_query[qid][measure]}\n")
    for measure in sorted(mean):
        lines.append(f"{ALL_QUERIES}\t{measure}\t{VALUE_FORMAT % mean[measure]}\n")
    return "".join(lines)


def write_per_query_tsv(
    per_query: Mapping[str, Mapping[str, float]],
    mean: Mapping[str, float],
    path: str | os.PathLike,
) -> None:
    """Write :func:`format_per_query_tsv` atomically."""
    text = format_per_query_tsv(per_query, mean)
    write_text(text, path)


def read_per_query_tsv(path: str | os.PathLike) -> PerQuery:
    """Read a per-query TSV back into ``{qid: {measure: value}}``; the mean is key ``all``.

    Raises :class:`InputDataError` naming ``file:line`` on a wrong header, a line without
    three fields, a value that is not a number, or a repeated (query_id, measure).
    """
    where = str(path)
    table: PerQuery = {}
    try:
        with open(path, encoding="utf-8") as handle:
            header = handle.readline().rstrip("\n")
            expected = "\t".join(TSV_HEADER)
            if header != expected:
                raise InputDataError(
                    f"expected header {expected!r}, got {header!r}",
                    path=where,
                    line=1,
                )
            for number, line in enumerate(handle, start=2):
                line = line.rstrip("\n")
                if not line:
                    continue
                fields = line.split("\t")
                if len(fields) != len(TSV_HEADER):
                    raise InputDataError(
                        f"expected 3 tab-separated fields, got {len(fields)}",
                        path=where,
                        line=number,
                    )
                qid, measure, text = fields
                try:
                    value = float(text)
                except ValueError:
                    raise InputDataError(
                        f"value is not a number: {text!r}", path=where, line=number, field="value"
                    ) from None
                row = table.setdefault(qid, {})
                if measure in row:
                    raise InputDataError(
                        f"duplicate value for query {qid!r}, measure {measure!r}",
                        path=where,
                        line=number,
                    )
                row[measure] = value
    except OSError as error:
        raise InputDataError(f"cannot read: {error.strerror}", path=where) from error
    return table
