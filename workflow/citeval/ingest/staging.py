"""The staging directory of one input file: written by ``parse``, read by ``merge``.

::

    <staging>/shard.json                    the shard's report (``ShardReport``)
    <staging>/papers/part-NNNNN.parquet     STAGE_PAPERS_SCHEMA
    <staging>/edges/part-NNNNN.parquet      STAGE_EDGES_SCHEMA       (s2ag-citations)
    <staging>/abstracts/part-NNNNN.parquet  STAGE_ABSTRACTS_SCHEMA   (s2ag-abstracts)

The input path is in ``shard.json`` rather than in every row; merge numbers the shards in
the order it is given them, so "first" means (shard order, line).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from citeval.errors import InputDataError
from citeval.ingest.parts import PartWriter
from citeval.ingest.report import STAGING_VERSION, ShardReport
from citeval.ingest.schemas import (
    STAGE_ABSTRACTS_SCHEMA,
    STAGE_EDGES_SCHEMA,
    STAGE_PAPERS_SCHEMA,
    STAGING_PARQUET_OPTIONS,
)

SHARD_REPORT = "shard.json"
STAGING_ROWS_PER_PART = 100_000


def n_items(lists: pa.ListArray) -> int:
    """How many ids a (possibly sliced) list array holds, nulls counting as none."""
    return int(pc.sum(pc.list_value_length(lists)).as_py() or 0)


class StagingWriters:
    """The part writers of one staging directory, created only for the kind staged."""

    def __init__(self, root: Path, report: ShardReport, rows_per_part: int) -> None:
        self.report = report

        def writer(name: str, schema: pa.Schema) -> PartWriter:
            return PartWriter(
                root / name,
                schema,
                rows_per_part=rows_per_part,
                row_group_size=rows_per_part,
                options=STAGING_PARQUET_OPTIONS,
                fixed_row_groups=False,
            )

        kind = report.kind
        self.papers = writer("papers", STAGE_PAPERS_SCHEMA) if kind == "papers" else None
        self.edges = writer("edges", STAGE_EDGES_SCHEMA) if kind == "citations" else None
        self.abstracts = (
            writer("abstracts", STAGE_ABSTRACTS_SCHEMA) if kind == "abstracts" else None
        )

    def count_missing(
        self,
        titles: list[str | None],
        abstracts: list[str | None] | None,
        years: list[int | None],
    ) -> None:
        self.report.missing_title += titles.count(None)
        if abstracts is not None:
            self.report.missing_abstract += abstracts.count(None)
        self.report.missing_year += years.count(None)

    def write_edges(self, batch: pa.RecordBatch) -> None:
        self.edges.write(batch)
        self.report.edges_written += batch.num_rows

    def close(self) -> None:
        for name in ("papers", "edges", "abstracts"):
            writer = getattr(self, name)
            if writer is not None:
                writer.close()
                self.report.parts[name] = writer.parts
        if self.papers is not None:
            self.report.records_written = self.papers.rows


# --------------------------------------------------------------------------------------
# Reading staging back (merge)


def sql_str(value: str | os.PathLike) -> str:
    return "'" + str(value).replace("'", "''") + "'"


def sql_list(paths: Iterable[Path]) -> str:
    return "[" + ", ".join(sql_str(p) for p in paths) + "]"


@dataclass
class StagedShard:
    index: int
    directory: Path
    report: dict[str, Any]

    def parts(self, name: str) -> list[Path]:
        # By number, not name: merge orders rows by (file, line), so parts must come in
        # line order even past part-99999.
        return sorted(
            (self.directory / name).glob("part-*.parquet"),
            key=lambda path: int(path.stem.split("-")[1]),
        )

    def location(self, line: int) -> str:
        return f"{self.report['input']}:{line}"


def load_staging(directories: Sequence[str | os.PathLike]) -> list[StagedShard]:
    """Read each staging directory's shard report; a missing one means parse never finished."""
    shards = []
    for index, directory in enumerate(directories):
        report_path = Path(directory) / SHARD_REPORT
        try:
            report = json.loads(report_path.read_text())
        except FileNotFoundError:
            raise InputDataError(
                "not a finished staging directory (no shard.json); run ingest parse first",
                path=str(directory),
            ) from None
        version = report.get("staging_version", 1)
        if version != STAGING_VERSION:
            raise InputDataError(
                f"staging format {version} was written by another citeval version; merge "
                f"reads format {STAGING_VERSION}: parse this shard again (with Snakemake: "
                "--forcerun ingest_parse)",
                path=str(directory),
            )
        shards.append(StagedShard(index, Path(directory), report))
    if not any(s.report["kind"] == "papers" for s in shards):
        raise InputDataError("no papers shard among the staging directories; nothing to merge")
    return shards


@dataclass
class StagedTable:
    """One staged table (papers, abstracts) of every shard, read as a single scan.

    ``sql`` selects the given columns plus ``_file``, the position of the row's file in
    the scan's file list, and ``_line``. Files are listed shard by shard and, within a
    shard, in part order, which is line order, so ordering by (``_file``, ``_line``) is
    ordering by (shard, line). One ``read_parquet`` of every file rather than a UNION ALL
    of one per shard: each branch of a union holds its own scan buffers, which hundreds
    of shards would multiply.
    """

    sql: str
    shard_of_file: list[int]

    @classmethod
    def of(cls, shards: list[StagedShard], part: str, columns: str) -> StagedTable | None:
        files, shard_of_file = [], []
        for shard in shards:
            if (shard.directory / part).is_dir():
                parts = shard.parts(part)
                files += parts
                shard_of_file += [shard.index] * len(parts)
        if not files:
            return None
        sql = (
            f"SELECT {columns}, file_index::INTEGER AS _file, _line "
            f"FROM read_parquet({sql_list(files)})"
        )
        return cls(sql, shard_of_file)
