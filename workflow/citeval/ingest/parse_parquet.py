"""Stage a parquet file of S2ORC v2020 columns.

The schema is checked before any row is read. Bad rows (a null or empty ``paper_id``, a
year outside int32, a null id in a citation list) are found with Arrow kernels per batch
and reported in row order, each row by its first problem.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from tqdm import tqdm

from citeval.errors import InputDataError
from citeval.ingest.formats import INT32_MAX, INT32_MIN, PARQUET_COLUMNS, check_parquet_schema
from citeval.ingest.schemas import STAGE_PAPERS_SCHEMA, STRING_LIST
from citeval.ingest.staging import StagingWriters, n_items

BATCH_ROWS = 65_536


def _string_list(column: pa.Array) -> pa.ListArray:
    if pa.types.is_null(column.type):
        return pa.nulls(len(column), STRING_LIST)
    return column.cast(STRING_LIST)


def stage_parquet_batch(batch: pa.RecordBatch, first_row: int, out: StagingWriters) -> None:
    n = batch.num_rows
    report = out.report
    report.lines_read += n
    report.records_read += n
    ids = batch.column("paper_id").cast(pa.string())
    year64 = batch.column("year").cast(pa.int64())
    lists = {
        c: _string_list(batch.column(c)) for c in PARQUET_COLUMNS if "list" in PARQUET_COLUMNS[c]
    }

    # (row, reason, field, message) for every rejected row, reported in row order.
    problems: list[tuple[int, str, str, str]] = []

    def flag(mask: pa.Array, reason: str, name: str, message: str) -> None:
        for row in np.flatnonzero(mask.fill_null(False).to_numpy(zero_copy_only=False)):
            problems.append((int(row), reason, name, message))

    flag(pc.is_null(ids), "missing_paper_id", "paper_id", "paper_id is null")
    flag(pc.equal(pc.utf8_length(ids), 0), "invalid_value", "paper_id", "paper_id is empty")
    flag(
        pc.or_(pc.less(year64, INT32_MIN), pc.greater(year64, INT32_MAX)),
        "invalid_value",
        "year",
        "year outside the int32 range",
    )
    for name, lst in lists.items():
        values = pc.list_flatten(lst)
        if values.null_count:
            parents = pc.list_parent_indices(lst).filter(pc.is_null(values))
            for row in np.unique(parents.to_numpy()):
                problems.append((int(row), "wrong_type", name, f"{name} holds a null id"))

    keep = None
    if problems:
        problems.sort()
        rejected: set[int] = set()
        for row, reason, name, message in problems:
            # A row with several problems is one bad record, reported by its first.
            if row not in rejected:
                rejected.add(row)
                report.skip(first_row + row, reason, name, message)
        mask = np.ones(n, dtype=bool)
        mask[sorted(rejected)] = False
        keep = pa.array(mask)
    lines = pa.array(np.arange(first_row, first_row + n, dtype=np.int64))
    titles = batch.column("title").cast(pa.string())
    abstracts = batch.column("abstract").cast(pa.string())
    years = year64
    fields = pc.if_else(
        pc.is_null(lists["mag_field_of_study"]),
        pa.scalar([], STRING_LIST),
        lists["mag_field_of_study"],
    )
    outbound, inbound = lists["outbound_citations"], lists["inbound_citations"]
    if keep is not None:
        ids, lines, titles, abstracts, years, fields, outbound, inbound = (
            a.filter(keep)
            for a in (ids, lines, titles, abstracts, years, fields, outbound, inbound)
        )
    years = years.cast(pa.int32())
    report.missing_title += titles.null_count
    report.missing_abstract += abstracts.null_count
    report.missing_year += years.null_count
    report.edges_written += n_items(outbound) + n_items(inbound)
    out.papers.write(
        pa.RecordBatch.from_arrays(
            [ids, titles, abstracts, years, fields, outbound, inbound, lines],
            schema=STAGE_PAPERS_SCHEMA,
        )
    )


def parse_parquet(path: Path, out: StagingWriters, batch_rows: int = BATCH_ROWS) -> None:
    """Stage every row of the parquet file ``path``."""
    try:
        handle = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as error:
        raise InputDataError(f"cannot read as parquet: {error}", path=str(path)) from error
    with handle:
        check_parquet_schema(path, handle.schema_arrow)
        first_row = 1
        bar = tqdm(
            total=handle.metadata.num_rows,
            unit="rows",
            desc=f"parse {path.name}",
            mininterval=5,
            leave=False,
        )
        with bar:
            try:
                for batch in handle.iter_batches(
                    batch_size=batch_rows, columns=list(PARQUET_COLUMNS)
                ):
                    stage_parquet_batch(batch, first_row, out)
                    first_row += batch.num_rows
                    bar.update(batch.num_rows)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as error:
                raise InputDataError(
                    f"cannot read parquet near row {first_row}: {error}", path=str(path)
                ) from error
