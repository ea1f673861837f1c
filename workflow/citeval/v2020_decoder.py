"""The compiled decoder of S2ORC v2020 lines (``_v2020.c``), as Arrow arrays.

Parse's exact path decodes each record into Python objects with msgspec and converts
those to Arrow; the compiled decoder copies the fields straight into Arrow buffers, about
three times faster. It only accepts chunks it is sure of and returns None for any other,
which ingest then decodes the exact way, so the staged rows, errors and counts are the same
whichever path ran (the tests compare the two on valid, mutated and real records).

The extension is built by ``pip install`` where a C compiler is present. Without it, or with
``CITEVAL_PURE_PYTHON=1`` in the environment, :data:`AVAILABLE` is False and ingest uses
msgspec alone.
"""

from __future__ import annotations

import os

import pyarrow as pa

try:
    from citeval import _v2020
except ImportError:  # built optionally: ingest then decodes with msgspec alone
    _v2020 = None

BUILT = _v2020 is not None
AVAILABLE = BUILT and os.environ.get("CITEVAL_PURE_PYTHON", "") in ("", "0")

# The staged papers columns the decoder fills, in STAGE_PAPERS_SCHEMA order.
COLUMN_TYPES = (
    pa.string(),  # paper_id
    pa.string(),  # title
    pa.string(),  # abstract
    pa.int32(),  # year
    pa.list_(pa.string()),  # fields: [] for null or absent
    pa.list_(pa.string()),  # outbound_citations: null for null or absent
    pa.list_(pa.string()),  # inbound_citations
)


def _array(data_type: pa.DataType, n: int, column: tuple) -> pa.Array:
    validity, null_count, *data = column
    validity = None if validity is None else pa.py_buffer(validity)
    data = [pa.py_buffer(b) for b in data]
    if pa.types.is_list(data_type):
        list_offsets, value_offsets, strings = data
        values = pa.Array.from_buffers(
            pa.string(), len(value_offsets) // 4 - 1, [None, value_offsets, strings]
        )
        return pa.Array.from_buffers(
            data_type, n, [validity, list_offsets], null_count, children=[values]
        )
    return pa.Array.from_buffers(data_type, n, [validity, *data], null_count)


def scan_lines(text: bytes | bytearray | memoryview) -> tuple[int, int, bool]:
    """``ingest.scan_lines`` in C: one ``memchr`` pass instead of numpy's three."""
    return _v2020.scan_lines(text)


def decode_columns(text: bytes | memoryview, n_lines: int) -> list[pa.Array] | None:
    """The seven staged columns of ``n_lines`` v2020 lines, or None to decode them exactly.

    ``text`` holds exactly ``n_lines`` lines; the arrays own copies of what they hold, so
    ``text`` may be reused afterwards.
    """
    columns = _v2020.decode(text, n_lines)
    if columns is None:
        return None
    return [
        _array(data_type, n_lines, column)
        for data_type, column in zip(COLUMN_TYPES, columns, strict=True)
    ]
