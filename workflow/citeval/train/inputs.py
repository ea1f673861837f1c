"""The triplets' texts on disk, so training memory does not grow with the number of triplets.

A triplets file holds paper ids (``query_id``, ``positive_id``, ``negative_id``). Before
training, DuckDB joins them with the papers' titles and abstracts and the texts are
written, in the triplets' order and in chunks of :data:`ROWS_PER_CHUNK`, to an Arrow
stream file of three string columns (``anchor``, ``positive``, ``negative``: the model's
inputs, :func:`citeval.models.build_text`). ``datasets.Dataset.from_file`` memory-maps it:
the trainer's sampler picks rows and the collator tokenizes each batch, so only a batch's
texts are ever in the process's own memory. DuckDB spills its join and sort to disk past
the configured memory limit.

The file records the sha256 of the triplets it was written from; a resumed run reuses it
when they match and writes it again otherwise.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from citeval.errors import InputDataError
from citeval.io import atomic_path, file_fingerprint, parquet_glob
from citeval.memory import duckdb_memory_setting
from citeval.models import build_text

LOG = logging.getLogger(__name__)

ROLES = {"anchor": "query_id", "positive": "positive_id", "negative": "negative_id"}
PAPER_COLUMNS = ("paper_id", "title", "abstract")
ROWS_PER_CHUNK = 4096
_TRIPLETS_SHA256 = b"citeval.triplets_sha256"


def _require_columns(
    con: duckdb.DuckDBPyConnection, source: str, wanted: tuple[str, ...], path: Path
) -> None:
    columns = {row[0] for row in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()}
    missing = [column for column in wanted if column not in columns]
    if missing:
        raise InputDataError(f"no column(s) {missing}", path=str(path))


def _papers_view(con: duckdb.DuckDBPyConnection, name: str, papers_dir: str | os.PathLike) -> None:
    path = Path(papers_dir)
    if not path.is_dir() or not any(path.glob("*.parquet")):
        raise InputDataError("no parquet parts in the papers folder", path=str(path))
    source = f"read_parquet('{parquet_glob(path)}')"
    _require_columns(con, source, PAPER_COLUMNS, path)
    con.execute(
        f"CREATE VIEW {name} AS SELECT CAST(paper_id AS VARCHAR) AS paper_id, title, abstract "
        f"FROM {source}"
    )


def _check_ids(con: duckdb.DuckDBPyConnection, triplets: Path) -> None:
    """The first triplet (file line, 1-based) whose paper is missing, as an error."""
    for role, column in ROLES.items():
        papers = "anchor_papers" if role == "anchor" else "papers"
        [(row,)] = con.execute(
            f"SELECT min(line) FROM triplets WHERE {role} NOT IN (SELECT paper_id FROM {papers})"
        ).fetchall()
        if row is not None:
            (paper,) = con.execute(f"SELECT {role} FROM triplets WHERE line = {row}").fetchone()
            raise InputDataError(
                f"paper {paper!r} is not in the papers corpus",
                path=str(triplets), line=row, field=column,
            )  # fmt: skip


def write_triplet_texts(
    triplets_path: str | os.PathLike,
    papers_dir: str | os.PathLike,
    sep: str,
    output: str | os.PathLike,
    *,
    memory_limit: str,
    anchor_papers: str | os.PathLike | None = None,
    threads: int = 1,
) -> int:
    """Write the triplets' texts to ``output`` (an Arrow stream file); return the row count.

    Anchors are papers of ``anchor_papers`` when given (the local task's contexts, in
    ``query_papers/``), else of ``papers_dir`` like the positives and negatives.
    ``memory_limit`` is the config's ``jobs.memory_limit``.
    """
    triplets = Path(triplets_path)
    if not triplets.is_file():
        raise InputDataError("not found", path=str(triplets))
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    spill = output.parent / f".{output.name}.spill"
    con = duckdb.connect(
        config={
            "memory_limit": duckdb_memory_setting(memory_limit),
            "threads": threads,
            "temp_directory": str(spill),
        }
    )
    try:
        written = _write(con, triplets, papers_dir, anchor_papers, sep, output)
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)
    LOG.info("wrote the texts of %d triplets to %s", written, output)
    return written


def _write(
    con: duckdb.DuckDBPyConnection,
    triplets: Path,
    papers_dir: str | os.PathLike,
    anchor_papers: str | os.PathLike | None,
    sep: str,
    output: Path,
) -> int:
    source = f"read_parquet('{triplets}', file_row_number = true)"
    _require_columns(con, source, tuple(ROLES.values()), triplets)
    columns = ", ".join(f"CAST({column} AS VARCHAR) AS {role}" for role, column in ROLES.items())
    con.execute(
        f"CREATE VIEW triplets AS SELECT file_row_number + 1 AS line, {columns} FROM {source}"
    )
    _papers_view(con, "papers", papers_dir)
    if anchor_papers is None:
        con.execute("CREATE VIEW anchor_papers AS SELECT * FROM papers")
    else:
        _papers_view(con, "anchor_papers", anchor_papers)
    _check_ids(con, triplets)
    [(expected,)] = con.execute("SELECT count(*) FROM triplets").fetchall()
    reader = con.sql(
        """
        SELECT a.title, a.abstract, p.title, p.abstract, n.title, n.abstract FROM triplets t
        JOIN anchor_papers a ON a.paper_id = t.anchor
        JOIN papers p ON p.paper_id = t.positive
        JOIN papers n ON n.paper_id = t.negative
        ORDER BY t.line
        """
    ).to_arrow_reader(ROWS_PER_CHUNK)
    metadata = {_TRIPLETS_SHA256: file_fingerprint(triplets).encode()}
    schema = pa.schema([(role, pa.string()) for role in ROLES], metadata=metadata)
    written = 0
    with atomic_path(output) as temporary, pa.ipc.new_stream(str(temporary), schema) as writer:
        for batch in reader:
            fields = [column.to_pylist() for column in batch.columns]
            texts = [
                [build_text(title, abstract, sep) for title, abstract in zip(*pair, strict=True)]
                for pair in (fields[0:2], fields[2:4], fields[4:6])
            ]
            writer.write_batch(pa.record_batch(texts, schema=schema))
            written += batch.num_rows
        if written != expected:
            raise InputDataError(
                f"{written} texts for {expected} triplets: a paper id occurs more than once in "
                "the papers", path=str(papers_dir), field="paper_id",
            )  # fmt: skip
    return written


def is_current(path: str | os.PathLike, triplets_sha256: str) -> bool:
    """Whether ``path`` holds the texts of the triplets file with this SHA-256
    (:func:`citeval.io.file_fingerprint`); a resumed run reuses it."""
    path = Path(path)
    if not path.is_file():
        return False
    with pa.memory_map(str(path)) as source:
        metadata = pa.ipc.open_stream(source).schema.metadata or {}
    return metadata.get(_TRIPLETS_SHA256) == triplets_sha256.encode()


def open_triplet_texts(path: str | os.PathLike) -> Any:
    """The texts file as a memory-mapped ``datasets.Dataset`` (no copy in memory)."""
    from datasets import Dataset

    return Dataset.from_file(str(path))
