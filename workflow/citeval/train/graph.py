"""The training graph: the corpus's citations without any evaluation query.

Every test and validation query paper (every sample split of both setups, and the query
papers of an MDCR benchmark) is removed from the citation graph together with every edge
that touches it. No training triplet can then encode a query's qrels: a query's cited
papers are its relevant documents, and its edges are gone.

Writes ``nodes.parquet`` (``paper_id``, sorted: the row is the node number),
``edges.parquet`` (``citing``, ``cited``: int32 node numbers, sorted) and ``report.json``: how
many papers each source held out, how many of them were in the graph, and how many edges
and nodes were removed.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from citeval.errors import InputDataError
from citeval.io import parquet_glob, write_json, write_parquet
from citeval.layout import QUERY_PAPERS
from citeval.memory import duckdb_memory_setting

NODES_FILE = "nodes.parquet"
EDGES_FILE = "edges.parquet"
REPORT_FILE = "report.json"


def query_ids_of_split(sample_dir: str | os.PathLike) -> list[str]:
    """The query papers of one sample split (``<sample_dir>/queries.parquet``), sorted.

    A local-task split's queries are contexts: its papers are their citing papers
    (``query_papers/``'s ``citing_id``), whose citations are the split's relevance labels.
    """
    local = Path(sample_dir) / QUERY_PAPERS
    if local.is_dir():
        table = pq.read_table(local, columns=["citing_id"])
        return sorted({str(value) for value in table.column("citing_id").to_pylist()})
    path = Path(sample_dir) / "queries.parquet"
    if not path.is_file():
        raise InputDataError("no queries.parquet in the sample folder", path=str(path))
    table = pq.read_table(path)
    if "query_id" not in table.column_names:
        raise InputDataError("no query_id column", path=str(path), field="query_id")
    return sorted({str(value) for value in table.column("query_id").to_pylist()})


def query_ids_of_mdcr(benchmark: str | os.PathLike) -> list[str]:
    """The query papers of an MDCR benchmark file (``{field: {query_id: {...}}}``), sorted."""
    path = Path(benchmark)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise InputDataError(f"cannot read the MDCR benchmark ({error})", path=str(path)) from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise InputDataError("expected {field: {query_id: {...}}}", path=str(path))
    return sorted({str(query_id) for queries in data.values() for query_id in queries})


def build_training_graph(
    citations_dir: str | os.PathLike,
    held_out: Mapping[str, Sequence[str]],
    output_dir: str | os.PathLike,
    *,
    memory_limit: str,
    threads: int = 2,
) -> dict[str, Any]:
    """Write the citations without the ``held_out`` papers (by source name); return the report.

    ``memory_limit`` is the config's ``jobs.memory_limit`` (no default here: the schema's
    is the only one).
    """
    citations = Path(citations_dir)
    if not citations.is_dir() or not any(citations.glob("*.parquet")):
        raise InputDataError("no parquet parts in the citations folder", path=str(citations))
    removed = sorted({paper_id for ids in held_out.values() for paper_id in ids})
    con = duckdb.connect(
        config={"memory_limit": duckdb_memory_setting(memory_limit), "threads": threads}
    )
    con.execute(
        "CREATE VIEW citations AS SELECT citing_id, cited_id FROM "
        f"read_parquet('{parquet_glob(citations)}')"
    )
    con.register("held_out", pa.table({"paper_id": pa.array(removed, pa.string())}))
    con.execute(
        """
        CREATE TABLE kept AS SELECT citing_id, cited_id FROM citations
        WHERE citing_id NOT IN (SELECT paper_id FROM held_out)
          AND cited_id NOT IN (SELECT paper_id FROM held_out)
        """
    )
    con.execute(
        """
        CREATE TABLE nodes AS SELECT paper_id, (row_number() OVER (ORDER BY paper_id) - 1)::INT
        AS node FROM (SELECT citing_id AS paper_id FROM kept UNION SELECT cited_id FROM kept)
        """
    )
    nodes = con.sql("SELECT paper_id FROM nodes ORDER BY node").to_arrow_table()
    edges = con.sql(
        """
        SELECT a.node AS citing, b.node AS cited FROM kept
        JOIN nodes a ON kept.citing_id = a.paper_id JOIN nodes b ON kept.cited_id = b.paper_id
        ORDER BY citing, cited
        """
    ).to_arrow_table()
    (edges_before,) = con.execute("SELECT count(*) FROM citations").fetchone()
    (nodes_before,) = con.execute(
        "SELECT count(*) FROM "
        "(SELECT citing_id FROM citations UNION SELECT cited_id FROM citations)"
    ).fetchone()
    in_graph = {
        row[0]
        for row in con.execute(
            """
            SELECT paper_id FROM held_out WHERE paper_id IN (SELECT citing_id FROM citations)
               OR paper_id IN (SELECT cited_id FROM citations)
            """
        ).fetchall()
    }
    output = Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    write_parquet(nodes.cast(pa.schema([("paper_id", pa.string())])), output / NODES_FILE)
    write_parquet(
        edges.cast(pa.schema([("citing", pa.int32()), ("cited", pa.int32())])), output / EDGES_FILE
    )
    report = {
        "held_out": {
            source: {"papers": len(set(ids)), "in_graph": len(set(ids) & in_graph)}
            for source, ids in sorted(held_out.items())
        },
        "held_out_papers": len(removed),
        "held_out_in_graph": len(in_graph),
        "edges_before": int(edges_before),
        "edges_removed": int(edges_before) - edges.num_rows,
        "edges": edges.num_rows,
        "nodes_before": int(nodes_before),
        "nodes": nodes.num_rows,
    }
    write_json(report, output / REPORT_FILE)
    return report


def graph_files(graph_dir: str | os.PathLike) -> tuple[Path, Path]:
    """The nodes and edges files of a training graph folder, which must both exist."""
    paths = (Path(graph_dir) / NODES_FILE, Path(graph_dir) / EDGES_FILE)
    for path in paths:
        if not path.is_file():
            raise InputDataError("not found (run `citeval.train graph` first)", path=str(path))
    return paths


class Graph:
    """A training graph as read back: node ids and int32 edge arrays."""

    def __init__(self, graph_dir: str | os.PathLike) -> None:
        nodes, edges_file = graph_files(graph_dir)
        self.ids: list[str] = pq.read_table(nodes).column("paper_id").to_pylist()
        edges = pq.read_table(edges_file)
        self.citing = edges.column("citing").to_numpy()
        self.cited = edges.column("cited").to_numpy()

    @functools.cached_property
    def index(self) -> dict[str, int]:
        """Paper id -> node number (built on first use: the embedding does not need it)."""
        return {paper_id: node for node, paper_id in enumerate(self.ids)}

    @property
    def num_nodes(self) -> int:
        return len(self.ids)

    def references(self) -> Any:
        """CSR matrix: row i holds the nodes that node i cites (out-citations, OC)."""
        from scipy.sparse import csr_matrix

        ones = np.ones(len(self.citing), dtype=np.float32)
        shape = (self.num_nodes, self.num_nodes)
        return csr_matrix((ones, (self.citing, self.cited)), shape=shape)

    def adjacency(self) -> Any:
        """Symmetric binary CSR adjacency: citing and cited are neighbours either way."""
        references = self.references()
        adjacency = (references + references.T).tocsr()
        adjacency.data[:] = 1.0
        return adjacency
