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
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, NamedTuple

import duckdb
import numpy as np
import pyarrow as pa

from citeval.collection_list import CollectionInfo, write_collections
from citeval.errors import InputDataError
from citeval.io import write_json, write_parquet
from citeval.layout import LOCAL_COLLECTION, LOCAL_GROUP, LOCAL_SETUP, QUERY_PAPERS
from citeval.sample import POOL_SCHEMA, SizeGuard, build_pool, draw_sorted, seeded_rng
from citeval.trec import write_qrels

log = logging.getLogger(__name__)

SPLITS = ("test", "valid", "train")
EVALUATED = ("test", "valid")


class Query(NamedTuple):
    context_id: str
    citing_id: str
    granularity: str
    text: str
    cited_ids: list[str]


REP = 0


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
    ).fetchone()
    guard = SizeGuard(on_too_small)
    report: dict[str, Any] = {
        "query_year": query_year,
        "seed": seed,
        "valid_fraction": valid_fraction,
        "global_context": global_context,
        "contexts": n_all,
        "contexts_after_query_year": n_all
        - con.execute("SELECT count(*) FROM kept_contexts").fetchone()[0],
        "candidates": n_candidates,
        "query_year_contexts": _counts(con, "year = ?", query_year),
        "training_contexts": _counts(con, "year < ?", query_year),
        "splits": {},
        "warnings": guard.warnings,
    }
    query_citing = _citing(con, "year = ?", query_year)
    by_split = {
        **split_citing_papers(query_citing, valid_fraction, seed),
        "train": set(_citing(con, "year < ?", query_year)),
    }
    requested = {"test": num_queries, "valid": num_valid_queries, "train": num_train_queries}
    chosen = {
        split: _choose_queries(con, split, sorted(by_split[split]), requested[split], seed, guard)
        for split in SPLITS
    }
    evaluated = {
        paper for split in EVALUATED for row in chosen[split][0] for paper in row.cited_ids
    }
    pools = {"test": _pool(con, evaluated, pool_size, seed, guard, "local-pool")}
    pools["valid"] = pools["test"]
    trained = {paper for row in chosen["train"][0] for paper in row.cited_ids}
    pools["train"] = _pool(con, trained, pool_size, seed, guard, "local-train-pool")
    out = Path(output_dir)
    for split in SPLITS:
        rows, granularities = chosen[split]
        split_dir = out / f"{LOCAL_SETUP}-{split}"
        _write_queries(con, split_dir, rows, global_context, Path(papers))
        _write_collection(split_dir, split, rows, pools[split], pool_size)
        relevant = sum(len(row.cited_ids) for row in rows)
        report["splits"][split] = {
            "citing_papers": len(by_split[split]),
            "queries": len(rows),
            "relevant_per_query": relevant / len(rows) if rows else 0.0,
            "granularities": granularities,
            "pool_size": len(pools[split]),
        }
    write_json(report, out / f"{LOCAL_SETUP}-report.json")
    return report


def _counts(con: duckdb.DuckDBPyConnection, where: str, year: int) -> dict[str, int]:
    """Contexts (and cited ids) of some years: read, and left with a cited candidate."""
    read, cited_read = con.execute(
        f"SELECT count(*), coalesce(sum(len(cited_ids)), 0) FROM kept_contexts WHERE {where}",
        [year],
    ).fetchone()
    kept, cited_kept = con.execute(
        f"SELECT count(*), coalesce(sum(len(cited_ids)), 0) FROM queries WHERE {where}", [year]
    ).fetchone()
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
    citing_ids: list[str],
    requested: int | None,
    seed: int,
    guard: SizeGuard,
) -> tuple[list[Query], dict[str, dict[str, int]]]:
    """The split's contexts (``requested`` of each granularity, or all), by context id."""
    con.register("split_citing", pa.table({"citing_id": pa.array(citing_ids, pa.string())}))
    rows = [
        Query(*row)
        for row in con.execute(
            "SELECT context_id, citing_id, granularity, text, cited_ids FROM queries "
            "SEMI JOIN split_citing USING (citing_id) ORDER BY context_id"
        ).fetchall()
    ]
    chosen: list[Query] = []
    granularities: dict[str, dict[str, int]] = {}
    for granularity in sorted({row.granularity for row in rows}):
        ids = pa.array(
            [row.context_id for row in rows if row.granularity == granularity], pa.string()
        )
        size = len(ids)
        if requested is not None:
            what = f"local {split} contexts of granularity {granularity}"
            size = guard.check(what, requested, len(ids))
        rng = seeded_rng(seed, "local-queries", split, granularity)
        keep = set(draw_sorted(rng, ids, size))
        chosen += [row for row in rows if row.context_id in keep]
        granularities[granularity] = {"available": len(ids), "queries": size}
    chosen.sort(key=lambda row: row.context_id)
    return chosen, granularities


def _pool(
    con: duckdb.DuckDBPyConnection,
    positives: set[str],
    pool_size: int | None,
    seed: int,
    guard: SizeGuard,
    key: str,
) -> pa.Array:
    """Every candidate, or ``pool_size`` of them that hold every cited paper of the
    queries (the test and validation splits rank the same pool)."""
    candidates = con.sql("SELECT paper_id FROM candidates").to_arrow_table().column(0)
    candidates = candidates.combine_chunks()
    if pool_size is None:
        return candidates
    if len(positives) > pool_size:
        guard.warnings.append(
            f"{key}: the queries cite {len(positives)} papers, more than pool_size "
            f"{pool_size}; the pool holds them all"
        )
    size = max(pool_size, len(positives))
    return build_pool(seeded_rng(seed, key), positives, candidates, set(), size)


def _write_collection(
    out: Path, split: str, chosen: list[Query], pool: pa.Array, pool_size: int | None
) -> None:
    """``pools.parquet``, the qrels and ``collections.tsv`` of a split."""
    pool_table = pa.table(
        {
            "group": pa.array([LOCAL_GROUP] * len(pool), pa.string()),
            "rep": pa.array(np.full(len(pool), REP, dtype=np.int16)),
            "paper_id": pool,
        },
        schema=POOL_SCHEMA,
    )
    write_parquet(pool_table, out / "pools.parquet")
    qrels = {row.context_id: dict.fromkeys(row.cited_ids, 1) for row in chosen}
    write_qrels(qrels, out / "qrels" / f"{LOCAL_COLLECTION}.qrels")
    requested = len(pool) if pool_size is None else pool_size
    info = CollectionInfo(LOCAL_SETUP, split, LOCAL_GROUP, REP, len(chosen), len(pool), requested)
    write_collections([info], out)
    log.info("local %s: %d queries, pool of %d", split, len(chosen), len(pool))


def _write_queries(
    con: duckdb.DuckDBPyConnection,
    out: Path,
    chosen: list[Query],
    global_context: bool,
    papers: Path,
) -> None:
    """``queries.parquet`` and ``query_papers/`` (the query texts, as a papers folder)."""
    write_parquet(
        pa.table(
            {
                "group": pa.array([LOCAL_GROUP] * len(chosen), pa.string()),
                "query_id": pa.array([row.context_id for row in chosen], pa.string()),
            }
        ),
        out / "queries.parquet",
    )
    citing = sorted({row.citing_id for row in chosen})
    con.register("chosen", pa.table({"citing_id": pa.array(citing, pa.string())}))
    globals_ = dict(
        con.execute(
            "SELECT paper_id, concat_ws(' ', nullif(trim(title), ''), nullif(trim(abstract), '')) "
            "FROM read_parquet(?) SEMI JOIN chosen c ON c.citing_id = paper_id",
            [str(papers / "*.parquet")],
        ).fetchall()
    )
    missing = sorted({row.citing_id for row in chosen} - set(globals_))
    if missing:
        raise InputDataError(
            f"citing paper {missing[0]} of the contexts is not in the corpus "
            f"({len(missing)} missing)",
            path=str(papers),
            field="paper_id",
        )
    table = pa.table(
        {
            "paper_id": pa.array([row.context_id for row in chosen], pa.string()),
            "title": pa.array([row.text for row in chosen], pa.string()),
            "abstract": pa.array(
                [globals_[row.citing_id] if global_context else None for row in chosen], pa.string()
            ),
            "granularity": pa.array([row.granularity for row in chosen], pa.string()),
            "citing_id": pa.array([row.citing_id for row in chosen], pa.string()),
        }
    )
    write_parquet(table, out / QUERY_PAPERS / "part-00000.parquet")
    write_parquet(pa.table({"paper_id": table.column("paper_id")}), out / "query_ids.parquet")
