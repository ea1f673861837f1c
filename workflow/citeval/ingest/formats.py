"""The input formats ``parse`` reads: their record types, the parquet columns, and how a
decoding error becomes a reason and a field name.

Fields read per format (every other key is ignored):

- ``s2orc_v2020`` (S2ORC 2020-07-05 metadata): ``paper_id`` (non-empty string, required),
  ``title``, ``abstract`` (string or null), ``year`` (int32 or null),
  ``mag_field_of_study`` (list of strings or null → ``fields``), ``outbound_citations``
  and ``inbound_citations`` (lists of strings or null).
- ``s2ag-papers`` (Semantic Scholar Datasets API ``papers``): ``corpusid`` (required),
  ``title``, ``year``, ``s2fieldsofstudy`` (list of ``{category, source}``) or, when that
  is absent or null, ``fieldsofstudy`` (list of strings, older releases).
- ``s2ag-abstracts``: ``corpusid``, ``abstract``.
- ``s2ag-citations``: ``citingcorpusid`` (required), ``citedcorpusid`` (null or absent
  when the cited work is not in S2).
- ``parquet``: the v2020 fields as columns (``PARQUET_COLUMNS``), checked before any row
  is read.

A numeric string is not a number (``"year": "2019"`` is a wrong type): a quoted year
usually means a mis-exported column, which coercion would hide.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import msgspec
import pyarrow as pa

from citeval.corpus_formats import PARSE_FORMATS, PARSE_TABLE
from citeval.errors import InputDataError

# The formats parse takes, declared with their corpus formats (citeval.corpus_formats),
# and what each stages: papers (with their citation lists), abstracts, or edges.
FORMATS = PARSE_FORMATS
FORMAT_KIND = PARSE_TABLE

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

# --------------------------------------------------------------------------------------
# JSON record types. gc=False: the structs hold no cycles, and untracked objects keep the
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

# What decoding one line may raise: msgspec reports invalid UTF-8 in a string as a
# UnicodeDecodeError rather than as one of its own errors.
DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError)

_PATH_RE = re.compile(r" - at `\$\.?([^`]*)`$")
_MISSING_RE = re.compile(r"^Object missing required field `([^`]+)`")


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
# Parquet input: the v2020 fields as columns.

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
