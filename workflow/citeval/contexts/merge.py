"""``merge``: the raw contexts of every input file against the corpus, as one table.

In DuckDB (bounded by ``--memory-limit``, spilling to a temporary folder):

1. a context whose citing paper is not in the corpus (``citing_not_in_corpus``), has no
   year (``citing_no_year``) or no title or abstract (``citing_no_text``: the global
   context is the citing paper's title + abstract) is dropped, in that order of reasons;
2. of the remaining contexts' cited ids, those outside the corpus
   (``cited_outside_corpus``) and those of papers with an empty title or abstract
   (``cited_without_text``) are removed (counted per cited id);
3. a context left with no cited paper is dropped (``no_cited_paper_in_corpus``).

The citing paper's ``year`` and ``fields`` are added; the table is sorted by
``context_id`` and written with fixed row groups, so the same inputs give the same bytes.
A context id found in two staging files is an error naming both.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from citeval.contexts.extract import RAW_SCHEMA, STRING_LIST
from citeval.contexts.report import sum_reports
from citeval.errors import InputDataError, ResourceError
from citeval.io import parquet_glob, write_json, write_parquet_stream
from citeval.memory import duckdb_memory_setting

log = logging.getLogger(__name__)

CONTEXTS_SCHEMA = pa.schema(
    [
        ("context_id", pa.string()),
        ("citing_id", pa.string()),
        ("year", pa.int32()),
        ("fields", STRING_LIST),
        ("granularity", pa.string()),
        ("section", pa.string()),
        ("text", pa.string()),
        ("marker_start", pa.int32()),
        ("marker_end", pa.int32()),
        ("cited_ids", STRING_LIST),
    ]
)
ROW_GROUP_ROWS = 100_000

_SETUP = """
CREATE TEMP VIEW raw AS
  SELECT * EXCLUDE (filename), filename AS source FROM read_parquet({staging}, filename = true);
CREATE TEMP VIEW papers AS
  SELECT paper_id, year, fields,
         coalesce(trim(title), '') <> '' AND coalesce(trim(abstract), '') <> '' AS has_text
  FROM read_parquet({papers});
CREATE TEMP TABLE judged AS
  SELECT r.context_id,
         CASE WHEN p.paper_id IS NULL THEN 'citing_not_in_corpus'
              WHEN p.year IS NULL THEN 'citing_no_year'
              WHEN NOT p.has_text THEN 'citing_no_text' END AS reason
  FROM raw r LEFT JOIN papers p ON p.paper_id = r.citing_id;
CREATE TEMP TABLE cited AS
  SELECT c.context_id, c.cited_id,
         CASE WHEN p.paper_id IS NULL THEN 'cited_outside_corpus'
              WHEN NOT p.has_text THEN 'cited_without_text' END AS reason
  FROM (SELECT r.context_id, unnest(r.cited_ids) AS cited_id
        FROM raw r JOIN judged j USING (context_id) WHERE j.reason IS NULL) c
  LEFT JOIN papers p ON p.paper_id = c.cited_id;
CREATE TEMP TABLE kept_cited AS
  SELECT context_id, list(cited_id ORDER BY cited_id) AS cited_ids
  FROM cited WHERE reason IS NULL GROUP BY context_id;
"""

_OUTPUT = """
SELECT r.context_id, r.citing_id, CAST(p.year AS INTEGER) AS year, p.fields,
       r.granularity, r.section, r.text,
       CAST(r.marker_start AS INTEGER) AS marker_start,
       CAST(r.marker_end AS INTEGER) AS marker_end, k.cited_ids
FROM raw r
JOIN kept_cited k USING (context_id)
JOIN papers p ON p.paper_id = r.citing_id
ORDER BY r.context_id
"""


def _literal(text: str) -> str:
    """``text`` as an SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def _check_schemas(staging: list[str]) -> None:
    for path in staging:
        names = pq.read_schema(path).names
        if names != RAW_SCHEMA.names:
            raise InputDataError(
                f"not a contexts staging file: columns {names}, expected {RAW_SCHEMA.names}",
                path=path,
            )


def _check_unique(con: Any) -> None:
    duplicate = con.execute(
        "SELECT context_id, min(source), max(source) FROM raw GROUP BY context_id "
        "HAVING count(*) > 1 ORDER BY context_id LIMIT 1"
    ).fetchall()
    if duplicate:
        context_id, first, second = duplicate[0]
        where = f"{first} and {second}" if first != second else f"{first} (twice)"
        raise InputDataError(
            f"context id {context_id!r} is in more than one staging file: {where}",
            path=first,
            field="context_id",
        )


def _batches(reader: pa.RecordBatchReader) -> pa.RecordBatchReader:
    """DuckDB's batches cast to the contract's exact schema."""

    def cast() -> Any:
        for batch in reader:
            yield from pa.Table.from_batches([batch]).cast(CONTEXTS_SCHEMA).to_batches()

    return pa.RecordBatchReader.from_batches(CONTEXTS_SCHEMA, cast())


def merge_contexts(
    staging: list[str | os.PathLike],
    reports: list[str | os.PathLike],
    papers_dir: str | os.PathLike,
    output: str | os.PathLike,
    report_path: str | os.PathLike,
    *,
    memory_limit: str,
    threads: int = 2,
    temp_dir: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """Filter, annotate and sort the staged contexts; write them and the report."""
    import duckdb

    staging_paths = [str(p) for p in staging]
    for path in staging_paths:
        if not Path(path).is_file():
            raise InputDataError("staging file not found", path=path)
    _check_schemas(staging_paths)
    if not list(Path(papers_dir).glob("*.parquet")):
        raise InputDataError("no corpus papers parquet parts", path=str(papers_dir))
    extract_reports = []
    for path in reports:
        try:
            extract_reports.append(json.loads(Path(path).read_text(encoding="utf-8")))
        except (OSError, json.JSONDecodeError) as error:
            raise InputDataError(f"cannot read extract report: {error}", path=str(path)) from None
    final = Path(output)
    final.parent.mkdir(parents=True, exist_ok=True)
    spill = Path(tempfile.mkdtemp(prefix=".contexts-duckdb-", dir=temp_dir or final.parent))
    con = duckdb.connect(
        config={
            "threads": threads,
            "temp_directory": str(spill),
            "memory_limit": duckdb_memory_setting(memory_limit),
            "preserve_insertion_order": False,
        }
    )
    try:
        # DDL takes no prepared parameters: the paths go in as quoted literals.
        setup = _SETUP.format(
            staging="[" + ", ".join(map(_literal, staging_paths)) + "]",
            papers=_literal(parquet_glob(papers_dir)),
        )
        for statement in filter(str.strip, setup.split(";")):
            con.execute(statement)
        _check_unique(con)
        counts = _counts(con)
        reader = con.sql(_OUTPUT).to_arrow_reader(ROW_GROUP_ROWS)
        written = write_parquet_stream(_batches(reader), output, row_group_size=ROW_GROUP_ROWS)
    except duckdb.OutOfMemoryException as error:
        raise ResourceError(
            f"contexts merge ran out of memory under --memory-limit {memory_limit}; raise it"
        ) from error
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)
    if written != counts["contexts_kept"]:
        raise AssertionError(f"wrote {written} contexts, expected {counts['contexts_kept']}")
    result = {
        "inputs": {"staging": staging_paths, "reports": [str(p) for p in reports]},
        "papers": str(papers_dir),
        "extract": sum_reports(extract_reports),
        "shards": extract_reports,
        "merge": counts,
    }
    write_json(result, report_path)
    log.info(
        "%d of %d contexts kept (%d citing papers); dropped %s",
        counts["contexts_kept"],
        counts["contexts_read"],
        counts["citing_papers_kept"],
        counts["contexts_dropped"],
    )
    return result


def _counts(con: Any) -> dict[str, Any]:
    def scalar(sql: str) -> int:
        return int(con.execute(sql).fetchall()[0][0])

    def by_reason(sql: str) -> dict[str, int]:
        return {reason: int(n) for reason, n in con.execute(sql).fetchall()}

    dropped = by_reason(
        "SELECT reason, count(*) FROM judged WHERE reason IS NOT NULL GROUP BY reason"
    )
    no_cited = scalar(
        "SELECT count(*) FROM judged j WHERE j.reason IS NULL "
        "AND j.context_id NOT IN (SELECT context_id FROM kept_cited)"
    )
    if no_cited:
        dropped["no_cited_paper_in_corpus"] = no_cited
    cited_removed = by_reason(
        "SELECT reason, count(*) FROM cited WHERE reason IS NOT NULL GROUP BY reason"
    )
    kept = "SELECT r.* FROM raw r JOIN kept_cited USING (context_id)"
    granularities = by_reason(
        f"SELECT granularity, count(*) FROM ({kept}) GROUP BY granularity ORDER BY granularity"
    )
    return {
        "contexts_read": scalar("SELECT count(*) FROM raw"),
        "contexts_dropped": dict(sorted(dropped.items())),
        "cited_ids_read": scalar("SELECT count(*) FROM cited"),
        "cited_ids_removed": dict(sorted(cited_removed.items())),
        "cited_ids_kept": scalar("SELECT count(*) FROM cited WHERE reason IS NULL"),
        "contexts_kept": scalar(f"SELECT count(*) FROM ({kept})"),
        "citing_papers_kept": scalar(f"SELECT count(DISTINCT citing_id) FROM ({kept})"),
        "per_granularity": dict(sorted(granularities.items())),
    }
