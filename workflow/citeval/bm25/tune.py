"""BM25's k1 and b, grid-searched on the validation collections."""

from __future__ import annotations

import contextlib
import logging
import math
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from citeval import impacts
from citeval.bm25.index import build_pool_index
from citeval.bm25.papers import connect, load_queries
from citeval.bm25.search import check_index_group, check_searcher, search_queries
from citeval.collection_list import listing_path, read_collections
from citeval.errors import ConfigError, InputDataError
from citeval.trec import read_qrels

LOG = logging.getLogger(__name__)


def _grid(values: Sequence[float], name: str, upper: float | None = None) -> list[float]:
    grid = list(dict.fromkeys(float(v) for v in values))
    if not grid:
        raise ConfigError(f"{name} is empty")
    for value in grid:
        if not math.isfinite(value) or value < 0 or (upper is not None and value > upper):
            bound = f"in [0, {upper}]" if upper is not None else ">= 0"
            raise ConfigError(f"{name} values must be {bound}, got {value}")
    return grid


def choose_best(grid_scores: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The grid point with the highest ``score``; the first in grid order on ties.

    NaN scores never win.
    """
    best: dict[str, Any] | None = None
    for point in grid_scores:
        score = point["score"]
        if math.isnan(score):
            continue
        if best is None or score > best["score"]:
            best = point
    if best is None:
        # A collection whose score is NaN at every point (its qrels match none of its
        # queries) makes every mean NaN: name it.
        nan_everywhere = sorted(
            name
            for name in (grid_scores[0].get("per_collection", {}) if grid_scores else {})
            if all(math.isnan(point["per_collection"][name]) for point in grid_scores)
        )
        raise ConfigError(
            "every grid point scored NaN; nothing to choose"
            + (f" (NaN at every point: {nan_everywhere})" if nan_everywhere else "")
        )
    return best


def tune(
    papers_dir: str | os.PathLike,
    analyzed_dir: str | os.PathLike,
    sample_dir: str | os.PathLike,
    k1_grid: Sequence[float],
    b_grid: Sequence[float],
    *,
    metric: str,
    k: int,
    searcher_kind: str,
    index_root: str | os.PathLike | None = None,
    collections: Sequence[str] | None = None,
    threads: int = 1,
    batch_size: int = 256,
    memory_limit: str | None = None,
    tmp_dir: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """Grid-search BM25's (k1, b) on the collections of one validation sample.

    ``sample_dir`` is ``samples/<setup>-<split>/`` (collections.tsv, queries.parquet,
    pools.parquet, qrels/). Indexes come from ``<index_root>/<group>.rep<rep>``, or, with
    no ``index_root``, are built in a temporary folder under ``tmp_dir`` (default: the
    system's) and deleted after use.
    ``collections`` (names ``<group>.rep<rep>``) restricts the collections used.

    A grid point's score is the mean over collections of the mean ``metric`` over the
    collection's judged queries (a query with no hits counts as 0), so every pool or field
    weighs the same, as in the paper's tables. Grid order is k1 outer, b inner, as given;
    ties go to the first point. ``searcher_kind`` is ``impacts`` or ``lucene``
    (:func:`citeval.impacts.open_searcher`).
    """
    from citeval import metrics

    try:
        measure = str(metrics.parse_measure(metric))
    except ValueError as error:
        raise ConfigError(f"--metric: {error}") from error
    k1_values = _grid(k1_grid, "k1 grid")
    b_values = _grid(b_grid, "b grid", upper=1.0)
    sample = Path(sample_dir)
    rows = read_collections(sample)
    if collections:
        wanted = set(collections)
        unknown = wanted - {r.name for r in rows}
        if unknown:
            raise ConfigError(f"collections not in {listing_path(sample)}: {sorted(unknown)}")
        rows = [r for r in rows if r.name in wanted]
    without_queries = [r.name for r in rows if r.n_queries == 0]
    if without_queries:
        LOG.warning("%s have no queries: tuning leaves them out", ", ".join(without_queries))
        rows = [r for r in rows if r.n_queries > 0]
    if not rows:
        raise InputDataError(
            "no collection with queries to tune on: raise sampling.validation sizes or set "
            "bm25.tune.enabled: false",
            path=str(listing_path(sample)),
        )

    points = [(k1, b) for k1 in k1_values for b in b_values]
    per_point: list[dict[str, float]] = [{} for _ in points]
    con = connect(threads, memory_limit)
    query_cache: dict[str, list[tuple[str, str]]] = {}
    names = [r.name for r in rows]
    for row, name in zip(rows, names, strict=True):
        group, rep = row.group, row.rep
        qrels = read_qrels(sample / "qrels" / f"{name}.qrels")
        if group not in query_cache:
            query_cache[group] = load_queries(con, papers_dir, sample / "queries.parquet", group)
        queries = [(qid, text) for qid, text in query_cache[group] if qid in qrels]
        judged = sorted(qrels)
        with contextlib.ExitStack() as stack:
            if index_root is not None:
                index_dir = Path(index_root) / name
                check_index_group(index_dir, group, rep)
                check_searcher(index_dir, searcher_kind)
            else:
                if tmp_dir is not None:
                    Path(tmp_dir).mkdir(parents=True, exist_ok=True)
                tmp = stack.enter_context(
                    tempfile.TemporaryDirectory(prefix=f".bm25-tune-{name}.", dir=tmp_dir)
                )
                index_dir = Path(tmp) / "index"
                build_pool_index(
                    analyzed_dir,
                    sample / "pools.parquet",
                    group,
                    rep,
                    index_dir,
                    threads,
                    memory_limit,
                    lucene_papers_dir=papers_dir if searcher_kind == "lucene" else None,
                )
            # Opened at the first grid point; every point sets its own (k1, b) below.
            first_k1, first_b = points[0]
            searcher = stack.enter_context(
                impacts.open_searcher(index_dir, k1=first_k1, b=first_b, searcher=searcher_kind)
            )
            LOG.info(
                "tuning on %s: %d queries, %d documents", name, len(queries), searcher.num_docs
            )
            for i, (k1, b) in enumerate(tqdm(points, desc=name, unit="point")):
                searcher.set_bm25(k1, b)
                run = search_queries(
                    searcher, queries, k, batch_size, progress=False, threads=threads
                )
                values = metrics.evaluate(run, qrels, [measure])
                mean = metrics.mean_over_queries(
                    values, queries=judged, missing_as_zero=True, measures=[measure]
                )[measure]
                per_point[i][name] = mean
                LOG.debug("%s k1=%s b=%s %s=%.4f", name, k1, b, measure, mean)

    grid = [
        {
            "k1": k1,
            "b": b,
            "score": math.fsum(scores[n] for n in names) / len(names),
            "per_collection": {n: scores[n] for n in names},
        }
        for (k1, b), scores in zip(points, per_point, strict=True)
    ]
    best = choose_best(grid)
    LOG.info("best: k1=%s b=%s %s=%.4f", best["k1"], best["b"], measure, best["score"])
    return {
        "k1": best["k1"],
        "b": best["b"],
        "score": best["score"],
        "metric": measure,
        "k": k,
        "k1_grid": k1_values,
        "b_grid": b_values,
        "collections": names,
        "aggregate": "mean over collections of the mean over judged queries",
        "grid": grid,
    }
