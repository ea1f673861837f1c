"""The retrieve stage for single-vector models, against brute-force numpy."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from embedding_store_builder import (
    brute_force,
    paper_ids,
    random_vectors,
    write_collection,
    write_store,
)

from citeval.retrieve import cli as retrieve
from citeval.trec import read_run

pytestmark = pytest.mark.usefixtures("one_thread")


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


def test_queries_read_from_their_own_store_rank_the_pools_store(tmp_path: Path) -> None:
    """A model whose query prompt differs embeds its query papers apart
    (query_embeddings/<model>/<setup>-<split>/): the queries' vectors come from there, the
    candidates' from the papers' store, and a query paper is still not its own candidate."""
    ids = paper_ids(80)
    documents = write_store(tmp_path / "emb", ids, random_vectors(80, 8), num_shards=2)
    query_ids = ids[10:20]
    as_queries = write_store(tmp_path / "queries", query_ids, random_vectors(10, 3))
    queries, pools = write_collection(tmp_path, query_ids, ids[:60])
    output = tmp_path / "run.trec"
    args = [
        "--embeddings", str(tmp_path / "emb"), "--query-embeddings", str(tmp_path / "queries"),
        "--similarity", "ip", "--pooling", "mean", "--queries", str(queries),
        "--pools", str(pools), "--group", "pool-x", "--rep", "0", "--k", "12",
        "--threads", "1", "--output", str(output), "--tag", "m", "--no-progress",
    ]  # fmt: skip
    assert retrieve.main(args) == 0
    run = read_run(output)
    for row, qid in enumerate(query_ids):
        candidates = [p for p in ids[:60] if p != qid]
        ref_scores, ref_order = brute_force(
            as_queries[row][None], documents[[ids.index(p) for p in candidates]], 12, "ip"
        )
        ranked = sorted(run[qid], key=lambda d: -run[qid][d])
        assert qid not in run[qid] and ranked == [candidates[i] for i in ref_order[0]]
        np.testing.assert_allclose([run[qid][d] for d in ranked], ref_scores[0], atol=1e-5)
