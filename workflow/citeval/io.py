"""Atomic, deterministic file output shared by every stage.

Every output is written to a temporary sibling and renamed into place, so an interrupted
job never leaves a truncated file that a later run would mistake for a finished one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import pyarrow as pa
import pyarrow.parquet as pq

from citeval.errors import CitevalError

# Fixed writer settings so that the same table always gives the same bytes.
PARQUET_OPTIONS: dict[str, Any] = {
    "compression": "zstd",
    "compression_level": 3,
    "use_dictionary": True,
    "write_statistics": True,
}


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` on success.

    Works for files and for directories (the caller creates what it needs at the
    temporary path): a directory replaces the directory of an earlier run, but a file
    never replaces a directory (a mistyped ``--output`` must not delete a folder). On an
    exception the temporary is removed and ``path`` is untouched.
    """
    final = Path(path)
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise CitevalError(
            f"cannot create the folder of the output {final}: {error.strerror} ({error.filename})"
        ) from None
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent))
    target = tmp / final.name
    try:
        yield target
        if final.is_dir() and not final.is_symlink():
            if not target.is_dir():
                raise CitevalError(
                    f"the output {final} is a file, but a folder is there: remove the folder "
                    "or name another path"
                )
            shutil.rmtree(final)
        os.replace(target, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_parquet(table: pa.Table, path: str | os.PathLike, **options: Any) -> None:
    """Write ``table`` atomically with the package's fixed parquet settings."""
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, **{**PARQUET_OPTIONS, **options})


@contextlib.contextmanager
def atomic_text(path: str | os.PathLike) -> Iterator[TextIO]:
    """Yield a text handle on a temporary renamed onto ``path`` on success (streaming writers).

    The text is UTF-8 with ``"\\n"`` line ends whatever the locale or platform.
    """
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as handle:
        yield handle


def write_text(text: str, path: str | os.PathLike) -> None:
    """Write ``text`` atomically as UTF-8 with ``"\\n"`` line ends."""
    with atomic_text(path) as handle:
        handle.write(text)


def write_json(obj: Any, path: str | os.PathLike) -> None:
    """Write ``obj`` as stable, sorted, indented JSON (UTF-8), atomically."""
    write_text(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n", path)


def file_fingerprint(path: str | os.PathLike, *, chunk_size: int = 1 << 20) -> str:
    """SHA-256 of a file's bytes (or of a directory's files, in sorted order)."""
    digest = hashlib.sha256()
    root = Path(path)
    files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
    for file in files:
        if root.is_dir():
            digest.update(str(file.relative_to(root)).encode())
        with open(file, "rb") as handle:
            while block := handle.read(chunk_size):
                digest.update(block)
    return digest.hexdigest()


def write_parquet_stream(
    batches: pa.RecordBatchReader,
    path: str | os.PathLike,
    *,
    row_group_size: int = 1 << 20,
) -> int:
    """Stream record batches into one parquet file atomically; return the row count.

    Memory stays at one batch whatever the table size. Row groups have a fixed size so
    the bytes do not depend on how the producer happened to chunk its batches.
    """
    rows = 0
    with (
        atomic_path(path) as tmp,
        pq.ParquetWriter(tmp, batches.schema, **PARQUET_OPTIONS) as writer,
    ):
        pending: list[pa.RecordBatch] = []
        pending_rows = 0
        for batch in batches:
            pending.append(batch)
            pending_rows += batch.num_rows
            while pending_rows >= row_group_size:
                table = pa.Table.from_batches(pending, schema=batches.schema)
                writer.write_table(table.slice(0, row_group_size), row_group_size)
                rest = table.slice(row_group_size)
                pending = rest.to_batches()
                pending_rows = rest.num_rows
                rows += row_group_size
        if pending_rows or rows == 0:
            writer.write_table(
                pa.Table.from_batches(pending, schema=batches.schema), row_group_size
            )
            rows += pending_rows
    return rows


def parquet_glob(directory: str | os.PathLike) -> str:
    """The glob DuckDB and Polars read for a directory of parquet parts."""
    return str(Path(directory) / "*.parquet")
