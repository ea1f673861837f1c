"""Training triplets (query, positive, negative) sampled from the training graph.

Two samplers, each giving ``per_query`` triplets per training query paper: positive i is
paired with negative i, and the negatives are ``hard_negatives`` hard ones followed by
easy ones (SciNCL §3.4 and SPECTER: 5 triplets, 2 hard and 3 easy negatives).

``scincl`` (Ostendorff et al. 2022, strategy I with filtered random easy negatives):
  the query's neighbours in the citation embedding, ranked by cosine similarity without
  the query itself, are n_1, n_2, ...; the positives are the ``per_query`` neighbours
  ending at rank ``k_positive`` (the paper's (k+ − c+, k+], 0-based the band
  [k_positive − per_query, k_positive)), the hard negatives the ``hard_negatives``
  neighbours ending at rank ``k_hard``, and the easy negatives are drawn at random from
  the papers outside the query's ``max(k_positive, k_hard)`` nearest neighbours.

``specter`` (Cohan et al. 2020): the positives are papers the query cites, the hard
  negatives papers cited by a paper the query cites but not by the query, and the easy
  negatives random papers the query does not cite.

Every paper of a triplet is *eligible*: a node of the training graph (so never an
evaluation query) that passed the prefilter (so it has a title and an abstract). Draws
use one seeded generator over sorted ids, so the same inputs and seed give the same
triplets. Shortfalls (a SPECTER query with fewer cited papers than ``per_query``, too few
citations of citations) are counted in the report, never silent: a query then gets fewer
triplets, and missing hard negatives are replaced by easy ones.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from citeval.errors import ConfigError, InputDataError
from citeval.io import write_json, write_parquet
from citeval.train.graph import Graph
from citeval.train.neighbours import CHUNK_QUERIES, BandSearch, SearchSettings

SAMPLERS = ("scincl", "specter")
TRIPLETS_FILE = "triplets.parquet"
REPORT_FILE = "triplets_report.json"


@dataclass(frozen=True, kw_only=True)
class TripletSettings:
    """``train.triplets`` of the config (bands: ``train.triplets.scincl``) and ``seed``.

    No field has a default here: the schema's are the only ones.
    """

    num_queries: int
    per_query: int
    hard_negatives: int
    k_positive: int
    k_hard: int
    seed: int

    def check(self, sampler: str) -> None:
        if sampler not in SAMPLERS:
            raise ConfigError(f"sampler must be one of {list(SAMPLERS)}, got {sampler!r}")
        if not 0 <= self.hard_negatives <= self.per_query:
            raise ConfigError(
                f"hard_negatives ({self.hard_negatives}) must be between 0 and per_query "
                f"({self.per_query})"
            )
        if sampler == "scincl" and not (
            self.per_query <= self.k_positive <= self.k_hard - self.hard_negatives
        ):
            raise ConfigError(
                f"scincl bands overlap or start below rank 1: positives end at k_positive="
                f"{self.k_positive} and take {self.per_query}, hard negatives end at k_hard="
                f"{self.k_hard} and take {self.hard_negatives}"
            )


@dataclass
class Triplets:
    """Sampled triplets (parallel lists) and what the sampler counted on the way."""

    query: list[str]
    positive: list[str]
    negative: list[str]
    kind: list[str]
    counts: Counter

    def table(self) -> pa.Table:
        return pa.table(
            {
                "query_id": pa.array(self.query, pa.string()),
                "positive_id": pa.array(self.positive, pa.string()),
                "negative_id": pa.array(self.negative, pa.string()),
                "negative_kind": pa.array(self.kind, pa.string()),
            }
        )


def read_eligible(filtered: str | os.PathLike, graph: Graph) -> np.ndarray:
    """Sorted node numbers of the graph's papers that passed the prefilter."""
    path = Path(filtered)
    if not path.is_file():
        raise InputDataError("not found", path=str(path))
    ids = pq.read_table(path, columns=["paper_id"]).column("paper_id").to_pylist()
    nodes = [graph.index[paper_id] for paper_id in ids if paper_id in graph.index]
    return np.array(sorted(nodes), dtype=np.int64)


def _random_outside(
    rng: np.random.Generator, eligible: np.ndarray, excluded: np.ndarray, count: int
) -> list[int]:
    """``count`` distinct eligible nodes (``eligible`` is sorted) outside ``excluded``
    (distinct node numbers), by rejection: the excluded nodes (one query's neighbourhood)
    are few next to the eligible ones."""
    # Sorted needles keep the binary searches in cache: thousands a query add up.
    excluded = np.sort(excluded)
    slots = np.minimum(np.searchsorted(eligible, excluded), len(eligible) - 1)
    available = len(eligible) - int((eligible[slots] == excluded).sum())
    if available < count:
        raise InputDataError(
            f"only {available} eligible papers are left for {count} easy negatives; the "
            "training graph is too small for these triplet settings"
        )
    chosen: list[int] = []
    while len(chosen) < count:
        draws = eligible[rng.integers(len(eligible), size=2 * count)]
        slots = np.minimum(np.searchsorted(excluded, draws), len(excluded) - 1)
        for node in draws[excluded[slots] != draws].tolist():
            if node not in chosen:
                chosen.append(node)
    return chosen[:count]


def _draw(rng: np.random.Generator, nodes: Sequence[int], count: int) -> list[int]:
    """Up to ``count`` of ``nodes`` (sorted first) without replacement."""
    ordered = sorted(nodes)
    if len(ordered) <= count:
        return ordered
    picks = rng.choice(len(ordered), size=count, replace=False)
    return [ordered[i] for i in sorted(picks)]


def sample_specter(graph: Graph, eligible: np.ndarray, settings: TripletSettings) -> Triplets:
    """SPECTER's citation triplets (see the module docstring)."""
    rng = np.random.default_rng(settings.seed)
    references = graph.references()
    is_eligible = np.zeros(graph.num_nodes, dtype=bool)
    is_eligible[eligible] = True

    def cited(node: int) -> np.ndarray:
        return references.indices[references.indptr[node] : references.indptr[node + 1]]

    cites_eligible = np.zeros(graph.num_nodes, dtype=bool)
    cites_eligible[graph.citing[is_eligible[graph.cited]]] = True
    candidates = eligible[cites_eligible[eligible]].tolist()
    queries = _draw(rng, candidates, settings.num_queries)
    # Shortfalls are reported when there are none, too.
    counts = Counter(candidate_queries=len(candidates), queries_short_of_positives=0)
    out = Triplets([], [], [], [], counts)
    for query in queries:
        query_cites = cited(query)
        positives = _draw(rng, [int(n) for n in query_cites if is_eligible[n]], settings.per_query)
        not_hard = {query, *query_cites.tolist()}
        second = {int(n) for c in query_cites for n in cited(int(c))}
        hard_pool = [n for n in second - not_hard if is_eligible[n]]
        hard = _draw(rng, hard_pool, settings.hard_negatives)
        excluded = np.fromiter(not_hard | set(hard), dtype=np.int64)
        easy = _random_outside(rng, eligible, excluded, settings.per_query - len(hard))
        _append(out, graph, query, positives, hard, easy)
    return out


def sample_scincl(
    graph: Graph,
    eligible: np.ndarray,
    embedding: np.ndarray,
    settings: TripletSettings,
    search: SearchSettings,
) -> tuple[Triplets, dict[str, Any]]:
    """SciNCL's k-NN triplets over the citation embedding (see the module docstring), and
    the report of the neighbour search (:class:`citeval.train.neighbours.BandSearch`)."""
    import faiss

    depth = max(settings.k_positive, settings.k_hard)
    easy_count = settings.per_query - settings.hard_negatives
    if depth + 1 + easy_count > len(eligible):
        raise ConfigError(
            f"train.triplets.scincl: k_hard={settings.k_hard} needs more than {depth} eligible "
            f"papers, the training graph has {len(eligible)}; lower k_positive and k_hard "
            "for this corpus (docs/train.md)"
        )
    if embedding.shape[0] != graph.num_nodes:
        raise InputDataError(
            f"the citation embedding has {embedding.shape[0]} rows, the graph "
            f"{graph.num_nodes} nodes; rerun `citeval.train embed-graph`"
        )
    rng = np.random.default_rng(settings.seed)
    queries = _draw(rng, eligible.tolist(), settings.num_queries)
    vectors = np.ascontiguousarray(embedding[eligible], dtype=np.float32)
    faiss.normalize_L2(vectors)
    # Rows of the eligible papers (sorted node numbers), not node numbers, from here on.
    rows = np.searchsorted(eligible, queries)
    depths = {"k_positive": settings.k_positive, "k_hard": settings.k_hard}
    bands = BandSearch(vectors, search, rows, depths, settings.seed)
    counts = Counter(
        candidate_queries=len(eligible), queries_short_of_positives=0, queries_short_of_neighbours=0
    )
    out = Triplets([], [], [], [], counts)
    positive_band = slice(settings.k_positive - settings.per_query, settings.k_positive)
    hard_band = slice(settings.k_hard - settings.hard_negatives, settings.k_hard)
    with tqdm(total=len(rows), desc="triplets", unit="query", mininterval=5) as bar:
        for start in range(0, len(rows), CHUNK_QUERIES):
            chunk = rows[start : start + CHUNK_QUERIES]
            for row, neighbours in zip(chunk, bands.neighbours(chunk, depth), strict=True):
                found = neighbours[neighbours >= 0]
                if len(found) < depth:
                    out.counts["queries_short_of_neighbours"] += 1
                positives = neighbours[positive_band]
                positives = eligible[positives[positives >= 0]].tolist()
                hard = neighbours[hard_band]
                hard = eligible[hard[hard >= 0]].tolist()
                excluded = eligible[np.append(found, row)]
                easy = _random_outside(rng, eligible, excluded, settings.per_query - len(hard))
                _append(out, graph, int(eligible[row]), positives, hard, easy)
            bar.update(len(chunk))
    return out, bands.report()


def _append(
    out: Triplets, graph: Graph, query: int, positives: list[int], hard: list[int], easy: list[int]
) -> None:
    negatives = [(node, "hard") for node in hard] + [(node, "easy") for node in easy]
    if len(positives) < len(negatives):
        out.counts["queries_short_of_positives"] += 1
    for positive, (negative, kind) in zip(positives, negatives, strict=False):
        out.query.append(graph.ids[query])
        out.positive.append(graph.ids[positive])
        out.negative.append(graph.ids[negative])
        out.kind.append(kind)
        out.counts[f"{kind}_negatives"] += 1
    out.counts["queries"] += 1


def write_triplets(
    sampler: str,
    graph_dir: str | os.PathLike,
    filtered: str | os.PathLike,
    settings: TripletSettings,
    output_dir: str | os.PathLike,
    embedding_dir: str | os.PathLike | None = None,
    search: SearchSettings | None = None,
) -> dict[str, Any]:
    """Sample with ``sampler`` and write ``triplets.parquet`` and its report; ``scincl``
    needs the citation embedding's folder and the neighbour search's settings."""
    from citeval.train.embed import load_embedding

    settings.check(sampler)
    graph = Graph(graph_dir)
    eligible = read_eligible(filtered, graph)
    searched: dict[str, Any] = {}
    if sampler == "scincl":
        if embedding_dir is None or search is None:
            raise ConfigError("the scincl sampler needs the citation embedding and its search")
        embedding = load_embedding(embedding_dir)
        triplets, searched = sample_scincl(graph, eligible, embedding, settings, search)
    else:
        triplets = sample_specter(graph, eligible, settings)
    if not triplets.query:
        raise InputDataError(
            f"the {sampler} sampler found no triplet in the training graph "
            f"({len(eligible)} eligible papers)",
            path=str(graph_dir),
        )
    output = Path(output_dir)
    write_parquet(triplets.table(), output / TRIPLETS_FILE)
    report = {
        "sampler": sampler,
        "settings": asdict(settings),
        "eligible_papers": len(eligible),
        "triplets": len(triplets.query),
        **{key: int(value) for key, value in sorted(triplets.counts.items())},
    }
    if searched:
        report["neighbour_search"] = searched
    write_json(report, output / REPORT_FILE)
    return report
