"""Embedding store, Faiss indexes and the retrieve stage, against brute-force numpy.

Synthetic shard directories are written in the contracts' format (float16 ``.npy`` plus
``.ids.parquet``); the brute-force references use the same float16-rounded vectors.
"""

from __future__ import annotations

import json
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from collections.abc import Iterator
from pathlib import Path

import faiss
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from threadpoolctl import threadpool_limits

from citeval import retrieve
from citeval.errors import InputDataError
from citeval.faiss_index import (
    EmbeddingStore,
    IndexSpec,
    build_index,
    ivf_nlist_for,
    recall_report,
    search,
    set_num_threads,
)
from citeval.io import write_json
from citeval.trec import read_run

DIM = 24


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    """One thread per test; the process-wide Faiss/BLAS settings are put back afterwards."""
    faiss_threads = faiss.omp_get_max_threads()
    limiter = threadpool_limits(limits=None)  # records the current limits, changes nothing
    set_num_threads(1)
    yield
    limiter.restore_original_limits()
    faiss.omp_set_num_threads(faiss_threads)


def paper_ids(n: int, *, offset: int = 0) -> list[str]:
    return [f"p{i + offset:05d}" for i in range(n)]


def write_store(
    directory: Path,
    ids: list[str],
    vectors: np.ndarray,
    *,
    sentences: list[int] | None = None,
    num_shards: int = 3,
) -> np.ndarray:
    """Write ``vectors`` as shards; return them as the float32 values the store holds."""
    directory.mkdir(parents=True, exist_ok=True)
    n = len(ids)
    half = vectors.astype(np.float16)
    for shard in range(num_shards):
        start, stop = shard * n // num_shards, (shard + 1) * n // num_shards
        np.save(directory / f"shard-{shard:05d}.npy", half[start:stop])
        columns: dict[str, pa.Array] = {"paper_id": pa.array(ids[start:stop], pa.string())}
        if sentences is not None:
            columns["sentence"] = pa.array(sentences[start:stop], pa.int32())
        pq.write_table(pa.table(columns), directory / f"shard-{shard:05d}.ids.parquet")
    return half.astype(np.float32)


def random_vectors(n: int, seed: int, dim: int = DIM) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal((n, dim)) / np.sqrt(dim)).astype(np.float32)


def brute_force(
    queries: np.ndarray, base: np.ndarray, k: int, similarity: str
) -> tuple[np.ndarray, np.ndarray]:
    q, b = queries.astype(np.float64), base.astype(np.float64)
    if similarity == "cosine":
        q = q / np.linalg.norm(q, axis=1, keepdims=True)
        b = b / np.linalg.norm(b, axis=1, keepdims=True)
    scores = -((q[:, None, :] - b[None, :, :]) ** 2).sum(-1) if similarity == "l2" else q @ b.T
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(scores, order, axis=1), order


# --------------------------------------------------------------------------- store


def test_gather_from_shards_equals_concatenation(tmp_path: Path) -> None:
    ids = paper_ids(50)
    stored = write_store(tmp_path / "emb", ids, random_vectors(50, 0), num_shards=4)
    store = EmbeddingStore(tmp_path / "emb")
    assert (store.n_rows, store.dim, store.multi_vector) == (50, DIM, False)
    selection = store.locate(reversed(ids))
    assert selection.paper_ids.tolist() == ids
    # Chunks of 7 rows straddle the shard borders.
    gathered = store.gather(selection, chunk_rows=7, progress=False)
    assert gathered.dtype == np.float32
    np.testing.assert_array_equal(gathered, stored)

    subset = [ids[i] for i in (3, 48, 11, 12, 13, 30)]
    sel = store.locate(subset)
    expected = stored[sorted(ids.index(p) for p in subset)]
    np.testing.assert_array_equal(store.gather(sel, chunk_rows=4, progress=False), expected)
    out = np.zeros_like(expected)
    assert store.gather(sel, out=out, normalize=True, progress=False) is out
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-6)


def test_store_order_does_not_depend_on_shard_layout(tmp_path: Path) -> None:
    ids = paper_ids(20)
    vectors = random_vectors(20, 1)
    perm = np.random.default_rng(2).permutation(20)
    write_store(tmp_path / "a", ids, vectors, num_shards=1)
    write_store(tmp_path / "b", [ids[i] for i in perm], vectors[perm], num_shards=3)
    a, b = EmbeddingStore(tmp_path / "a"), EmbeddingStore(tmp_path / "b")
    sel_a, sel_b = a.locate(ids[5:15]), b.locate(ids[5:15])
    assert sel_a.paper_ids.tolist() == sel_b.paper_ids.tolist() == ids[5:15]
    np.testing.assert_array_equal(a.gather(sel_a, progress=False), b.gather(sel_b, progress=False))


def test_gather_with_interleaved_shards(tmp_path: Path) -> None:
    """Selection order alternates shards (even ids in one, odd in the other)."""
    ids = paper_ids(12)
    vectors = random_vectors(12, 5)
    order = [*range(0, 12, 2), *range(1, 12, 2)]
    stored = write_store(tmp_path / "emb", [ids[i] for i in order], vectors[order], num_shards=2)
    store = EmbeddingStore(tmp_path / "emb")
    selection = store.locate(ids)
    assert selection.shard.tolist() == [0, 1] * 6
    expected = stored[np.argsort(order)]
    for chunk_rows in (1, 3, 5, 100):
        gathered = store.gather(selection, chunk_rows=chunk_rows, progress=False)
        np.testing.assert_array_equal(gathered, expected)
        chunks = [
            c.copy() for _, c in store.iter_chunks(selection, chunk_rows=chunk_rows, progress=False)
        ]
        np.testing.assert_array_equal(np.concatenate(chunks), expected)


def test_locate_reports_missing_and_duplicate_papers(tmp_path: Path) -> None:
    write_store(tmp_path / "emb", paper_ids(10), random_vectors(10, 0), num_shards=2)
    store = EmbeddingStore(tmp_path / "emb")
    with pytest.raises(InputDataError, match=r"1 of 2 papers have no vector.*nope"):
        store.locate(["p00001", "nope"])
    write_store(tmp_path / "dup", ["a", "b", "a"], random_vectors(3, 0), num_shards=1)
    with pytest.raises(InputDataError, match="more than once"):
        EmbeddingStore(tmp_path / "dup").locate(["a"])
    with pytest.raises(InputDataError, match="no shard"):
        EmbeddingStore(tmp_path / "emb" / "..")


# --------------------------------------------------------------------------- exact search


@pytest.mark.parametrize("similarity", ["ip", "l2", "cosine"])
def test_flat_index_equals_brute_force(tmp_path: Path, similarity: str) -> None:
    ids = paper_ids(300)
    stored = write_store(tmp_path / "emb", ids, random_vectors(300, 3) * 3, num_shards=3)
    store = EmbeddingStore(tmp_path / "emb")
    selection = store.locate(ids)
    built = build_index(store, selection, similarity, IndexSpec(kind="flat"), progress=False)
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

    generous = IndexSpec(kind="ivf", ivf_nlist=16, ivf_nprobe=16, seed=1)
    built = build_index(store, selection, "ip", generous, progress=False)
    report = recall_report(built, store, selection, queries, 10, sample=0, progress=False)
    assert report["params"]["nlist"] == 16 and report["n_queries"] == 40
    assert report["recall_mean"] == pytest.approx(1.0)  # every list probed: exact

    stingy = IndexSpec(kind="ivf", ivf_nlist=64, ivf_nprobe=1, seed=1)
    built = build_index(store, selection, "l2", stingy, progress=False)
    report = recall_report(built, store, selection, queries, 10, sample=25, seed=3, progress=False)
    assert 0.0 <= report["recall_min"] <= report["recall_mean"] < 1.0
    assert report["n_queries"] == 25

    hnsw = IndexSpec(kind="hnsw", hnsw_m=16, hnsw_ef_search=200)
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
    spec = IndexSpec(kind="ivf", ivf_nlist=32, ivf_nprobe=2, seed=11)
    first = search(
        build_index(store, selection, "ip", spec, progress=False), queries, 5, progress=False
    )
    second = search(
        build_index(store, selection, "ip", spec, progress=False), queries, 5, progress=False
    )
    np.testing.assert_array_equal(first[1], second[1])
    np.testing.assert_array_equal(first[0], second[0])


# --------------------------------------------------------------------------- retrieve CLI


def write_collection(
    root: Path, query_ids: list[str], pool_ids: list[str], group: str = "pool-x"
) -> tuple[Path, Path]:
    queries = root / "queries.parquet"
    pools = root / "pools.parquet"
    pq.write_table(pa.table({"group": [group] * len(query_ids), "query_id": query_ids}), queries)
    # A second rep with another pool must not leak into rep 0.
    pq.write_table(
        pa.table(
            {
                "group": [group] * (len(pool_ids) + 1),
                "rep": pa.array([0] * len(pool_ids) + [1], pa.int16()),
                "paper_id": [*pool_ids, query_ids[0]],
            }
        ),
        pools,
    )
    return queries, pools


@pytest.mark.parametrize("similarity", ["ip", "l2"])
def test_retrieve_cli_flat_matches_brute_force_and_skips_self(
    tmp_path: Path, similarity: str
) -> None:
    ids = paper_ids(120)
    stored = write_store(tmp_path / "emb", ids, random_vectors(120, 9), num_shards=3)
    pool_ids = ids[:100]
    query_ids = ids[90:110]  # 10 queries are in the pool, 10 are not
    queries, pools = write_collection(tmp_path, query_ids, pool_ids)
    output = tmp_path / "run.trec"
    args = [
        "--embeddings", str(tmp_path / "emb"), "--similarity", similarity, "--pooling", "cls",
        "--queries", str(queries), "--pools", str(pools), "--group", "pool-x", "--rep", "0",
        "--k", "15", "--threads", "1", "--output", str(output), "--tag", "m",
        "--recall-report", str(tmp_path / "recall.json"), "--no-progress",
    ]  # fmt: skip
    assert retrieve.main(args) == 0
    run = read_run(output)
    assert sorted(run) == query_ids
    for qid in query_ids:
        docs = run[qid]
        assert len(docs) == 15 and qid not in docs
        q = stored[ids.index(qid)][None]
        candidates = [p for p in pool_ids if p != qid]
        ref_scores, ref_order = brute_force(
            q, stored[[ids.index(p) for p in candidates]], 15, similarity
        )
        ranked = sorted(docs, key=lambda d: -docs[d])
        assert ranked == [candidates[i] for i in ref_order[0]]
        np.testing.assert_allclose([docs[d] for d in ranked], ref_scores[0], rtol=1e-5, atol=1e-5)
    report = json.loads((tmp_path / "recall.json").read_text())
    assert report["recall"]["exact"] is True and report["pool_size"] == 100


def test_retrieve_cli_ivf_writes_recall_and_rejects_wrong_pooling(tmp_path: Path) -> None:
    ids = paper_ids(400)
    write_store(tmp_path / "emb", ids, random_vectors(400, 10), num_shards=2)
    queries, pools = write_collection(tmp_path, ids[:30], ids[:300])
    base = [
        "--embeddings", str(tmp_path / "emb"), "--similarity", "cosine", "--queries", str(queries),
        "--pools", str(pools), "--group", "pool-x", "--rep", "0", "--k", "10", "--threads", "1",
        "--output", str(tmp_path / "run.trec"), "--tag", "m", "--no-progress",
    ]  # fmt: skip
    recall = tmp_path / "recall.json"
    assert (
        retrieve.main(
            [
                *base,
                "--pooling",
                "mean",
                "--index",
                "ivf",
                "--ivf-nlist",
                "8",
                "--ivf-nprobe",
                "8",
                "--recall-report",
                str(recall),
            ]
        )
        == 0
    )
    report = json.loads(recall.read_text())
    assert report["recall"]["recall_mean"] == pytest.approx(1.0)
    assert all(
        len(docs) == 10 and qid not in docs for qid, docs in read_run(tmp_path / "run.trec").items()
    )
    assert retrieve.main([*base, "--pooling", "aspire"]) == 2


# --------------------------------------------------------------------------- ASPIRE max-sim


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
    spec = IndexSpec(kind="flat")
    run, report = retrieve.retrieve_aspire(
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
    assert all(
        qid not in docs and len(docs) <= 20 + retrieve.TIE_MARGIN for qid, docs in run.items()
    )
