"""The test and validation splits of one setup (dataset- or field-level), sampled and
written with their report."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from citeval.draws import SizeGuard
from citeval.io import write_json
from citeval.sample.citations import CitationData, read_excluded_ids
from citeval.sample.collection import SPLITS, write_split
from citeval.sample.dataset import sample_dataset_level
from citeval.sample.field import sample_field_level


def run_sampling(
    filtered: str | Path,
    corpus: str | Path,
    output_dir: str | Path,
    *,
    setup: str,
    seed: int,
    query_year: int,
    num_queries: int,
    num_valid_queries: int,
    repetitions: int,
    min_query_references: int,
    on_too_small: str,
    exclude_query_ids: str | None,
    memory_limit: str,
    threads: int = 2,
    pool_sizes: Sequence[int] | None = None,
    fields: Sequence[str] | None = None,
    pool_size: int | None = None,
) -> dict:
    """Sample the test and validation splits of ``setup`` into ``output_dir``; return the
    report.

    ``setup`` is ``dataset`` (which takes ``pool_sizes``) or ``field`` (which takes
    ``fields`` and ``pool_size``); ``num_queries`` and ``num_valid_queries`` count per field
    for field-level.
    """
    if setup not in ("dataset", "field"):
        raise ValueError(f"unknown setup {setup!r}; expected 'dataset' or 'field'")
    guard = SizeGuard(on_too_small)
    excluded = read_excluded_ids(exclude_query_ids)
    data = CitationData(
        Path(filtered),
        Path(corpus),
        query_year=query_year,
        excluded_ids=excluded,
        min_query_references=min_query_references,
        memory_limit=memory_limit,
        threads=threads,
    )
    counts = {"test": num_queries, "valid": num_valid_queries}
    if setup == "dataset":
        if pool_sizes is None:
            raise ValueError("dataset-level sampling needs pool_sizes")
        collections = sample_dataset_level(
            data,
            seed=seed,
            num_queries=counts,
            pool_sizes=pool_sizes,
            repetitions=repetitions,
            guard=guard,
        )
    else:
        if fields is None or pool_size is None:
            raise ValueError("field-level sampling needs fields and pool_size")
        collections = sample_field_level(
            data,
            seed=seed,
            fields=fields,
            queries_per_field=counts,
            pool_size=pool_size,
            repetitions=repetitions,
            guard=guard,
        )
    output = Path(output_dir)
    for split in SPLITS:
        write_split(setup, split, collections[split], output / f"{setup}-{split}")
    report = {
        "setup": setup,
        "seed": seed,
        "query_year": query_year,
        "excluded_query_ids": len(excluded),
        "candidates": len(data.candidate_ids),
        "eligible_queries": len(data.eligible_queries()),
        "warnings": guard.warnings,
        "collections": {
            split: [
                {
                    "group": c.group,
                    "rep": c.rep,
                    "queries": len(c.queries),
                    "relevant": sum(len(r) for r in c.qrels.values()),
                    "pool_size": len(c.pool),
                    "requested_pool_size": c.requested_pool_size,
                }
                for c in sorted(collections[split], key=lambda c: (c.group, c.rep))
            ]
            for split in SPLITS
        },
    }
    write_json(report, output / f"{setup}-report.json")
    return report
