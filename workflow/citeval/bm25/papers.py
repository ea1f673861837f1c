"""Corpus papers for BM25: streamed from the parquet parts, as documents and queries.

Documents are ``title + "\\n" + abstract`` and queries ``title + " " + abstract``
(:func:`paper_text`); papers stream in paper id order through DuckDB, so no corpus is ever
held in memory.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
from tqdm import tqdm

from citeval.collection_list import group_query_count
from citeval.errors import InputDataError
from citeval.io import parquet_glob

LOG = logging.getLogger(__name__)

DOC_SEPARATOR = "\n"
QUERY_SEPARATOR = " "
JSON_BATCH_ROWS = 10_000


def paper_text(title: str | None, abstract: str | None, separator: str) -> str:
    """``title`` and ``abstract`` joined by ``separator``, leaving out empty parts."""
    parts = [part.strip() for part in (title, abstract) if part and part.strip()]
    return separator.join(parts)


def connect(threads: int, memory_limit: str | None = None) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute(f"SET threads = {int(threads)}")
    if memory_limit:
        con.execute("SET memory_limit = ?", [memory_limit])
    return con


def papers_glob(papers_dir: str | os.PathLike) -> str:
    path = Path(papers_dir)
    if not path.is_dir() or not any(path.glob("*.parquet")):
        raise InputDataError("no parquet parts in the papers folder", path=str(path))
    return parquet_glob(path)


def require_file(path: str | os.PathLike, what: str) -> str:
    if not Path(path).is_file():
        raise InputDataError(f"{what} does not exist", path=str(path))
    return str(path)


def count_pool(
    con: duckdb.DuckDBPyConnection, pools_path: str | os.PathLike, group: str, rep: int
) -> int:
    """Number of papers in the pool of (group, rep); an error names the pools present."""
    pools = require_file(pools_path, "pools file")
    [(n_pool,)] = con.execute(
        'SELECT count(*) FROM read_parquet(?) WHERE "group" = ? AND rep = ?',
        [pools, group, rep],
    ).fetchall()
    if n_pool == 0:
        present = con.execute(
            'SELECT DISTINCT "group", rep FROM read_parquet(?) ORDER BY ALL', [pools]
        ).fetchall()
        shown = ", ".join(f"{g}.rep{r}" for g, r in present[:10])
        raise InputDataError(
            f"no pool for group {group!r} rep {rep} (pools present: {shown or 'none'})",
            path=pools,
        )
    return int(n_pool)


def _check_all_found(
    con: duckdb.DuckDBPyConnection, ids_sql: str, params: list[Any], papers: str, what: str
) -> None:
    """Raise if any id selected by ``ids_sql`` is missing from the corpus.

    The corpus side is first cut down by a semi-join on the (small) id set, so DuckDB
    never builds a hash table over every corpus id.
    """
    missing = con.execute(
        f"WITH wanted AS ({ids_sql}), "
        "found AS (SELECT paper_id FROM read_parquet(?) "
        "WHERE paper_id IN (SELECT paper_id FROM wanted)) "
        "SELECT paper_id FROM wanted WHERE paper_id NOT IN (SELECT paper_id FROM found) "
        "ORDER BY paper_id",
        [*params, papers],
    ).fetchall()
    if missing:
        examples = ", ".join(repr(row[0]) for row in missing[:5])
        raise InputDataError(
            f"{len(missing)} {what} not in the corpus papers (e.g. {examples})", path=papers
        )


def iter_pool_papers(
    con: duckdb.DuckDBPyConnection,
    papers_dir: str | os.PathLike,
    pools_path: str | os.PathLike,
    group: str,
    rep: int,
    batch_rows: int = JSON_BATCH_ROWS,
) -> Iterator[pa.RecordBatch]:
    """Stream ``paper_id, title, abstract`` of one pool, sorted by ``paper_id``.

    Raises :class:`InputDataError` when a pool paper is missing from the corpus.
    """
    papers = papers_glob(papers_dir)
    pools = require_file(pools_path, "pools file")
    pool_ids = 'SELECT paper_id FROM read_parquet(?) WHERE "group" = ? AND rep = ?'
    _check_all_found(con, pool_ids, [pools, group, rep], papers, f"papers of pool {group}")
    reader = con.sql(
        "SELECT paper_id, title, abstract FROM read_parquet(?) "
        f"WHERE paper_id IN ({pool_ids}) ORDER BY paper_id",
        params=[papers, pools, group, rep],
    ).to_arrow_reader(batch_rows)
    yield from reader


def write_json_collection(
    batches: Iterable[pa.RecordBatch], out_dir: Path, n_docs: int
) -> tuple[int, int]:
    """Write an Anserini JsonCollection of one file, in input order; return
    ``(written, empty)``. ``n_docs`` sizes the progress bar."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = empty = 0
    with (
        open(out_dir / "part-00000.jsonl", "w", encoding="utf-8") as handle,
        tqdm(total=n_docs, desc="collection", unit="doc", mininterval=2) as bar,
    ):
        for batch in batches:
            for paper_id, title, abstract in zip(
                *(batch.column(i).to_pylist() for i in range(3)), strict=True
            ):
                contents = paper_text(title, abstract, DOC_SEPARATOR)
                if not contents:
                    empty += 1
                    continue
                record = {"id": paper_id, "contents": contents}
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
                written += 1
            bar.update(batch.num_rows)
    return written, empty


def iter_json_collection(directory: str | os.PathLike) -> Iterator[tuple[str, str]]:
    """``(id, contents)`` of every document of a JsonCollection written here, in order."""
    for path in sorted(Path(directory).glob("part-*.jsonl")):
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                record = json.loads(line)
                yield record["id"], record["contents"]


def iter_corpus_papers(
    con: duckdb.DuckDBPyConnection,
    papers_dir: str | os.PathLike,
    ids_path: str | os.PathLike | None = None,
    batch_rows: int = JSON_BATCH_ROWS,
) -> tuple[int, Iterator[pa.RecordBatch]]:
    """The number of papers and a stream of their ``paper_id, title, abstract``, sorted by
    ``paper_id``: every corpus paper, or those listed in ``ids_path`` (a parquet file with a
    ``paper_id`` column, such as the prefilter's output; each must be in the corpus)."""
    papers = papers_glob(papers_dir)
    where, params = "", [papers]
    if ids_path is not None:
        ids = require_file(ids_path, "paper id file")
        listed = "SELECT DISTINCT paper_id FROM read_parquet(?)"
        _check_all_found(con, listed, [ids], papers, f"papers listed in {ids}")
        where, params = f"WHERE paper_id IN ({listed})", [papers, ids]
    [(n_papers,)] = con.execute(f"SELECT count(*) FROM read_parquet(?) {where}", params).fetchall()
    reader = con.sql(
        f"SELECT paper_id, title, abstract FROM read_parquet(?) {where} ORDER BY paper_id",
        params=params,
    ).to_arrow_reader(batch_rows)
    return int(n_papers), iter(reader)


def paper_documents(batches: Iterable[pa.RecordBatch]) -> Iterator[tuple[str, str]]:
    """``(paper_id, title + "\\n" + abstract)`` of each paper, empty without text."""
    for batch in batches:
        columns = (batch.column(i).to_pylist() for i in range(3))
        for paper_id, title, abstract in zip(*columns, strict=True):
            yield paper_id, paper_text(title, abstract, DOC_SEPARATOR)


def load_queries(
    con: duckdb.DuckDBPyConnection,
    papers_dir: str | os.PathLike,
    queries_path: str | os.PathLike,
    group: str,
) -> list[tuple[str, str]]:
    """``(query_id, title + " " + abstract)`` of one group's queries, sorted by id.

    Queries without any text are dropped with a warning (they cannot match anything). A
    group that sampling left without queries (its ``collections.tsv`` says 0) has none;
    any other group without queries is an error.
    """
    papers = papers_glob(papers_dir)
    queries = require_file(queries_path, "queries file")
    query_ids = 'SELECT query_id AS paper_id FROM read_parquet(?) WHERE "group" = ?'
    n_queries = con.execute(f"SELECT count(*) FROM ({query_ids})", [queries, group]).fetchone()[0]
    if n_queries == 0:
        if group_query_count(Path(queries).parent, group) > 0:
            raise InputDataError(f"no queries for group {group!r}", path=queries)
        LOG.warning("group %s has no queries (the sample report says why)", group)
        return []
    _check_all_found(con, query_ids, [queries, group], papers, f"queries of group {group}")
    rows = con.execute(
        "SELECT paper_id, title, abstract FROM read_parquet(?) "
        f"WHERE paper_id IN ({query_ids}) ORDER BY paper_id",
        [papers, queries, group],
    ).fetchall()
    result = [(qid, paper_text(title, abstract, QUERY_SEPARATOR)) for qid, title, abstract in rows]
    kept = [(qid, text) for qid, text in result if text]
    if len(kept) < len(result):
        LOG.warning("%d queries of %s have no text; skipped", len(result) - len(kept), group)
    return kept
