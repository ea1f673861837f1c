"""Citation embeddings of the training graph's nodes, for SciNCL's k-NN sampling.

SciNCL trains PyTorch-BigGraph on S2ORC's citations; BigGraph (last released in 2019)
does not install beside the pinned torch. The embedding here is Cleora's, with pycleora's
sparse propagation (Rust, built for graphs of billions of edges): a seeded Gaussian start
per node, multiplied ``iterations`` times by the random-walk matrix of the symmetric
citation graph (each line of the edge list also links a node to itself, so the walk is
lazy) and L2-normalised after each step. Its memory is the edge list plus two float32
``nodes × dim`` matrices (the columns are propagated in :data:`BLOCKS` blocks), and its
vectors are unit-norm, so the k-NN search
(:mod:`citeval.train.triplets`) ranks neighbours by cosine similarity.

pycleora reads its graph from text files, one edge a line; DuckDB writes that file from
``edges.parquet``, so no Python code touches an edge.

Writes ``embedding.npy`` (float32, one row per node of ``nodes.parquet``) and
``embedding.json`` (settings and timing).
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from citeval.errors import InputDataError
from citeval.io import atomic_path, write_json
from citeval.train.graph import graph_files

LOG = logging.getLogger(__name__)
EMBEDDING_FILE = "embedding.npy"
META_FILE = "embedding.json"
# One entity type on both sides of each line: pycleora's homogeneous graph.
EDGE_COLUMNS = "complex::reflexive::paper"
# pycleora's propagation holds its input, a copy of it and its result: propagated as two
# column blocks, the vectors take two nodes × dim matrices at the peak instead of three,
# for about 1.5 times the time a step (docs/benchmarks.md).
BLOCKS = 2


@dataclass(frozen=True, kw_only=True)
class GraphEmbeddingSettings:
    """``train.graph_embedding`` of the config and ``seed``.

    No field has a default here: the schema's are the only ones.
    """

    dim: int
    iterations: int
    seed: int


def write_edge_lines(edges: Path, output: Path) -> None:
    """``citing cited`` node numbers, one edge a line, the way pycleora reads a graph."""
    import duckdb

    con = duckdb.connect()
    con.execute(
        f"COPY (SELECT citing, cited FROM read_parquet('{edges}')) TO '{output}' "
        "(FORMAT csv, DELIMITER ' ', HEADER false)"
    )


def embed_graph(
    graph_dir: str | os.PathLike,
    settings: GraphEmbeddingSettings,
    output_dir: str | os.PathLike,
    *,
    threads: int,
) -> dict[str, Any]:
    """Embed every node of the training graph; return the metadata written beside it."""
    import pyarrow.parquet as pq
    import pycleora

    started = time.perf_counter()
    nodes_file, edges_file = graph_files(graph_dir)
    num_nodes = pq.ParquetFile(nodes_file).metadata.num_rows
    num_edges = pq.ParquetFile(edges_file).metadata.num_rows
    output = Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=output, prefix=".edges-") as scratch:
        lines = Path(scratch) / "edges.txt"
        write_edge_lines(edges_file, lines)
        graph = pycleora.SparseMatrix.from_files([str(lines)], EDGE_COLUMNS, num_workers=threads)
    # Every node has an edge (the graph is built from its edges), so each is an entity.
    if graph.num_entities != num_nodes:
        raise InputDataError(
            f"the edges name {graph.num_entities} nodes, nodes.parquet has {num_nodes}",
            path=str(graph_dir),
        )
    LOG.info("graph: %d nodes, %d edges", num_nodes, num_edges)
    # pycleora names its entities in its own order: entity_nodes[e] is entity e's node.
    entity_nodes = np.asarray(graph.entity_ids, dtype=np.int64)
    # pycleora's own deterministic start gives strongly correlated vectors (random pairs'
    # cosine spreads about 0.45 at 64 dimensions, independent ones about 0.125), which
    # blurs neighbours into random papers; a seeded Gaussian start does not. It is drawn
    # in pycleora's entity order, which the sorted edge list fixes.
    rng = np.random.default_rng(settings.seed)
    start = rng.standard_normal((num_nodes, settings.dim), dtype=np.float32)
    blocks = [np.ascontiguousarray(block) for block in np.array_split(start, BLOCKS, axis=1)]
    del start
    for step in range(settings.iterations):
        for i in range(len(blocks)):
            blocks[i] = graph.left_markov_propagate(blocks[i], num_workers=threads)
        norms = np.sqrt(sum(np.einsum("ij,ij->i", block, block) for block in blocks))
        for block in blocks:
            block /= norms[:, None]
        LOG.info("iteration %d of %d", step + 1, settings.iterations)
    del graph
    in_node_order = np.empty((num_nodes, settings.dim), dtype=np.float32)
    first = 0
    for block in blocks:
        in_node_order[entity_nodes, first : first + block.shape[1]] = block
        first += block.shape[1]
    del blocks
    with atomic_path(output / EMBEDDING_FILE) as temporary, open(temporary, "wb") as handle:
        np.save(handle, in_node_order)
    meta = {
        "method": f"Cleora (pycleora {importlib.metadata.version('pycleora')})",
        "settings": asdict(settings),
        "nodes": num_nodes,
        "edges": num_edges,
        "seconds": round(time.perf_counter() - started, 3),
    }
    write_json(meta, output / META_FILE)
    LOG.info("embedded %d nodes in %.1f s", num_nodes, meta["seconds"])
    return meta


def load_embedding(directory: str | os.PathLike) -> np.ndarray:
    """The embedding written by :func:`embed_graph` (rows in node order)."""
    return np.load(Path(directory) / EMBEDDING_FILE)
