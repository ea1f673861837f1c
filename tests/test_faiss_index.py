"""Faiss indexes (flat, IVF, HNSW) and their search and recall, against brute-force numpy."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from embedding_store_builder import (
    brute_force,
    paper_ids,
    random_vectors,
    write_store,
)

from citeval.config import schema_default
from citeval.embeddings import EmbeddingStore
from citeval.faiss_index import (
    IndexSpec,
    build_index,
    ivf_nlist_for,
    recall_report,
    search,
)
from citeval.io import write_json

pytestmark = pytest.mark.usefixtures("one_thread")

# The config's faiss settings at their schema defaults; a test overrides what it exercises.
FAISS = {
    key: schema_default(f"faiss.{key}")
    for key in ("ivf_nlist", "ivf_nprobe", "hnsw_m", "hnsw_ef_search")
}


def index_spec(kind: str, **overrides) -> IndexSpec:
    return IndexSpec(kind=kind, **{**FAISS, **overrides})


@pytest.mark.parametrize("similarity", ["ip", "l2", "cosine"])
def test_flat_index_equals_brute_force(tmp_path: Path, similarity: str) -> None:
    ids = paper_ids(300)
    stored = write_store(tmp_path / "emb", ids, random_vectors(300, 3) * 3, num_shards=3)
    store = EmbeddingStore(tmp_path / "emb")
    selection = store.locate(ids)
    built = build_index(store, selection, similarity, index_spec("flat"), progress=False)
    queries = random_vectors(37, 4) * 3
    if similarity == "cosine":
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    # Batches of 8 exercise both Faiss' BLAS and its small-batch code paths.
    scores, labels = search(built, queries, 20, batch_size=8, progress=False)
    expected_scores, expected_labels = brute_force(queries, stored, 20, similarity)
    np.testing.assert_array_equal(labels, expected_labels)
    np.testing.assert_allclose(scores, expected_scores, rtol=1e-5, atol=1e-5)
    assert np.all(np.diff(scores, axis=1) <= 0), "scores are higher-is-better"


def test_ivf_and_hnsw_recall_report(tmp_path: Path) -> None:
    ids = paper_ids(2000)
    write_store(tmp_path / "emb", ids, random_vectors(2000, 5), num_shards=2)
    store = EmbeddingStore(tmp_path / "emb")
    selection = store.locate(ids)
    queries = random_vectors(40, 6)
    assert (
        ivf_nlist_for(2000, 1024) == 179 and ivf_nlist_for(10, 4) == 4 and ivf_nlist_for(3, 8) == 3
    )

    generous = index_spec("ivf", ivf_nlist=16, ivf_nprobe=16, seed=1)
    built = build_index(store, selection, "ip", generous, progress=False)
    report = recall_report(built, store, selection, queries, 10, sample=0, progress=False)
    assert report["params"]["nlist"] == 16 and report["n_queries"] == 40
    assert report["recall_mean"] == pytest.approx(1.0)  # every list probed: exact

    stingy = index_spec("ivf", ivf_nlist=64, ivf_nprobe=1, seed=1)
    built = build_index(store, selection, "l2", stingy, progress=False)
    report = recall_report(built, store, selection, queries, 10, sample=25, seed=3, progress=False)
    assert 0.0 <= report["recall_min"] <= report["recall_mean"] < 1.0
    assert report["n_queries"] == 25

    hnsw = index_spec("hnsw", hnsw_m=16, hnsw_ef_search=200)
    built = build_index(store, selection, "cosine", hnsw, progress=False)
    report = recall_report(built, store, selection, queries, 10, sample=0, progress=False)
    assert 0.95 <= report["recall_mean"] <= 1.0
    write_json(report, tmp_path / "recall.json")
    loaded = json.loads((tmp_path / "recall.json").read_text())
    assert loaded["index"] == "hnsw" and 0.0 <= loaded["recall_mean"] <= 1.0


def test_ivf_build_is_deterministic(tmp_path: Path) -> None:
    ids = paper_ids(600)
    write_store(tmp_path / "emb", ids, random_vectors(600, 7), num_shards=2)
    store = EmbeddingStore(tmp_path / "emb")
    selection = store.locate(ids)
    queries = random_vectors(10, 8)
    spec = index_spec("ivf", ivf_nlist=32, ivf_nprobe=2, seed=11)
    first = search(
        build_index(store, selection, "ip", spec, progress=False), queries, 5, progress=False
    )
    second = search(
        build_index(store, selection, "ip", spec, progress=False), queries, 5, progress=False
    )
    np.testing.assert_array_equal(first[1], second[1])
    np.testing.assert_array_equal(first[0], second[0])
