"""The training queries' nearest neighbours in the citation embedding: SciNCL's bands.

The bands reach far down the ranking (hard negatives at rank 4,000 by default), so the
search is sized by the work it does: an exact inner-product index (Faiss ``IndexFlatIP``
over the unit-norm vectors) while queries × eligible papers stays within
:data:`EXACT_PAIRS`, an IVF index beyond it (``IndexIVFFlat`` with ``√n`` lists, long
ones, since each query needs thousands of neighbours). ``index`` in
``train.triplets.scincl`` overrides the choice.

An IVF index is held to a recall: on ``recall_sample`` seeded queries, its neighbours are
compared with exact search's, and the lists searched a query (``nprobe``) double from 1
until the recall at both band depths (k_positive and k_hard) reaches ``min_recall``, or
every list is searched. The calibration and the recall it reached go into the triplets
report.

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
    """``index``, ``min_recall`` and ``recall_sample`` of ``train.triplets.scincl``.

    No field has a default here: the schema's are the only ones.
    """

    index: str
    min_recall: float
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
    """Nearest neighbours of rows of ``vectors`` (unit-norm float32) among all its rows.

    ``query_rows`` are the rows that will be searched and ``depths`` the band depths
    (name -> k) an IVF index is calibrated at (module docstring).
    """

    def __init__(
        self,
        vectors: np.ndarray,
        settings: SearchSettings,
        query_rows: np.ndarray,
        depths: dict[str, int],
        seed: int,
    ) -> None:
        import faiss

        from citeval.faiss_index import ivf_training_rows, trained_ivf_index

        settings.check()
        started = time.perf_counter()
        self.vectors = vectors
        self.kind = chosen_index(settings, len(query_rows), len(vectors))
        self.params: dict[str, Any] = {}
        self.search_seconds = 0.0
        if self.kind == "flat":
            self.index = faiss.IndexFlatIP(vectors.shape[1])
            self.index.add(vectors)
        else:
            nlist = max(1, round(math.sqrt(len(vectors))))
            sample = ivf_training_rows(len(vectors), nlist, TRAIN_POINTS_PER_LIST, seed)
            self.index = trained_ivf_index(vectors[sample], nlist, "cosine", seed)
            self.index.add(vectors)
            self.params = {"nlist": nlist, "train": len(sample)}
            self._calibrate(query_rows, depths, settings, seed)
        self.build_seconds = time.perf_counter() - started
        self.search_seconds = 0.0  # the calibration's searches count as building
        LOG.info("%s index over %d papers in %.1f s", self.kind, len(vectors), self.build_seconds)

    def _calibrate(
        self, rows: np.ndarray, depths: dict[str, int], settings: SearchSettings, seed: int
    ) -> None:
        """Double ``nprobe`` from 1 until the recall at every depth reaches the minimum."""
        import faiss

        from citeval.faiss_index import recall_at_k

        rng = np.random.default_rng(seed)
        checked = np.sort(rng.choice(rows, size=min(settings.recall_sample, len(rows)),
                                     replace=False))  # fmt: skip
        depth = max(depths.values())
        _, exact = faiss.knn(self.vectors[checked], self.vectors, depth + 1)
        exact = without_self(exact, checked, depth)
        nlist, nprobe, trials = self.params["nlist"], 1, []
        while True:
            self.index.nprobe = nprobe
            found = self.neighbours(checked, depth)
            reached = {
                f"recall_at_{name}": float(recall_at_k(found, exact, k).mean())
                for name, k in depths.items()
            }
            recall = {name: round(value, 4) for name, value in reached.items()}
            trials.append({"nprobe": nprobe, **recall})
            if min(reached.values()) >= settings.min_recall or nprobe == nlist:
                break
            nprobe = min(2 * nprobe, nlist)
        LOG.info("IVF: %d of %d lists a query for a recall of %s", nprobe, nlist, recall)
        self.params.update(nprobe=nprobe, recall_queries=len(checked), **recall, calibration=trials)

    def neighbours(self, rows: np.ndarray, depth: int) -> np.ndarray:
        """``(len(rows), depth)`` rows of ``vectors`` nearest each of ``rows``, best first,
        without the row itself; -1 where the index found fewer."""
        started = time.perf_counter()
        _, found = self.index.search(self.vectors[rows], depth + 1)
        self.search_seconds += time.perf_counter() - started
        return without_self(found, rows, depth)

    def report(self) -> dict:
        """What was searched and how long it took; for an IVF index, its calibration and
        the recall it reached against exact search."""
        return {
            "index": self.kind,
            **self.params,
            "papers": len(self.vectors),
            "build_seconds": round(self.build_seconds, 3),
            "search_seconds": round(self.search_seconds, 3),
        }
