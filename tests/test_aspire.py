"""ASPIRE max-sim retrieval (exact and from index hits), against brute-force numpy."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from embedding_store_builder import (
    paper_ids,
    random_vectors,
    write_collection,
    write_store,
)

from citeval import aspire
from citeval.config import schema_default
from citeval.embeddings import EmbeddingStore
from citeval.faiss_index import TIE_MARGIN, IndexSpec
from citeval.retrieve import cli as retrieve
from citeval.trec import read_run

pytestmark = pytest.mark.usefixtures("one_thread")


def multi_vector_corpus(n_papers: int, seed: int) -> tuple[list[str], list[int], np.ndarray]:
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 6, size=n_papers)
    ids = [pid for pid, c in zip(paper_ids(n_papers), counts, strict=True) for _ in range(c)]
    sentences = [s for c in counts for s in range(c)]
    return ids, sentences, random_vectors(len(ids), seed + 1)


def brute_force_maxsim(
    stored: np.ndarray, ids: list[str], query: str, pool: list[str], similarity: str
) -> dict[str, float]:
    rows = np.asarray(ids)
    q = stored[rows == query].astype(np.float64)
    if similarity == "cosine":
        q /= np.linalg.norm(q, axis=1, keepdims=True)
    scores = {}
    for paper in pool:
        if paper == query:
            continue
        p = stored[rows == paper].astype(np.float64)
        if similarity == "cosine":
            p /= np.linalg.norm(p, axis=1, keepdims=True)
        sims = -((q[:, None, :] - p[None, :, :]) ** 2).sum(-1) if similarity == "l2" else q @ p.T
        scores[paper] = float(sims.max())
    return scores


@pytest.mark.parametrize(
    ("similarity", "extra"),
    [
        ("ip", ["--aspire-mode", "exact"]),
        ("l2", ["--aspire-mode", "exact"]),
        ("ip", ["--aspire-mode", "hits", "--aspire-hits", "3", "--aspire-max-hits", "100000"]),
        ("cosine", ["--aspire-mode", "hits", "--aspire-hits", "3", "--aspire-max-hits", "100000"]),
        # auto mode picks hits for IVF; probing every list makes the hits exact.
        ("l2", ["--index", "ivf", "--ivf-nlist", "4", "--ivf-nprobe", "4", "--aspire-hits", "3"]),
    ],
)
def test_aspire_maxsim_equals_brute_force(
    tmp_path: Path, similarity: str, extra: list[str]
) -> None:
    ids, sentences, vectors = multi_vector_corpus(80, 12)
    # Shuffle the store rows: the selection must regroup each paper's sentences.
    perm = np.random.default_rng(0).permutation(len(ids))
    write_store(
        tmp_path / "emb",
        [ids[i] for i in perm],
        vectors[perm],
        sentences=[sentences[i] for i in perm],
        num_shards=3,
    )
    stored = vectors.astype(np.float16).astype(np.float32)
    papers = paper_ids(80)
    pool_ids, query_ids = papers[:70], papers[60:75]
    queries, pools = write_collection(tmp_path, query_ids, pool_ids)
    output = tmp_path / "run.trec"
    report = tmp_path / "report.json"
    args = [
        "--embeddings", str(tmp_path / "emb"), "--similarity", similarity, "--pooling", "aspire",
        "--queries", str(queries), "--pools", str(pools), "--group", "pool-x", "--rep", "0",
        "--k", "12", "--threads", "1", "--output", str(output), "--tag", "aspire",
        "--recall-report", str(report), "--no-progress", "--batch-size", "16", *extra,
    ]  # fmt: skip
    assert retrieve.main(args) == 0
    run = read_run(output)
    assert sorted(run) == query_ids
    for qid in query_ids:
        expected = brute_force_maxsim(stored, ids, qid, pool_ids, similarity)
        top = sorted(expected, key=lambda d: -expected[d])[:12]
        docs = run[qid]
        assert qid not in docs
        assert sorted(docs, key=lambda d: -docs[d]) == top
        np.testing.assert_allclose(
            [docs[d] for d in top], [expected[d] for d in top], rtol=1e-5, atol=1e-5
        )
    written = json.loads(report.read_text())
    if written["aspire_mode"] == "hits":
        assert written["uncertified_queries"] == 0 and written["certified_queries"] == 15
    else:
        assert written["index"] == "exact-maxsim"
    if "ivf" in extra:
        assert written["aspire_mode"] == "hits"
        assert written["recall"]["level"] == "sentence"
        assert written["recall"]["recall_mean"] == pytest.approx(1.0)


def test_aspire_hits_with_small_k_prime_is_approximate_but_reported(tmp_path: Path) -> None:
    ids, sentences, vectors = multi_vector_corpus(60, 13)
    write_store(tmp_path / "emb", ids, vectors, sentences=sentences, num_shards=2)
    store = EmbeddingStore(tmp_path / "emb")
    pool = store.locate(paper_ids(60))
    queries = store.locate(paper_ids(10))
    spec = IndexSpec(
        kind="flat",
        **{
            key: schema_default(f"faiss.{key}")
            for key in ("ivf_nlist", "ivf_nprobe", "hnsw_m", "hnsw_ef_search")
        },
    )
    run, report = aspire.retrieve_aspire(
        store,
        pool,
        queries,
        similarity="ip",
        k=20,
        spec=spec,
        mode="hits",
        hits=1,
        max_hits=1,
        progress=False,
    )
    assert report["certified_queries"] + report["uncertified_queries"] == 10
    assert report["uncertified_queries"] > 0
    assert all(qid not in docs and len(docs) <= 20 + TIE_MARGIN for qid, docs in run.items())
