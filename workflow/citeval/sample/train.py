"""The reranker's training split: queries of the years before the test's, and one shared
pool of candidates published up to the year before it (see :mod:`citeval.sample`)."""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow as pa

from citeval.collection_list import pool_group
from citeval.draws import SizeGuard, build_pool, seeded_rng
from citeval.errors import ConfigError
from citeval.io import write_json
from citeval.sample.citations import CitationData, read_excluded_ids
from citeval.sample.collection import Collection, qrels_for, write_split

log = logging.getLogger(__name__)


def sample_training(
    data: CitationData, *, seed: int, num_queries: int, pool_size: int, guard: SizeGuard
) -> Collection:
    """The reranker's training queries and their one pool (see :mod:`citeval.sample`)."""
    eligible = data.eligible_queries()
    size = guard.check("training queries", num_queries, len(eligible))
    if size == 0:
        raise ConfigError("no paper of the training years is an eligible query")
    order = seeded_rng(seed, "dataset", "train", "queries").permutation(len(eligible))[:size]
    queries = sorted(eligible.take(pa.array(order)).to_pylist())
    references = data.references(queries)
    positives = {cited for cited_ids in references.values() for cited in cited_ids}
    requested = pool_size
    pool_size = guard.check("training pool", pool_size, len(data.candidate_ids))
    if len(positives) > pool_size:
        message = (
            f"training pool: the queries cite {len(positives)} papers, more than the pool "
            "size; the pool holds only the cited papers"
        )
        if guard.policy == "fail":
            raise ConfigError(message + " (use fewer queries or a larger pool)")
        log.warning(message)
        guard.warnings.append(message)
    pool = build_pool(
        seeded_rng(seed, "dataset", "train", pool_group(requested), 0),
        positives,
        data.candidate_ids,
        set(queries),
        max(pool_size, len(positives)),
    )
    return Collection(
        pool_group(requested), 0, queries, pool, qrels_for(queries, references), requested
    )


def run_training_sampling(
    filtered: str | Path,
    corpus: str | Path,
    output_dir: str | Path,
    *,
    seed: int,
    query_year: int,
    years_before: int,
    num_queries: int,
    pool_size: int,
    min_query_references: int,
    on_too_small: str,
    exclude_query_ids: str | None,
    memory_limit: str,
    threads: int = 2,
) -> dict:
    """Sample the reranker's training split into ``output_dir``; return its report.

    ``query_year`` is the test queries' year: training queries come from the
    ``years_before`` years before it.
    """
    if years_before < 1:
        raise ConfigError(
            "rerank.train.years_before (--years-before) must be at least 1: "
            "training queries predate the test"
        )
    guard = SizeGuard(on_too_small)
    data = CitationData(
        Path(filtered),
        Path(corpus),
        query_year=query_year - 1,
        first_query_year=query_year - years_before,
        excluded_ids=read_excluded_ids(exclude_query_ids),
        min_query_references=min_query_references,
        memory_limit=memory_limit,
        threads=threads,
    )
    collection = sample_training(
        data, seed=seed, num_queries=num_queries, pool_size=pool_size, guard=guard
    )
    output = Path(output_dir)
    write_split("dataset", "train", [collection], output / "dataset-train")
    report = {
        "setup": "dataset",
        "split": "train",
        "seed": seed,
        "query_years": [query_year - years_before, query_year - 1],
        "candidates": len(data.candidate_ids),
        "eligible_queries": len(data.eligible_queries()),
        "queries": len(collection.queries),
        "relevant": sum(len(r) for r in collection.qrels.values()),
        "pool_size": len(collection.pool),
        "requested_pool_size": collection.requested_pool_size,
        "warnings": guard.warnings,
    }
    write_json(report, output / "train-report.json")
    return report
