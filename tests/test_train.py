"""citeval.train: the training graph, its embedding, the two triplet samplers and the
commands (training itself: test_train_fit.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from citeval import stages
from citeval.config import load_config_file, schema_default
from citeval.errors import ConfigError, InputDataError
from citeval.train import cli
from citeval.train.embed import GraphEmbeddingSettings, embed_graph, load_embedding
from citeval.train.graph import Graph, build_training_graph
from citeval.train.neighbours import (
    EXACT_PAIRS,
    BandSearch,
    SearchSettings,
    chosen_index,
    without_self,
)
from citeval.train.triplets import (
    TripletSettings,
    read_eligible,
    sample_scincl,
    sample_specter,
    write_triplets,
)

ROOT = Path(__file__).resolve().parents[1]
# DuckDB's budget for joining the triplets with their texts.
MEMORY = "1GB"


def _schema_defaults(section: str, *names: str) -> dict:
    return {name: schema_default(f"{section}.{name}") for name in names}


def triplet_settings(**values) -> TripletSettings:
    """The schema's defaults (seed 13) but for ``values``."""
    defaults = {
        **_schema_defaults("train.triplets", "num_queries", "per_query", "hard_negatives"),
        **_schema_defaults("train.triplets.scincl", "k_positive", "k_hard"),
    }
    return TripletSettings(**{**defaults, "seed": 13, **values})


def search_settings(**values) -> SearchSettings:
    """The schema's neighbour-search settings but for ``values``."""
    names = ("index", "min_recall", "recall_sample")
    return SearchSettings(**{**_schema_defaults("train.triplets.scincl", *names), **values})


def embedding_settings(**values) -> GraphEmbeddingSettings:
    """The schema's defaults (seed 13) but for ``values``."""
    defaults = _schema_defaults("train.graph_embedding", "dim", "iterations")
    return GraphEmbeddingSettings(**{**defaults, "seed": 13, **values})


def write_citations(directory: Path, edges: list[tuple[str, str]]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    citing, cited = zip(*sorted(edges), strict=True)
    pq.write_table(
        pa.table({"citing_id": list(citing), "cited_id": list(cited)}),
        directory / "part-00000.parquet",
    )
    return directory


def write_filtered(path: Path, ids: list[str]) -> Path:
    pq.write_table(pa.table({"paper_id": sorted(ids)}), path)
    return path


def write_queries(directory: Path, ids: list[str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        pa.table({"group": ["g"] * len(ids), "query_id": ids}), directory / "queries.parquet"
    )
    return directory


def graph_of(tmp_path: Path, edges: list[tuple[str, str]], held_out=None) -> Path:
    citations = write_citations(tmp_path / "citations", edges)
    build_training_graph(citations, held_out or {}, tmp_path / "graph",
                         memory_limit=schema_default("jobs.memory_limit"))  # fmt: skip
    return tmp_path / "graph"


# --- the training graph ------------------------------------------------------------------


def test_graph_drops_every_held_out_query_and_its_edges(tmp_path: Path) -> None:
    edges = [("t1", "a"), ("a", "t1"), ("v1", "b"), ("a", "b"), ("b", "c"), ("m1", "c"), ("c", "a")]
    citations = write_citations(tmp_path / "citations", edges)
    test_split = write_queries(tmp_path / "samples" / "dataset-test", ["t1"])
    valid_split = write_queries(tmp_path / "samples" / "field-valid", ["v1", "absent"])
    mdcr = tmp_path / "mdcr_test.json"
    mdcr.write_text(json.dumps({"Biology": {"m1": {"true": ["c"]}}}))
    assert cli.main(
        ["graph", "--citations", str(citations), "--held-out-split", str(test_split),
         "--held-out-split", str(valid_split), "--held-out-mdcr", str(mdcr),
         "--output-dir", str(tmp_path / "graph")]
    ) == 0  # fmt: skip
    graph = Graph(tmp_path / "graph")
    assert graph.ids == ["a", "b", "c"]
    kept = {(graph.ids[s], graph.ids[t]) for s, t in zip(graph.citing, graph.cited, strict=True)}
    assert kept == {("a", "b"), ("b", "c"), ("c", "a")}
    report = json.loads((tmp_path / "graph" / "report.json").read_text())
    assert report["held_out"] == {
        "mdcr:mdcr_test.json": {"papers": 1, "in_graph": 1},
        "split:dataset-test": {"papers": 1, "in_graph": 1},
        "split:field-valid": {"papers": 2, "in_graph": 1},
    }
    assert (report["edges_before"], report["edges_removed"], report["edges"]) == (7, 4, 3)
    assert (report["nodes_before"], report["nodes"]) == (6, 3)


def test_graph_reports_a_bad_sample_folder(tmp_path: Path) -> None:
    with pytest.raises(InputDataError, match=r"queries\.parquet"):
        from citeval.train.graph import query_ids_of_split

        query_ids_of_split(tmp_path)


# --- SPECTER's sampler on a graph worked out by hand -------------------------------------

# q cites a and b; a cites c; b cites a. For q: positives are a and b (what q cites); the
# one hard negative is c (cited by a, not by q); the one easy negative is e, the only
# eligible paper that is neither q, cited by q, nor the hard negative. x is not eligible
# (no text) and never appears.
SPECTER_EDGES = [("q", "a"), ("q", "b"), ("a", "c"), ("b", "a"), ("a", "x"), ("q", "x")]


def test_specter_triplets_follow_the_definition(tmp_path: Path) -> None:
    graph = Graph(graph_of(tmp_path, [*SPECTER_EDGES, ("e", "c")]))
    eligible = read_eligible(
        write_filtered(tmp_path / "f.parquet", ["q", "a", "b", "c", "e"]), graph
    )
    settings = triplet_settings(num_queries=10, per_query=2, hard_negatives=1, seed=3)
    triplets = sample_specter(graph, eligible, settings)
    rows = list(
        zip(triplets.query, triplets.positive, triplets.negative, triplets.kind, strict=True)
    )
    assert [row for row in rows if row[0] == "q"] == [
        ("q", "a", "c", "hard"),
        ("q", "b", "e", "easy"),
    ]
    assert "x" not in {paper for row in rows for paper in row[:3]}
    cites = {}
    for source, target in [*SPECTER_EDGES, ("e", "c")]:
        cites.setdefault(source, set()).add(target)
    for query, positive, negative, kind in rows:
        assert positive in cites[query]
        assert negative not in cites[query] | {query}
        if kind == "hard":
            assert any(negative in cites.get(c, set()) for c in cites[query])
    # Every eligible paper citing an eligible paper is a candidate query: q, a, b and e.
    assert sorted(set(triplets.query)) == ["a", "b", "e", "q"]


def test_specter_is_deterministic_for_a_seed(tmp_path: Path) -> None:
    graph_dir = graph_of(tmp_path, [*SPECTER_EDGES, ("e", "c"), ("c", "b"), ("e", "b")])
    filtered = write_filtered(tmp_path / "f.parquet", ["q", "a", "b", "c", "e"])
    settings = triplet_settings(num_queries=3, per_query=2, hard_negatives=1, seed=5)
    write_triplets("specter", graph_dir, filtered, settings, tmp_path / "one")
    write_triplets("specter", graph_dir, filtered, settings, tmp_path / "two")
    first = (tmp_path / "one" / "triplets.parquet").read_bytes()
    assert first == (tmp_path / "two" / "triplets.parquet").read_bytes()
    report = json.loads((tmp_path / "one" / "triplets_report.json").read_text())
    assert (
        report["queries"] == 3
        and report["triplets"] == report["hard_negatives"] + report["easy_negatives"]
    )
    # Shortfalls are reported even when there are none.
    assert report["queries_short_of_positives"] >= 0 and "queries_short_of_neighbours" not in report


# --- SciNCL's sampler on an embedding worked out by hand ---------------------------------


def ring_graph(tmp_path: Path, n: int) -> Graph:
    ids = [f"p{i:02d}" for i in range(n)]
    return Graph(graph_of(tmp_path, [(ids[i], ids[(i + 1) % n]) for i in range(n)]))


@pytest.mark.parametrize("index", ["flat", "ivf"])
def test_scincl_triplets_take_the_configured_neighbour_bands(tmp_path: Path, index: str) -> None:
    # Node i sits at angle 0.05 * i**1.5 on the unit circle (no two gaps tie), so node 0's
    # neighbours by cosine are 1, 2, 3, ... in order: positives = ranks 2..3 (k_positive 3,
    # 2 of them), the hard negative = rank 6 (k_hard 6), easy negatives from ranks past 6.
    # Held to a recall of 1, the IVF index finds what exact search does.
    n = 14
    graph = ring_graph(tmp_path, n)
    angles = 0.05 * np.arange(n) ** 1.5
    embedding = np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32)
    eligible = np.arange(n)
    settings = triplet_settings(
        num_queries=n, per_query=2, hard_negatives=1, k_positive=3, k_hard=6, seed=1
    )
    search = search_settings(index=index, min_recall=1.0, recall_sample=n)
    triplets, report = sample_scincl(graph, eligible, embedding, settings, search)
    assert report["index"] == index
    assert triplets.counts[
        "queries_short_of_neighbours"
    ] == 0 and "queries_short_of_neighbours" in (triplets.counts)
    if index == "ivf":
        assert report["recall_at_k_positive"] == report["recall_at_k_hard"] == 1.0
    rows = [
        r
        for r in zip(
            triplets.query, triplets.positive, triplets.negative, triplets.kind, strict=True
        )
    ]
    of_zero = [row for row in rows if row[0] == "p00"]
    assert [row[1] for row in of_zero] == ["p02", "p03"]
    assert of_zero[0][2:] == ("p06", "hard")
    assert of_zero[1][3] == "easy" and int(of_zero[1][2][1:]) > 6
    for query, positive, negative, kind in rows:
        q = int(query[1:])
        ranked = sorted((j for j in range(n) if j != q), key=lambda j: abs(angles[j] - angles[q]))
        assert int(positive[1:]) in ranked[1:3]
        if kind == "hard":
            assert int(negative[1:]) == ranked[5]
        else:
            assert int(negative[1:]) in ranked[6:]


def test_scincl_refuses_bands_deeper_than_the_corpus(tmp_path: Path) -> None:
    graph = ring_graph(tmp_path, 5)
    settings = triplet_settings(
        num_queries=2, per_query=1, hard_negatives=1, k_positive=2, k_hard=10
    )
    with pytest.raises(ConfigError, match="k_hard=10"):
        sample_scincl(graph, np.arange(5), np.eye(5, dtype=np.float32), settings, search_settings())


def test_neighbours_leave_out_the_query_wherever_the_index_put_it() -> None:
    found = np.array([[7, 3, 4], [3, 7, 4], [3, 4, 5], [3, -1, -1]])
    rows = np.array([7, 7, 7, 9])
    assert without_self(found, rows, 2).tolist() == [[3, 4], [3, 4], [3, 4], [3, -1]]


def test_auto_searches_exactly_up_to_the_pair_budget() -> None:
    auto = search_settings(index="auto")
    assert chosen_index(auto, 1000, EXACT_PAIRS // 1000) == "flat"
    assert chosen_index(auto, 1000, EXACT_PAIRS // 1000 + 1) == "ivf"
    assert chosen_index(search_settings(index="ivf"), 1, 10) == "ivf"
    assert chosen_index(search_settings(index="flat"), 10**6, 10**9) == "flat"


@pytest.mark.parametrize("min_recall", [0.6, 0.9])
def test_ivf_searches_the_fewest_lists_that_reach_the_recall(min_recall: float) -> None:
    """nprobe doubles from 1 until the recall at both depths reaches the minimum; each
    trial's recall is checked against one worked out here with numpy (exact ranks by
    sorting every inner product, the approximate ones from the IVF index itself)."""
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((400, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    rows = np.arange(0, 400, 8)
    depths = {"k_positive": 5, "k_hard": 40}
    settings = search_settings(index="ivf", min_recall=min_recall, recall_sample=len(rows))
    search = BandSearch(vectors, settings, rows, depths, seed=3)
    report = search.report()
    assert report["index"] == "ivf" and report["nlist"] == 20 and report["recall_queries"] == 50
    trials = report["calibration"]
    assert [trial["nprobe"] for trial in trials] == [2**i for i in range(len(trials))]
    exact = np.argsort(-(vectors[rows] @ vectors.T), axis=1, kind="stable")
    for trial in trials:
        search.index.nprobe = trial["nprobe"]
        _, approximate = search.index.search(vectors[rows], 41)
        for name, k in depths.items():
            shares = [
                np.isin(truth[truth != row][:k], found[found != row][:k]).mean()
                for row, truth, found in zip(rows, exact, approximate, strict=True)
            ]
            assert trial[f"recall_at_{name}"] == pytest.approx(np.mean(shares), abs=1e-4)
    reached = [min(trial["recall_at_k_positive"], trial["recall_at_k_hard"]) for trial in trials]
    assert reached[-1] >= min_recall and all(value < min_recall for value in reached[:-1])
    assert len(trials) > 1, "one list of 20 should miss neighbours"
    assert report["nprobe"] == trials[-1]["nprobe"]
    assert report["recall_at_k_hard"] == trials[-1]["recall_at_k_hard"]


def test_bad_triplet_settings_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="overlap"):
        triplet_settings(per_query=5, hard_negatives=2, k_positive=25, k_hard=26).check("scincl")
    with pytest.raises(ConfigError, match="sampler"):
        triplet_settings().check("graph")


def test_graph_embedding_is_seeded_and_independent_of_the_threads(tmp_path: Path) -> None:
    graph_dir = graph_of(tmp_path, [*SPECTER_EDGES, ("e", "c"), ("c", "b")])
    settings = embedding_settings(dim=4, iterations=2, seed=7)
    embed_graph(graph_dir, settings, tmp_path / "one", threads=1)
    embed_graph(graph_dir, settings, tmp_path / "two", threads=2)
    first = load_embedding(tmp_path / "one")
    assert first.shape == (Graph(graph_dir).num_nodes, 4) and first.dtype == np.float32
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    assert first.tobytes() == load_embedding(tmp_path / "two").tobytes()
    embed_graph(
        graph_dir, embedding_settings(dim=4, iterations=2, seed=8), tmp_path / "three", threads=1
    )
    assert first.tobytes() != load_embedding(tmp_path / "three").tobytes()


def two_cliques(size: int) -> list[tuple[str, str]]:
    """Two cliques of ``size`` papers, ``a*`` and ``b*``, joined by one citation. Each
    paper cites the earlier ones, and a0 cites only b0: the edge list then names the
    papers in another order than the node numbers."""
    edges = [
        (f"{side}{i}", f"{side}{j}")
        for side in "ab" for i in range(size) for j in range(size) if i > j
    ]  # fmt: skip
    return [*edges, ("a0", "b0")]


def test_pycleora_reads_exactly_the_training_graphs_edges(tmp_path: Path) -> None:
    import pycleora

    from citeval.train.embed import EDGE_COLUMNS, write_edge_lines

    graph = Graph(graph_of(tmp_path, two_cliques(4)))
    lines = tmp_path / "edges.txt"
    write_edge_lines(tmp_path / "graph" / "edges.parquet", lines)
    matrix = pycleora.SparseMatrix.from_files([str(lines)], EDGE_COLUMNS)
    adjacency = graph.adjacency()
    for node in range(graph.num_nodes):
        expected = set(adjacency.indices[adjacency.indptr[node] : adjacency.indptr[node + 1]])
        read = {int(entity) for entity, _ in matrix.get_neighbors(str(node))} - {node}
        assert read == expected, graph.ids[node]


def test_embedding_rows_follow_the_node_order(tmp_path: Path) -> None:
    """Papers of one clique end nearer each other than papers of the other clique: rows
    put in pycleora's entity order instead of the node order would mix the cliques."""
    graph = Graph(graph_of(tmp_path, two_cliques(6)))
    embed_graph(
        tmp_path / "graph", embedding_settings(dim=8, iterations=3), tmp_path / "e", threads=1
    )
    vectors = load_embedding(tmp_path / "e")
    side = np.array([paper_id[0] for paper_id in graph.ids])
    similarity = vectors @ vectors.T
    same = side[:, None] == side[None, :]
    np.fill_diagonal(same, False)
    different = side[:, None] != side[None, :]
    assert similarity[same].min() > similarity[different].max()


@pytest.mark.parametrize("dim", [5, 8])
def test_propagating_column_blocks_is_propagating_the_whole_matrix(
    tmp_path: Path, dim: int
) -> None:
    """The embedding is the seeded start propagated as one matrix, in pycleora's entity
    order, normalised after each step, and put in node order: the blocks (even or not)
    only bound the memory."""
    import pycleora

    from citeval.train.embed import EDGE_COLUMNS, write_edge_lines

    graph_dir = graph_of(tmp_path, two_cliques(5))
    settings = embedding_settings(dim=dim, iterations=3, seed=5)
    embed_graph(graph_dir, settings, tmp_path / "e", threads=1)
    lines = tmp_path / "edges.txt"
    write_edge_lines(graph_dir / "edges.parquet", lines)
    matrix = pycleora.SparseMatrix.from_files([str(lines)], EDGE_COLUMNS)
    vectors = np.random.default_rng(5).standard_normal((matrix.num_entities, dim), np.float32)
    for _ in range(3):
        vectors = matrix.left_markov_propagate(vectors)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    expected = np.empty_like(vectors)
    expected[np.asarray(matrix.entity_ids, dtype=np.int64)] = vectors
    assert np.allclose(load_embedding(tmp_path / "e"), expected, atol=1e-6)


@pytest.mark.parametrize("config_file", ["config.yaml", "acm-cr.yaml"])
def test_the_commands_take_the_settings_the_pipeline_passes(config_file: str) -> None:
    config = load_config_file(ROOT / "config" / config_file)
    parser = cli.build_parser()
    commands = [
        (["graph", "--citations", "c", "--output-dir", "o", "--threads", "2"],
         stages.TRAIN_GRAPH),
        (["embed-graph", "--graph", "g"], stages.TRAIN_EMBED_GRAPH),
        (["triplets", "--sampler", "scincl", "--graph", "g", "--filtered", "f",
          "--output-dir", "o"], stages.TRAIN_TRIPLETS),
        (["fit", "--triplets", "t", "--papers", "p", "--name", "n", "--model-json", "{}",
          "--output-dir", "o", "--threads", "2"], stages.TRAIN_FIT),
    ]  # fmt: skip
    for wiring, settings in commands:
        args = parser.parse_args([*wiring, *settings.argv(config)])
        parsed = settings.values(args)
        for key, value in parsed.items():
            node = config
            for part in key.split("."):
                node = getattr(node, part)
            assert value == node, (wiring[0], key)
    assert parser.parse_args(["embed-graph", "--graph", "g", "--seed", "5"]).dim == (
        schema_default("train.graph_embedding.dim")
    )
    with pytest.raises(SystemExit):  # the seed has no default
        parser.parse_args(["embed-graph", "--graph", "g"])


def test_a_local_split_holds_out_its_contexts_citing_papers(tmp_path: Path) -> None:
    from citeval.train.graph import query_ids_of_split

    split = tmp_path / "local-test"
    (split / "query_papers").mkdir(parents=True)
    pq.write_table(
        pa.table({"paper_id": ["p2:0", "p1:3", "p1:4"], "citing_id": ["p2", "p1", "p1"]}),
        split / "query_papers" / "part-00000.parquet",
    )
    pq.write_table(
        pa.table({"group": ["contexts"] * 3, "query_id": ["p1:3", "p1:4", "p2:0"]}),
        split / "queries.parquet",
    )
    assert query_ids_of_split(split) == ["p1", "p2"]
