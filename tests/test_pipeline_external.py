"""End to end: users' own systems (config ``systems``) evaluated like the built-in ones.

On the shared end-to-end run (tests/pipeline_runs.py), the pipeline runs the two examples
of examples/ on the small synthetic corpus: LSA vectors written by scikit-learn (an
``embeddings`` system, its contexts too) and BM25Okapi runs and MDCR scores written by
rank-bm25 (a ``run`` system). Their rows appear in Table 1 and 2, the p-values, MDCR's
Tables 3 and 4 and the local tables; they are fused and reranked; and their metrics equal
an evaluation of the same vectors and runs by pytrec_eval outside the pipeline.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import pytrec_eval
import yaml
from pipeline_runs import (
    FIRST_STAGES,
    LOCAL_MODELS,
    LOCAL_RERANKED,
    RERANKED,
    USER_SYSTEMS,
)

from citeval.collection_list import read_collection, read_collections
from citeval.metrics.per_query import ALL_QUERIES, read_per_query_tsv
from citeval.trec import rank_documents, read_qrels, read_run

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def run_dir(e2e_run: Path) -> Path:
    return e2e_run / "results" / "e2e"


def rows(table: Path) -> list[str]:
    return [line.split("\t")[0] for line in table.read_text().splitlines()[1:]]


def test_user_systems_have_rows_in_every_table(run_dir):
    tables = run_dir / "tables"
    assert set(USER_SYSTEMS) <= set(FIRST_STAGES)
    expected = [*FIRST_STAGES, *RERANKED]
    assert "bm25okapi>ce@5" in expected  # a user's run as the reranker's first stage
    assert rows(tables / "table1_dataset_level.tsv") == expected
    assert rows(tables / "table2_field_level_map.tsv") == expected
    pvalues = (tables / "table1_dataset_level_pvalues.tsv").read_text().splitlines()
    assert {line.split("\t")[1] for line in pvalues[1:]} == set(expected) - {"bm25"}
    for name in ("table3_mdcr", "table4_mdcr_types"):
        assert rows(tables / f"{name}.tsv") == [*FIRST_STAGES, "ce"]
    for split in ("test", "valid"):
        local = (tables / f"local_{split}.tsv").read_text().splitlines()[1:]
        assert [line.split("\t")[1] for line in local] == [*LOCAL_MODELS, *LOCAL_RERANKED]


def test_user_systems_never_shape_mdcr(run_dir):
    """MDCR's model candidates come from the built-in systems mdcr.models names, never
    from a user's system directly."""
    report = (run_dir / "mdcr" / "mdcr_test_report.json").read_text()
    for name in USER_SYSTEMS:
        assert f'"{name}"' not in report


def outside_lsa_run(store: Path, query_ids: list[str], pool_ids: list[str], k: int) -> dict:
    """Cosine ranking of the pool by the example's own vectors, with numpy."""
    ids = pq.read_table(store / "shard-00000.ids.parquet").column("paper_id").to_pylist()
    vectors = np.load(store / "shard-00000.npy").astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    row = {paper_id: index for index, paper_id in enumerate(ids)}
    pool = vectors[[row[p] for p in pool_ids]]
    run = {}
    for query_id in query_ids:
        scores = pool @ vectors[row[query_id]]
        docs = {p: float(s) for p, s in zip(pool_ids, scores, strict=True) if p != query_id}
        run[query_id] = dict(rank_documents(docs, k))
    return run


def assert_same_metrics(metrics_path: Path, run: dict, qrels: dict) -> None:
    ours = read_per_query_tsv(metrics_path)
    # trec_eval's measures by family (recall_30 is recall's); F1 is derived, not trec_eval's.
    families = {re.sub(r"_\d+$", "", measure): measure for measure in ours[ALL_QUERIES]}
    families = {f: m for f, m in families.items() if f in pytrec_eval.supported_measures}
    outside = pytrec_eval.RelevanceEvaluator(qrels, set(families)).evaluate(run)
    measures = [m for m in ours[ALL_QUERIES] if re.sub(r"_\d+$", "", m) in families]
    assert {"map", "ndcg", "recall_30"} <= set(measures)
    for measure in measures:
        mean = ours[ALL_QUERIES][measure]
        values = [outside.get(q, {}).get(measure, 0.0) for q in qrels]
        assert mean == pytest.approx(math.fsum(values) / len(qrels), abs=1e-9), measure
        for query_id in outside:
            assert ours[query_id][measure] == pytest.approx(outside[query_id][measure], abs=1e-9)


def test_user_systems_metrics_equal_pytrec_eval_outside(run_dir):
    config = yaml.safe_load((run_dir.parents[1] / "config.yaml").read_text())
    k = config["retrieval"]["k"]
    sample = run_dir / "samples" / "dataset-test"
    for collection in read_collections(sample):
        name = collection.name
        qrels = read_qrels(sample / "qrels" / f"{name}.qrels")
        query_ids, pool_ids = read_collection(
            sample / "queries.parquet", sample / "pools.parquet", collection.group, collection.rep
        )
        metrics = run_dir / "metrics" / "dataset-test" / name
        lsa = outside_lsa_run(run_dir / "external" / "lsa" / "store", query_ids, pool_ids, k)
        assert_same_metrics(metrics / "lsa.tsv", lsa, qrels)
        theirs = read_run(
            run_dir / "external" / "bm25okapi" / "runs" / "dataset-test" / f"{name}.trec"
        )
        cut = {q: dict(rank_documents(docs, k)) for q, docs in theirs.items()}
        assert_same_metrics(metrics / "bm25okapi.tsv", cut, qrels)
