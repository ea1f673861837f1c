"""Write a table as ``part-NNNNN.parquet`` files of a fixed number of rows."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm


class PartWriter:
    """Write record batches as ``part-NNNNN.parquet`` files of ``rows_per_part`` rows.

    With ``fixed_row_groups`` (the corpus tables), batches are re-cut into row groups of
    exactly ``row_group_size`` rows (the last one of a part or of the table may be shorter)
    and combined into one contiguous chunk before writing, so the bytes depend only on the
    rows, never on how a producer batched them. Without it (staging, which merge reads in
    any batching and which need not be byte-stable) each batch is one row group.
    """

    def __init__(
        self,
        directory: Path,
        schema: pa.Schema,
        *,
        rows_per_part: int,
        row_group_size: int,
        options: dict[str, Any],
        fixed_row_groups: bool = True,
    ) -> None:
        self.directory = directory
        self.fixed_row_groups = fixed_row_groups
        self.schema = schema
        self.rows_per_part = rows_per_part
        self.row_group_size = max(1, min(row_group_size, rows_per_part))
        self.options = options
        self.parts = 0
        self.rows = 0
        self.null_counts: dict[str, int] = dict.fromkeys(schema.names, 0)
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = 0
        self._writer: pq.ParquetWriter | None = None
        self._part_rows = 0
        directory.mkdir(parents=True, exist_ok=True)

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        if batch.schema != self.schema:
            batch = batch.cast(self.schema)
        if not self.fixed_row_groups:
            self._write_direct(batch)
            return
        self._pending.append(batch)
        self._pending_rows += batch.num_rows
        while self._pending_rows >= self._next_size():
            self._write_chunk(self._next_size())

    def _next_size(self) -> int:
        return min(self.row_group_size, self.rows_per_part - self._part_rows)

    def _write_chunk(self, size: int) -> None:
        table = pa.Table.from_batches(self._pending, schema=self.schema)
        chunk = table.slice(0, size).combine_chunks()
        rest = table.slice(size)
        self._pending = rest.to_batches()
        self._pending_rows = rest.num_rows
        if self._writer is None:
            self._writer = pq.ParquetWriter(self._part_path(), self.schema, **self.options)
        self._writer.write_table(chunk, row_group_size=size)
        for name in self.schema.names:
            self.null_counts[name] += chunk.column(name).null_count
        self._part_rows += size
        self.rows += size
        if self._part_rows >= self.rows_per_part:
            self._close_part()

    def _write_direct(self, batch: pa.RecordBatch) -> None:
        if self._writer is None:
            self._writer = pq.ParquetWriter(self._part_path(), self.schema, **self.options)
        self._writer.write_batch(batch)
        self._part_rows += batch.num_rows
        self.rows += batch.num_rows
        if self._part_rows >= self.rows_per_part:
            self._close_part()

    def _close_part(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
            self.parts += 1
            self._part_rows = 0

    def close(self) -> None:
        """Flush the rest; an empty table still gets one (empty) part so globs match."""
        if self._pending_rows:
            self._write_chunk(self._pending_rows)
        self._close_part()
        if self.parts == 0:
            pq.write_table(self.schema.empty_table(), self._part_path(), **self.options)
            self.parts = 1

    def _part_path(self) -> Path:
        return self.directory / f"part-{self.parts:05d}.parquet"


def write_table(
    batches: Iterable[pa.RecordBatch],
    writer: PartWriter,
    what: str,
    prepare: Callable[[pa.RecordBatch], pa.RecordBatch] | None = None,
) -> PartWriter:
    """Write every batch with ``writer`` and close it; return it.

    ``prepare`` turns each batch into the writer's schema one row group's worth of rows
    at a time, so that what it makes (which may be several times larger than its input)
    never exceeds a row group.
    """
    step = writer.row_group_size
    with tqdm(unit="rows", desc=f"write {what}", mininterval=5, leave=False) as bar:
        for batch in batches:
            if prepare is None:
                writer.write(batch)
            else:
                for offset in range(0, batch.num_rows, step):
                    writer.write(prepare(batch.slice(offset, step)))
            bar.update(batch.num_rows)
    writer.close()
    return writer
