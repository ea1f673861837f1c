"""Citation embeddings of the training graph's nodes, for SciNCL's k-NN sampling.

SciNCL trains PyTorch-BigGraph on S2ORC's citations; BigGraph (last released in 2019)
does not install beside the pinned torch, so the embedding comes from scikit-network's
``RandomProjection``: iterated random projections of the symmetric adjacency matrix
(RandNE, Zhang et al. 2018), a graph embedding that scales to billions of edges on one
machine and is deterministic for a seed. Its vectors are unit-norm, so the k-NN search
(:mod:`citeval.train.triplets`) ranks neighbours by cosine similarity.

Writes ``embedding.npy`` (float32, one row per node of ``nodes.parquet``) and
``embedding.json`` (settings and timing).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from citeval.io import atomic_path, write_json
from citeval.train.graph import Graph

LOG = logging.getLogger(__name__)
EMBEDDING_FILE = "embedding.npy"
META_FILE = "embedding.json"


@dataclass(frozen=True, kw_only=True)
class GraphEmbeddingSettings:
    """``train.graph_embedding`` of the config and ``seed``.

    No field has a default here: the schema's are the only ones.
    """

    dim: int
    iterations: int
    alpha: float
    seed: int


def embed_graph(
    graph_dir: str | os.PathLike, settings: GraphEmbeddingSettings, output_dir: str | os.PathLike
) -> dict[str, Any]:
    """Embed every node of the training graph; return the metadata written beside it."""
    from sknetwork.embedding import RandomProjection

    started = time.perf_counter()
    graph = Graph(graph_dir)
    adjacency = graph.adjacency()
    LOG.info("graph: %d nodes, %d undirected edges", graph.num_nodes, adjacency.nnz // 2)
    projection = RandomProjection(
        n_components=settings.dim,
        alpha=settings.alpha,
        n_iter=settings.iterations,
        random_state=settings.seed,
    )
    vectors = np.ascontiguousarray(projection.fit_transform(adjacency), dtype=np.float32)
    output = Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    with atomic_path(output / EMBEDDING_FILE) as temporary, open(temporary, "wb") as handle:
        np.save(handle, vectors)
    meta = {
        "method": "sknetwork.embedding.RandomProjection",
        "settings": asdict(settings),
        "nodes": graph.num_nodes,
        "edges": len(graph.citing),
        "seconds": round(time.perf_counter() - started, 3),
    }
    write_json(meta, output / META_FILE)
    LOG.info("embedded %d nodes in %.1f s", graph.num_nodes, meta["seconds"])
    return meta


def load_embedding(directory: str | os.PathLike) -> np.ndarray:
    """The embedding written by :func:`embed_graph` (rows in node order)."""
    return np.load(Path(directory) / EMBEDDING_FILE)
