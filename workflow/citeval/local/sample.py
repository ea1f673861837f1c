"""The local task's splits, queries and pools: contexts of the query year, split by paper.

Contexts (``local/contexts.parquet``, :mod:`citeval.contexts`) whose citing paper was
published in the query year are the evaluated queries; those of earlier years are the
training contexts. The query year's citing papers are shuffled with the seed and the first
``valid_fraction`` of them give the validation split, the rest the test split, so no
paper has contexts in both. The candidates are the prefiltered papers published before the
query year: no candidate is newer than its query, and no citing paper is its own
candidate. A cited paper outside the candidates is removed from its context; a context
left with none is dropped (counted in the report).

Each split is written in the global task's sample layout (docs/contracts.md), so BM25,
the encoders, fusion and the metrics run on it unchanged: setup ``local``, one collection
``contexts.rep0`` (every granularity shares the pool and the runs; the tables group the
queries by granularity), ``queries.parquet``, ``pools.parquet``, ``qrels/`` and
``collections.tsv``. Since a query is a context rather than a paper, the split also holds
its query texts as a papers folder, ``query_papers/`` (``paper_id`` = context id,
``title`` = the local context, ``abstract`` = the citing paper's title and abstract, or
null without the global context), which BM25 reads as the queries' text and the encoders
embed as they embed papers (``title [SEP] abstract``), and its ``granularity``.

The chosen contexts stay in DuckDB (which spills to disk past ``--memory-limit``) and are
streamed out in batches, so memory does not grow with the training split, which holds
every earlier year's contexts unless ``local.train.num_queries`` caps it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from citeval.collection_list import CollectionInfo, write_collections
from citeval.draws import POOL_SCHEMA, SizeGuard, build_pool, draw_sorted, seeded_rng
from citeval.errors import InputDataError
from citeval.io import write_json, write_parquet, write_parquet_stream
from citeval.layout import LOCAL_COLLECTION, LOCAL_GROUP, LOCAL_SETUP, QUERY_PAPERS
from citeval.trec import write_qrels_chunks

log = logging.getLogger(__name__)

SPLITS = ("test", "valid", "train")
EVALUATED = ("test", "valid")


REP = 0
# Rows per batch when the chosen contexts are streamed out of DuckDB.
BATCH_ROWS = 100_000


def _connect(threads: int, memory_limit: str | None) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute(f"SET threads = {int(threads)}")
    if memory_limit:
        con.execute("SET memory_limit = ?", [memory_limit])
    con.execute("SET preserve_insertion_order = true")
    return con


def _require(path: Path, what: str) -> str:
    if not path.exists():
        raise InputDataError(f"{what} does not exist", path=str(path))
    return str(path)


def split_citing_papers(
    citing_ids: list[str], valid_fraction: float, seed: int
) -> dict[str, set[str]]:
    """``{"valid": ..., "test": ...}``: the first ``valid_fraction`` of the citing papers in a
    seeded shuffle of their sorted ids go to validation."""
    ordered = sorted(citing_ids)
    order = seeded_rng(seed, "local-split").permutation(len(ordered))
    n_valid = round(valid_fraction * len(ordered))
    valid = {ordered[i] for i in order[:n_valid]}
    return {"valid": valid, "test": set(ordered) - valid}


def sample_local(
    contexts: str | Path,
    filtered: str | Path,
    papers: str | Path,
    output_dir: str | Path,
    *,
    seed: int,
    query_year: int,
    valid_fraction: float,
    num_queries: int | None,
    num_valid_queries: int | None,
    num_train_queries: int | None,
    pool_size: int | None,
    global_context: bool,
    on_too_small: str,
    memory_limit: str | None = None,
    threads: int = 2,
) -> dict[str, Any]:
    """Write ``samples/local-{test,valid,train}`` under ``output_dir``; return the report
    (also written to ``local-report.json``)."""
    con = _connect(threads, memory_limit)
    con.execute(
        "CREATE TEMP TABLE candidates AS SELECT paper_id FROM read_parquet(?) "
        "WHERE year < ? ORDER BY paper_id",
        [_require(Path(filtered), "filtered papers"), query_year],
    )
    contexts_path = _require(Path(contexts), "contexts")
    con.execute(
        "CREATE TEMP TABLE kept_contexts AS SELECT context_id, citing_id, year, granularity, "
        "text, cited_ids FROM read_parquet(?) WHERE year <= ? ORDER BY context_id",
        [contexts_path, query_year],
    )
    # Keep the cited papers that are candidates, in id order; drop contexts with none left.
    con.execute(
        """
        CREATE TEMP TABLE queries AS
        SELECT c.context_id, c.citing_id, c.year, c.granularity, c.text,
               list_sort(list_distinct(list(u.cited_id))) AS cited_ids
        FROM kept_contexts c, unnest(c.cited_ids) AS u(cited_id)
        WHERE u.cited_id IN (SELECT paper_id FROM candidates)
        GROUP BY ALL ORDER BY c.context_id
        """
    )
    n_all, n_candidates = con.execute(
        "SELECT (SELECT count(*) FROM read_parquet(?)), (SELECT count(*) FROM candidates)",
        [contexts_path],
    ).fetchall()[0]
    guard = SizeGuard(on_too_small)
    report: dict[str, Any] = {
        "query_year": query_year,
        "seed": seed,
        "valid_fraction": valid_fraction,
        "global_context": global_context,
        "contexts": n_all,
        "contexts_after_query_year": n_all
        - con.execute("SELECT count(*) FROM kept_contexts").fetchall()[0][0],
        "candidates": n_candidates,
        "query_year_contexts": _counts(con, "year = ?", query_year),
        "training_contexts": _counts(con, "year < ?", query_year),
        "splits": {},
        "warnings": guard.warnings,
    }
    query_citing = _citing(con, "year = ?", query_year)
    evaluated_citing = split_citing_papers(query_citing, valid_fraction, seed)
    # The training split is every earlier year's contexts: it stays a condition in SQL, so
    # its citing papers and contexts are never held in Python.
    where = {"train": ("year < ?", [query_year])}
    for split, citing in evaluated_citing.items():
        con.register(
            f"citing_{split}", pa.table({"citing_id": pa.array(sorted(citing), pa.string())})
        )
        where[split] = (f"citing_id IN (SELECT citing_id FROM citing_{split})", [])
    requested = {"test": num_queries, "valid": num_valid_queries, "train": num_train_queries}
    granularities = {
        split: _choose_queries(con, split, where[split], requested[split], seed, guard)
        for split in SPLITS
    }
    pools = {"test": _pool(con, EVALUATED, pool_size, seed, guard, "local-pool")}
    pools["valid"] = pools["test"]
    pools["train"] = _pool(con, ("train",), pool_size, seed, guard, "local-train-pool")
    out = Path(output_dir)
    for split in SPLITS:
        split_dir = out / f"{LOCAL_SETUP}-{split}"
        _write_queries(con, split, split_dir, global_context, Path(papers))
        queries, relevant = _write_collection(con, split, split_dir, pools[split], pool_size)
        condition, parameters = where[split]
        citing_papers = con.execute(
            f"SELECT count(DISTINCT citing_id) FROM queries WHERE {condition}", parameters
        ).fetchall()[0][0]
        report["splits"][split] = {
            "citing_papers": citing_papers,
            "queries": queries,
            "relevant_per_query": relevant / queries if queries else 0.0,
            "granularities": granularities[split],
            "pool_size": len(pools[split]),
        }
    write_json(report, out / f"{LOCAL_SETUP}-report.json")
    return report


def _counts(con: duckdb.DuckDBPyConnection, where: str, year: int) -> dict[str, int]:
    """Contexts (and cited ids) of some years: read, and left with a cited candidate."""
    read, cited_read = con.execute(
        f"SELECT count(*), coalesce(sum(len(cited_ids)), 0) FROM kept_contexts WHERE {where}",
        [year],
    ).fetchall()[0]
    kept, cited_kept = con.execute(
        f"SELECT count(*), coalesce(sum(len(cited_ids)), 0) FROM queries WHERE {where}", [year]
    ).fetchall()[0]
    return {
        "contexts": read,
        "kept": kept,
        "dropped_no_cited_candidate": read - kept,
        "cited_ids_removed_not_candidates": int(cited_read) - int(cited_kept),
    }


def _citing(con: duckdb.DuckDBPyConnection, where: str, year: int) -> list[str]:
    query = f"SELECT DISTINCT citing_id FROM queries WHERE {where} ORDER BY citing_id"
    return [row[0] for row in con.execute(query, [year]).fetchall()]


def _choose_queries(
    con: duckdb.DuckDBPyConnection,
    split: str,
    where: tuple[str, list[Any]],
    requested: int | None,
    seed: int,
    guard: SizeGuard,
) -> dict[str, dict[str, int]]:
    """Table ``chosen_<split>``: the split's contexts, ``requested`` of each granularity
    (drawn with the seed from their sorted ids) or all of them; returns the counts."""
    condition, parameters = where
    columns = "context_id, citing_id, granularity, text, cited_ids"
    con.execute(f"CREATE TEMP TABLE chosen_{split} AS SELECT {columns} FROM queries WHERE false")
    granularities: dict[str, dict[str, int]] = {}
    names = con.execute(
        f"SELECT DISTINCT granularity FROM queries WHERE {condition} ORDER BY granularity",
        parameters,
    ).fetchall()
    if not names:  # no context at all: a query year outside the data, or an empty split
        guard.check(f"local {split} contexts", requested or 1, 0)
    for (granularity,) in names:
        matching = f"FROM queries WHERE {condition} AND granularity = ?"
        if requested is None:
            # DuckDB's INSERT answers with the number of rows it inserted.
            size = con.execute(
                f"INSERT INTO chosen_{split} SELECT {columns} {matching}",
                [*parameters, granularity],
            ).fetchall()[0][0]
            granularities[granularity] = {"available": size, "queries": size}
            continue
        ids = (
            con.sql(
                f"SELECT context_id {matching} ORDER BY context_id",
                params=[*parameters, granularity],
            )
            .to_arrow_table()
            .column(0)
            .combine_chunks()
        )
        size = guard.check(
            f"local {split} contexts of granularity {granularity}", requested, len(ids)
        )
        rng = seeded_rng(seed, "local-queries", split, granularity)
        con.register(
            "drawn", pa.table({"context_id": pa.array(draw_sorted(rng, ids, size), pa.string())})
        )
        con.execute(
            f"INSERT INTO chosen_{split} SELECT {columns} FROM queries "
            "SEMI JOIN drawn USING (context_id)"
        )
        con.unregister("drawn")
        granularities[granularity] = {"available": len(ids), "queries": size}
    return granularities


def _pool(
    con: duckdb.DuckDBPyConnection,
    splits: tuple[str, ...],
    pool_size: int | None,
    seed: int,
    guard: SizeGuard,
    key: str,
) -> pa.Array:
    """Every candidate, or ``pool_size`` of them that hold every paper cited by the
    splits' queries (the test and validation splits rank the same pool)."""
    candidates = con.sql("SELECT paper_id FROM candidates").to_arrow_table().column(0)
    candidates = candidates.combine_chunks()
    if pool_size is None:
        return candidates
    cited = " UNION ".join(
        f"SELECT unnest(cited_ids) AS paper_id FROM chosen_{split}" for split in splits
    )
    positives = {row[0] for row in con.execute(cited).fetchall()}
    if len(positives) > pool_size:
        guard.warnings.append(
            f"{key}: the queries cite {len(positives)} papers, more than pool_size "
            f"{pool_size}; the pool holds them all"
        )
    size = max(pool_size, len(positives))
    return build_pool(seeded_rng(seed, key), positives, candidates, set(), size)


def _batches(con: duckdb.DuckDBPyConnection, query: str) -> pa.RecordBatchReader:
    return con.sql(query).to_arrow_reader(BATCH_ROWS)


def _write_collection(
    con: duckdb.DuckDBPyConnection,
    split: str,
    out: Path,
    pool: pa.Array,
    pool_size: int | None,
) -> tuple[int, int]:
    """``pools.parquet``, the qrels and ``collections.tsv`` of a split; returns the number
    of queries and of relevant (query, paper) pairs."""
    pool_table = pa.table(
        {
            "group": pa.array([LOCAL_GROUP] * len(pool), pa.string()),
            "rep": pa.array(np.full(len(pool), REP, dtype=np.int16)),
            "paper_id": pool,
        },
        schema=POOL_SCHEMA,
    )
    write_parquet(pool_table, out / "pools.parquet")
    chunks = (
        {
            qid: dict.fromkeys(cited, 1)
            for qid, cited in zip(
                batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True
            )
        }
        for batch in _batches(
            con, f"SELECT context_id, cited_ids FROM chosen_{split} ORDER BY context_id"
        )
    )
    write_qrels_chunks(chunks, out / "qrels" / f"{LOCAL_COLLECTION}.qrels")
    queries, relevant = con.execute(
        f"SELECT count(*), coalesce(sum(len(cited_ids)), 0) FROM chosen_{split}"
    ).fetchall()[0]
    requested = len(pool) if pool_size is None else pool_size
    info = CollectionInfo(LOCAL_SETUP, split, LOCAL_GROUP, REP, queries, len(pool), requested)
    write_collections([info], out)
    log.info("local %s: %d queries, pool of %d", split, queries, len(pool))
    return queries, int(relevant)


def _write_queries(
    con: duckdb.DuckDBPyConnection,
    split: str,
    out: Path,
    global_context: bool,
    papers: Path,
) -> None:
    """``queries.parquet``, ``query_ids.parquet`` and ``query_papers/`` (the query texts,
    as a papers folder), streamed from DuckDB."""
    con.execute(
        f"CREATE TEMP TABLE global_{split} AS "
        "SELECT paper_id AS citing_id, "
        "concat_ws(' ', nullif(trim(title), ''), nullif(trim(abstract), '')) AS global_context "
        f"FROM read_parquet(?) SEMI JOIN chosen_{split} c ON c.citing_id = paper_id",
        [str(papers / "*.parquet")],
    )
    missing = con.execute(
        f"SELECT count(DISTINCT citing_id), min(citing_id) FROM chosen_{split} "
        f"ANTI JOIN global_{split} USING (citing_id)"
    ).fetchall()[0]
    if missing[0]:
        raise InputDataError(
            f"citing paper {missing[1]} of the contexts is not in the corpus "
            f"({missing[0]} missing)",
            path=str(papers),
            field="paper_id",
        )
    ordered = f"FROM chosen_{split} ORDER BY context_id"
    write_parquet_stream(
        _batches(con, f"SELECT '{LOCAL_GROUP}' AS \"group\", context_id AS query_id {ordered}"),
        out / "queries.parquet",
    )
    abstract = "g.global_context" if global_context else "NULL::VARCHAR"
    write_parquet_stream(
        _batches(
            con,
            f"SELECT c.context_id AS paper_id, c.text AS title, {abstract} AS abstract, "
            f"c.granularity, c.citing_id FROM chosen_{split} c "
            f"JOIN global_{split} g USING (citing_id) ORDER BY c.context_id",
        ),
        out / QUERY_PAPERS / "part-00000.parquet",
    )
    write_parquet_stream(
        _batches(con, f"SELECT context_id AS paper_id {ordered}"), out / "query_ids.parquet"
    )
