"""Turn raw JSON lists of plain strings into an Arrow list array without Python strings.

S2ORC's citation lists are most of every record (a paper cites and is cited by tens of
ids). Decoding them into Python ``str`` objects, converting those to Arrow and freeing
them would be a large share of parse's work. msgspec can instead hand each list over as its raw
JSON text (``msgspec.Raw``), still checking that it is well-formed JSON;
:func:`plain_string_lists` then converts a whole chunk's lists at once in Arrow and numpy.

That is exact only for *plain* lists: ``null`` or ``[...]`` holding nothing but strings
without a backslash, bracket, comma or whitespace, which describes every id in S2ORC and
S2AG. Anything else (an escape, a number, a nested list, invalid UTF-8) makes the function
return None, and the caller decodes that chunk line by line, so errors and skips are
reported as on any other path.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# One plain string, then the whole value: null, absent (empty) or a list of plain strings.
_PLAIN_STRING = r'"[^"\\\[\],\s]*"'
PLAIN_LIST_PATTERN = rf"^(?:null|\[\s*(?:{_PLAIN_STRING}\s*(?:,\s*{_PLAIN_STRING}\s*)*)?\])?$"
# Everything in a plain list that is not part of a string's content.
_SYNTAX_BYTES = b'"[], \t\n\r'
_INT32_MAX = 2**31 - 1  # Arrow string offsets
_QUOTE = ord('"')
_N = ord("n")


def _offsets(lengths: np.ndarray) -> np.ndarray:
    offsets = np.zeros(len(lengths) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def plain_string_lists(raws: Sequence[bytes | memoryview]) -> pa.ListArray | None:
    """The lists as ``list<string>``, null where the value is ``null`` or empty (absent).

    ``raws`` are syntactically valid JSON values (as ``msgspec.Raw`` guarantees), the
    empty bytes standing for an absent field. Returns None unless every value is a plain
    list (see the module docstring), or when their text passes 2 GiB (int32 offsets).
    """
    n = len(raws)
    lengths = np.fromiter(map(len, raws), np.int64, n)
    text = b"".join(raws)
    if b"\\" in text or len(text) > _INT32_MAX:
        return None
    offsets = _offsets(lengths)
    as_strings = pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(text))
    try:
        matches = pc.match_substring_regex(as_strings, PLAIN_LIST_PATTERN)
        if not pc.all(matches, min_count=0).as_py():
            return None
    except pa.ArrowInvalid:  # should RE2 refuse invalid UTF-8 rather than not match it
        return None

    codes = np.frombuffer(text, np.uint8)
    # A plain value starting with "n" is exactly null.
    nulls = lengths == 0
    nonempty = ~nulls
    nulls[nonempty] = codes[offsets[:-1][nonempty]] == _N
    # Without backslashes every quote opens or closes a string, in pairs.
    quotes = np.flatnonzero(codes == _QUOTE)
    opening, closing = quotes[0::2], quotes[1::2]
    string_lengths = closing - opening - 1
    strings_per_value = np.diff(np.searchsorted(opening, offsets))

    if nulls.any():  # "null" would survive the deletion below: leave those values out
        text = b"".join(raw for raw, null in zip(raws, nulls.tolist(), strict=True) if not null)
    content = text.translate(None, _SYNTAX_BYTES)
    values = pa.StringArray.from_buffers(
        len(string_lengths), pa.py_buffer(_offsets(string_lengths)), pa.py_buffer(content)
    )
    try:
        values.validate(full=True)  # UTF-8: the regex does not promise to check it
    except pa.ArrowInvalid:
        return None
    return pa.ListArray.from_arrays(
        pa.array(_offsets(strings_per_value)),
        values,
        mask=pa.array(nulls) if nulls.any() else None,
    )
