"""Read an input file as runs of complete lines, decompressing gzip on the way.

Gzip is detected from the magic bytes, not the file name. A truncated or corrupt stream
fails naming the file and the last complete line: silently dropping the tail of a shard
would bias every later count.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from isal import igzip, isal_zlib
from tqdm import tqdm

from citeval.errors import InputDataError

# Decompressed bytes handed to the decoder at once: big enough that per-chunk overhead
# vanishes, small enough that a chunk's Python objects stay a few hundred MB at most.
CHUNK_BYTES = 8 << 20

DECOMPRESSION_ERRORS = (EOFError, OSError, zlib.error, isal_zlib.error)

_WHITESPACE = np.zeros(256, dtype=bool)
_WHITESPACE[list(b"\n\r \t")] = True
_NEWLINE = ord("\n")


@dataclass
class LineChunk:
    """A run of complete lines of one input file."""

    first_line: int  # 1-based
    text: bytes | memoryview
    n_lines: int
    # Some line starts with whitespace, so it may be blank: msgspec's decode_lines would
    # skip it silently and shift the line numbers.
    may_hold_blank_lines: bool

    @property
    def line_numbers(self) -> np.ndarray:
        return np.arange(self.first_line, self.first_line + self.n_lines, dtype=np.int64)

    def lines(self) -> list[bytes]:
        """The chunk's lines, without their newlines."""
        return bytes(self.text).split(b"\n")[: self.n_lines]


def scan_lines(text: bytes | bytearray | memoryview) -> tuple[int, int, bool]:
    """(newlines, offset of the last one or -1, whether a line starts with whitespace)."""
    codes = np.frombuffer(text, dtype=np.uint8)
    newlines = np.flatnonzero(codes == _NEWLINE)
    if not newlines.size:
        return 0, -1, False
    starts_with_space = bool(_WHITESPACE[codes[0]] or _WHITESPACE[codes[newlines[:-1] + 1]].any())
    return int(newlines.size), int(newlines[-1]), starts_with_space


def open_binary(path: Path) -> tuple[Any, Any]:
    """Open ``path`` for reading bytes, decompressing gzip; return (stream, raw file)."""
    raw = open(path, "rb")  # noqa: SIM115 - closed by the caller
    magic = raw.read(2)
    raw.seek(0)
    if magic == b"\x1f\x8b":
        return igzip.IGzipFile(fileobj=raw, mode="rb"), raw
    return raw, raw


def iter_line_chunks(
    path: str | os.PathLike, chunk_bytes: int | None = None
) -> Iterator[LineChunk]:
    """Yield runs of complete lines of ``path``, in order.

    A chunk's text is a view into one reused buffer, valid only until the next iteration:
    a fresh multi-MB buffer per chunk costs more in page faults than the decoding. A
    truncated or corrupt gzip stream raises :class:`InputDataError` naming the last
    complete line, after the lines before it have been yielded.
    """
    chunk_bytes = chunk_bytes or CHUNK_BYTES
    stream, raw = open_binary(Path(path))
    next_line = 1
    buf = bytearray(chunk_bytes)
    filled = 0
    with (
        raw,
        stream,
        tqdm(
            total=os.stat(path).st_size,
            unit="B",
            unit_scale=True,
            desc=f"parse {Path(path).name}",
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
            except DECOMPRESSION_ERRORS as error:
                raise InputDataError(
                    f"truncated or corrupt compressed stream ({type(error).__name__}: {error}); "
                    f"the last complete line read is line {next_line - 1}",
                    path=str(path),
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
