"""A split's collections: what each sampler returns, the query draw they share, and how a
split is written (docs/contracts.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from citeval.collection_list import CollectionInfo, collection_name, write_collections
from citeval.draws import POOL_SCHEMA, SizeGuard
from citeval.io import write_parquet
from citeval.trec import write_qrels

SPLITS = ("test", "valid")


@dataclass
class Collection:
    """One (group, repetition) of a split: its pool and the qrels of its queries."""

    group: str
    rep: int
    queries: list[str]
    pool: pa.Array
    qrels: dict[str, dict[str, int]]
    requested_pool_size: int


def qrels_for(queries: Sequence[str], references: dict[str, list[str]]) -> dict:
    return {query_id: dict.fromkeys(references[query_id], 1) for query_id in queries}


def draw_disjoint_queries(
    rng: np.random.Generator,
    eligible: pa.Array,
    counts: dict[str, int],
    guard: SizeGuard,
    what: str,
) -> dict[str, list[str]]:
    """Draw disjoint test and validation queries from ``eligible`` in one permutation."""
    available = len(eligible)
    sizes = {}
    for split in SPLITS:
        sizes[split] = guard.check(f"{what} {split} queries", counts[split], available)
        available -= sizes[split]
    order = rng.permutation(len(eligible))
    test_end = sizes["test"]
    picks = {
        "test": order[:test_end],
        "valid": order[test_end : test_end + sizes["valid"]],
    }
    return {split: sorted(eligible.take(pa.array(idx)).to_pylist()) for split, idx in picks.items()}


def write_split(setup: str, split: str, collections: list[Collection], out_dir: Path) -> None:
    """Write one split's manifests, qrels and collection list (see docs/contracts.md)."""
    query_rows = sorted({(c.group, q) for c in collections for q in c.queries})
    write_parquet(
        pa.table(
            {
                "group": pa.array([g for g, _ in query_rows], pa.string()),
                "query_id": pa.array([q for _, q in query_rows], pa.string()),
            }
        ),
        out_dir / "queries.parquet",
    )
    ordered = sorted(collections, key=lambda c: (c.group, c.rep))
    pool_table = pa.Table.from_batches(
        [
            pa.record_batch(
                [
                    pa.array([c.group] * len(c.pool), pa.string()),
                    pa.array(np.full(len(c.pool), c.rep, dtype=np.int16)),
                    c.pool,
                ],
                schema=POOL_SCHEMA,
            )
            for c in ordered
        ],
        schema=POOL_SCHEMA,
    )
    write_parquet(pool_table, out_dir / "pools.parquet")
    for c in ordered:
        write_qrels(c.qrels, out_dir / "qrels" / f"{collection_name(c.group, c.rep)}.qrels")
    write_collections(
        (
            CollectionInfo(
                setup, split, c.group, c.rep, len(c.queries), len(c.pool), c.requested_pool_size
            )
            for c in ordered
        ),
        out_dir,
    )
