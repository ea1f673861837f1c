"""Dataset-level sampling: one query set per split, and for every pool size and repetition
a pool of every paper the split's queries cite, filled up with random candidates."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from citeval.collection_list import pool_group
from citeval.draws import SizeGuard, build_pool, seeded_rng
from citeval.errors import ConfigError
from citeval.sample.citations import CitationData
from citeval.sample.collection import SPLITS, Collection, draw_disjoint_queries, qrels_for

log = logging.getLogger(__name__)


def sample_dataset_level(
    data: CitationData,
    *,
    seed: int,
    num_queries: dict[str, int],
    pool_sizes: Sequence[int],
    repetitions: int,
    guard: SizeGuard,
) -> dict[str, list[Collection]]:
    eligible = data.eligible_queries()
    queries = draw_disjoint_queries(
        seeded_rng(seed, "dataset", "queries"), eligible, num_queries, guard, "dataset-level"
    )
    collections: dict[str, list[Collection]] = {}
    for split in SPLITS:
        queries_of_split = queries[split]
        collections[split] = []
        # Every configured collection exists (citeval.collection_list.planned_collections),
        # even one sampling left without queries; only a split asked for none has none.
        if not num_queries[split]:
            continue
        references = data.references(queries_of_split)
        positives = {cited for cited_ids in references.values() for cited in cited_ids}
        query_set = set(queries_of_split)
        reps = repetitions if split == "test" else 1
        for requested in pool_sizes:
            group = pool_group(requested)
            # Uncited queries are never drawn, so they do not count as available.
            available = len(data.candidate_ids) - len(query_set - positives)
            size = guard.check(f"dataset-level {split} {group}", requested, available)
            if len(positives) > size:
                size = len(positives)
                message = (
                    f"dataset-level {split} {group}: the queries cite {len(positives)} papers, "
                    f"more than the pool size; the pool holds only the cited papers"
                )
                if guard.policy == "fail":
                    raise ConfigError(message + " (use fewer queries or a larger pool)")
                log.warning(message)
                guard.warnings.append(message)
            for rep in range(reps):
                rng = seeded_rng(seed, "dataset", split, group, rep)
                pool = build_pool(rng, positives, data.candidate_ids, query_set, size)
                collections[split].append(
                    Collection(
                        group,
                        rep,
                        queries_of_split,
                        pool,
                        qrels_for(queries_of_split, references),
                        requested,
                    )
                )
    return collections
