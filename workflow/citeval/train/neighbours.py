"""The training queries' nearest neighbours in the citation embedding: SciNCL's bands.

The bands reach far down the ranking (hard negatives at rank 4,000 by default), so the
search is sized by the work it does: an exact inner-product index (Faiss ``IndexFlatIP``
over the unit-norm vectors) while queries × eligible papers stays within
:data:`EXACT_PAIRS`, an IVF index beyond it (``IndexIVFFlat`` with ``√n`` lists, long
ones, since each query needs thousands of neighbours; ``nprobe`` of them are searched).
``index`` in ``train.triplets.scincl`` overrides the choice. Where the IVF index is used,
its recall@k against exact search on a seeded sample of the queries goes into the
triplets report, at the positives' depth and at the hard negatives'.

Faiss' GPU indexes return at most 2,048 neighbours a query, fewer than the default
hard-negative depth, so the search runs on the CPU.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from citeval.errors import ConfigError

LOG = logging.getLogger(__name__)
INDEXES = ("auto", "flat", "ivf")
# Exact search up to this many query-paper pairs: 1.3-1.6 ns a pair on two cores at 64
# dimensions, so SciNCL's setting on S2ORC (about 1.8e12 pairs) is exact. At these depths
# an IVF index must scan much of the corpus to find most neighbours (docs/train.md).
EXACT_PAIRS = 10**13
# k-means points per IVF list: above Faiss' floor of 39, below its default sample of 256,
# which costs minutes at millions of papers.
TRAIN_POINTS_PER_LIST = 64
# Queries searched at a time: results of depth 4,000 cost 48 KB a query.
CHUNK_QUERIES = 2048


@dataclass(frozen=True, kw_only=True)
class SearchSettings:
    """``index``, ``ivf_nprobe`` and ``recall_sample`` of ``train.triplets.scincl``.

    No field has a default here: the schema's are the only ones.
    """

    index: str
    ivf_nprobe: int
    recall_sample: int

    def check(self) -> None:
        if self.index not in INDEXES:
            raise ConfigError(f"train.triplets.scincl.index must be one of {INDEXES}")


def chosen_index(settings: SearchSettings, queries: int, papers: int) -> str:
    if settings.index != "auto":
        return settings.index
    return "flat" if queries * papers <= EXACT_PAIRS else "ivf"


def without_self(found: np.ndarray, rows: np.ndarray, depth: int) -> np.ndarray:
    """The first ``depth`` neighbours of each row of ``found`` that are not the query's own
    row (``rows``): ``found`` has ``depth + 1`` columns, so one is dropped from each row,
    the query where it was found, else the last."""
    drop = found == rows[:, None]
    missing = ~drop.any(axis=1)
    drop[missing, -1] = True
    return found[~drop].reshape(len(found), depth)


class BandSearch:
    """Nearest neighbours of rows of ``vectors`` (unit-norm float32) among all its rows."""

    def __init__(
        self, vectors: np.ndarray, settings: SearchSettings, queries: int, seed: int
    ) -> None:
        import faiss

        from citeval.faiss_index import ivf_training_rows, trained_ivf_index

        settings.check()
        started = time.perf_counter()
        self.vectors = vectors
        self.kind = chosen_index(settings, queries, len(vectors))
        self.params: dict[str, Any] = {}
        if self.kind == "flat":
            self.index = faiss.IndexFlatIP(vectors.shape[1])
        else:
            nlist = max(1, round(math.sqrt(len(vectors))))
            sample = ivf_training_rows(len(vectors), nlist, TRAIN_POINTS_PER_LIST, seed)
            self.index = trained_ivf_index(vectors[sample], nlist, "cosine", seed)
            self.index.nprobe = min(settings.ivf_nprobe, nlist)
            self.params = {"nlist": nlist, "nprobe": self.index.nprobe, "train": len(sample)}
        self.index.add(vectors)
        self.build_seconds = time.perf_counter() - started
        self.search_seconds = 0.0
        LOG.info("%s index over %d papers in %.1f s", self.kind, len(vectors), self.build_seconds)

    def neighbours(self, rows: np.ndarray, depth: int) -> np.ndarray:
        """``(len(rows), depth)`` rows of ``vectors`` nearest each of ``rows``, best first,
        without the row itself; -1 where the index found fewer."""
        started = time.perf_counter()
        _, found = self.index.search(self.vectors[rows], depth + 1)
        self.search_seconds += time.perf_counter() - started
        return without_self(found, rows, depth)

    def report(self, rows: np.ndarray, depths: dict[str, int], sample: int, seed: int) -> dict:
        """What was searched, how long it took, and for an IVF index its recall@k of each
        of ``depths`` (name -> k) against exact search on ``sample`` of ``rows``."""
        import faiss

        from citeval.faiss_index import recall_at_k

        report: dict[str, Any] = {
            "index": self.kind,
            **self.params,
            "papers": len(self.vectors),
            "build_seconds": round(self.build_seconds, 3),
            "search_seconds": round(self.search_seconds, 3),
        }
        if self.kind == "flat" or sample == 0:
            return report
        rng = np.random.default_rng(seed)
        checked = np.sort(rng.choice(rows, size=min(sample, len(rows)), replace=False))
        depth = max(depths.values())
        approximate = self.neighbours(checked, depth)
        _, exact = faiss.knn(self.vectors[checked], self.vectors, depth + 1)
        exact = without_self(exact, checked, depth)
        report["recall_queries"] = len(checked)
        for name, k in depths.items():
            recall = recall_at_k(approximate, exact, k).mean()
            report[f"recall_at_{name}"] = round(float(recall), 4)
        return report
