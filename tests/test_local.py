"""The local task's samples (time split, leakage rules, pool) and tables."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from citeval.collection_list import read_collections
from citeval.errors import CitevalError, ConfigError, InputDataError
from citeval.local.cli import main
from citeval.local.sample import sample_local, split_citing_papers
from citeval.measures import local_table_measures
from citeval.trec import read_qrels

QUERY_YEAR = 2019

# paper_id -> (year, title, abstract)
PAPERS = {
    "a1": (2015, "Old graph paper", "Graphs and walks."),
    "a2": (2016, "Old text paper", "Words and counts."),
    "a3": (2017, "Old vision paper", "Pixels and edges."),
    "a4": (2018, "Recent graph paper", "Graph neural networks."),
    "a5": (2018, "Recent text paper", "Language models."),
    "n1": (2019, "Same-year paper", "Cited in its own year."),
    "q1": (2019, "Query paper one", "About graphs."),
    "q2": (2019, "Query paper two", "About text."),
    "q3": (2019, "Query paper three", "About vision."),
    "q4": (2019, "Query paper four", "About all."),
    "t1": (2018, "Training paper", "Cites the old ones."),
}

# context_id, citing_id, year, granularity, text, cited_ids
CONTEXTS = [
    ("q1:0", "q1", 2019, "chars-200", "walks on graphs CIT are", ["a1", "a4"]),
    ("q1:1", "q1", 2019, "chars-200", "same year CIT only", ["n1"]),  # dropped: none older
    ("q2:0", "q2", 2019, "chars-200", "counting words CIT here", ["a2", "n1"]),  # n1 removed
    ("q3:0", "q3", 2019, "chars-200", "edges of pixels CIT", ["a3"]),
    ("q4:0", "q4", 2019, "chars-200", "models of language CIT", ["a5"]),
    ("q4:1", "q4", 2019, "chars-200", "graph networks CIT", ["a4", "x9"]),  # x9: not filtered
    ("t1:0", "t1", 2018, "chars-200", "earlier context CIT", ["a1"]),  # training year
]


def _write_inputs(tmp_path: Path) -> dict[str, Path]:
    ids = sorted(PAPERS)
    papers = pa.table(
        {
            "paper_id": ids,
            "title": [PAPERS[p][1] for p in ids],
            "abstract": [PAPERS[p][2] for p in ids],
            "year": pa.array([PAPERS[p][0] for p in ids], pa.int32()),
            "fields": [["Computer Science"]] * len(ids),
        }
    )
    (tmp_path / "papers").mkdir()
    pq.write_table(papers, tmp_path / "papers" / "part-00000.parquet")
    pq.write_table(papers.select(["paper_id", "year", "fields"]), tmp_path / "filtered.parquet")
    contexts = pa.table(
        {
            "context_id": [c[0] for c in CONTEXTS],
            "citing_id": [c[1] for c in CONTEXTS],
            "year": pa.array([c[2] for c in CONTEXTS], pa.int32()),
            "fields": [["Computer Science"]] * len(CONTEXTS),
            "granularity": [c[3] for c in CONTEXTS],
            "section": ["intro"] * len(CONTEXTS),
            "text": [c[4] for c in CONTEXTS],
            "marker_start": pa.array([0] * len(CONTEXTS), pa.int32()),
            "marker_end": pa.array([3] * len(CONTEXTS), pa.int32()),
            "cited_ids": [c[5] for c in CONTEXTS],
        }
    )
    pq.write_table(contexts, tmp_path / "contexts.parquet")
    return {
        "contexts": tmp_path / "contexts.parquet",
        "filtered": tmp_path / "filtered.parquet",
        "papers": tmp_path / "papers",
    }


def _sample(tmp_path: Path, out: str = "samples", **overrides) -> dict:
    paths = (
        _write_inputs(tmp_path)
        if not (tmp_path / "papers").exists()
        else {
            "contexts": tmp_path / "contexts.parquet",
            "filtered": tmp_path / "filtered.parquet",
            "papers": tmp_path / "papers",
        }
    )
    settings = {
        "seed": 13,
        "query_year": QUERY_YEAR,
        "valid_fraction": 0.5,
        "num_queries": None,
        "num_valid_queries": None,
        "num_train_queries": None,
        "pool_size": None,
        "global_context": True,
        "on_too_small": "cap",
    }
    settings.update(overrides)
    return sample_local(
        paths["contexts"], paths["filtered"], paths["papers"], tmp_path / out, **settings
    )


def _queries(split_dir: Path) -> dict[str, dict]:
    table = pq.read_table(split_dir / "query_papers").to_pylist()
    return {row["paper_id"]: row for row in table}


def test_split_by_citing_paper_and_time(tmp_path):
    report = _sample(tmp_path)
    test = _queries(tmp_path / "samples/local-test")
    valid = _queries(tmp_path / "samples/local-valid")
    # Only query-year contexts with an older cited paper are queries.
    assert sorted({**test, **valid}) == ["q1:0", "q2:0", "q3:0", "q4:0", "q4:1"]
    # No citing paper has contexts in both splits.
    assert not {r["citing_id"] for r in test.values()} & {r["citing_id"] for r in valid.values()}
    year = report["query_year_contexts"]
    assert year["dropped_no_cited_candidate"] == 1  # q1:1 cites only n1
    assert year["cited_ids_removed_not_candidates"] == 3  # n1 twice, x9
    # Contexts of earlier years are the training split, never a test or validation query.
    assert report["training_contexts"]["kept"] == 1
    assert sorted(_queries(tmp_path / "samples/local-train")) == ["t1:0"]
    # Candidates: filtered papers published before the query year, never a query paper.
    for split in ("test", "valid"):
        pool = set(
            pq.read_table(tmp_path / f"samples/local-{split}/pools.parquet")["paper_id"].to_pylist()
        )
        assert pool == {"a1", "a2", "a3", "a4", "a5", "t1"}
        qrels = read_qrels(tmp_path / f"samples/local-{split}/qrels/contexts.rep0.qrels")
        assert all(set(relevant) <= pool for relevant in qrels.values())
        (info,) = read_collections(tmp_path / f"samples/local-{split}")
        assert (info.setup, info.split, info.group, info.rep) == ("local", split, "contexts", 0)
    qrels = {
        **read_qrels(tmp_path / "samples/local-test/qrels/contexts.rep0.qrels"),
        **read_qrels(tmp_path / "samples/local-valid/qrels/contexts.rep0.qrels"),
    }
    assert set(qrels["q2:0"]) == {"a2"}
    assert set(qrels["q4:1"]) == {"a4"}


def test_a_query_year_without_contexts_follows_on_too_small(tmp_path):
    with pytest.raises(ConfigError, match=r"local test contexts: requested 1, but only 0"):
        _sample(tmp_path, query_year=1800, on_too_small="fail")
    report = _sample(tmp_path, out="capped", query_year=1800)
    assert "local test contexts: requested 1, but only 0 are available" in report["warnings"]


def test_query_texts_carry_the_global_context(tmp_path):
    _sample(tmp_path)
    rows = {
        **_queries(tmp_path / "samples/local-test"),
        **_queries(tmp_path / "samples/local-valid"),
    }
    assert rows["q1:0"]["title"] == "walks on graphs CIT are"
    assert rows["q1:0"]["abstract"] == "Query paper one About graphs."
    assert rows["q1:0"]["granularity"] == "chars-200"
    _sample(tmp_path, out="bare", global_context=False)
    rows = {**_queries(tmp_path / "bare/local-test"), **_queries(tmp_path / "bare/local-valid")}
    assert all(row["abstract"] is None for row in rows.values())


def test_a_citing_paper_missing_from_the_corpus_is_named(tmp_path):
    paths = _write_inputs(tmp_path)
    papers = pq.read_table(paths["papers"] / "part-00000.parquet")
    keep = pa.array([paper != "q3" for paper in papers["paper_id"].to_pylist()])
    pq.write_table(papers.filter(keep), paths["papers"] / "part-00000.parquet")
    with pytest.raises(
        InputDataError, match=r"citing paper q3 of the contexts is not in the corpus"
    ):
        _sample(tmp_path)


def test_splits_stream_out_in_batches_with_the_same_result(tmp_path, monkeypatch):
    _sample(tmp_path, out="whole")
    monkeypatch.setattr("citeval.local.sample.BATCH_ROWS", 1)
    _sample(tmp_path, out="batched")
    for split in ("test", "valid", "train"):
        whole, batched = tmp_path / f"whole/local-{split}", tmp_path / f"batched/local-{split}"
        qrels = "qrels/contexts.rep0.qrels"
        assert (whole / qrels).read_bytes() == (batched / qrels).read_bytes()
        for name in ("queries.parquet", "query_ids.parquet", "query_papers"):
            assert pq.read_table(whole / name).equals(pq.read_table(batched / name))


def test_sampled_pool_keeps_cited_papers_and_is_deterministic(tmp_path):
    _sample(tmp_path, out="one", pool_size=5)
    _sample(tmp_path, out="two", pool_size=5)
    pool = pq.read_table(tmp_path / "one/local-test/pools.parquet")["paper_id"].to_pylist()
    assert len(pool) == 5 and {"a1", "a2", "a3", "a4", "a5"} <= set(pool)

    def digest(root: Path) -> dict[str, str]:
        return {
            str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*"))
            if p.is_file()
        }

    assert digest(tmp_path / "one") == digest(tmp_path / "two")


def test_sample_command_writes_every_split(tmp_path):
    paths = _write_inputs(tmp_path)
    status = main(
        [
            "sample",
            "--contexts", str(paths["contexts"]),
            "--filtered", str(paths["filtered"]),
            "--papers", str(paths["papers"]),
            "--output-dir", str(tmp_path / "samples"),
            "--query-year", str(QUERY_YEAR),
            "--seed", "13",
            "--valid-fraction", "0.5",
            "--num-queries", "none",
            "--num-valid-queries", "none",
            "--num-train-queries", "none",
            "--pool-size", "none",
            "--threads", "1",
        ]
    )  # fmt: skip
    assert status == 0
    for split in ("test", "valid", "train"):
        assert (tmp_path / f"samples/local-{split}/collections.tsv").is_file()
    report = json.loads((tmp_path / "samples/local-report.json").read_text())
    assert report["splits"]["train"]["queries"] == 1


def test_split_shares_are_seeded():
    ids = [f"p{i}" for i in range(10)]
    first = split_citing_papers(ids, 0.3, seed=1)
    assert len(first["valid"]) == 3 and first["valid"] | first["test"] == set(ids)
    assert split_citing_papers(ids, 0.3, seed=1) == first
    assert split_citing_papers(ids, 0.0, seed=1)["valid"] == set()


def test_tables_group_contexts_by_granularity(tmp_path):
    _write_inputs(tmp_path)
    query_papers = tmp_path / "qp"
    query_papers.mkdir()
    pq.write_table(
        pa.table(
            {
                "paper_id": ["c1", "c2", "c3"],
                "title": ["x", "y", "z"],
                "abstract": [None, None, None],
                "granularity": ["paragraph", "sentence", "sentence"],
            }
        ),
        query_papers / "part-00000.parquet",
    )
    measures = [m.name for m in local_table_measures([1, 10])]

    def metrics_file(name: str, values: dict[str, float]) -> Path:
        lines = ["query_id\tmeasure\tvalue"]
        for qid in ["c1", "c2", "c3"]:
            lines += [f"{qid}\t{m}\t{values[qid]:.10f}" for m in sorted(measures)]
        mean = sum(values.values()) / 3
        lines += [f"all\t{m}\t{mean:.10f}" for m in sorted(measures)]
        path = tmp_path / f"{name}.tsv"
        path.write_text("\n".join(lines) + "\n")
        return path

    bm25 = metrics_file("bm25", {"c1": 1.0, "c2": 0.5, "c3": 0.0})
    dense = metrics_file("dense", {"c1": 0.0, "c2": 1.0, "c3": 1.0})
    output = tmp_path / "tables" / "local_test.tsv"
    status = main(
        [
            "tables",
            "--metrics", "bm25", str(bm25),
            "--metrics", "dense", str(dense),
            "--query-papers", str(query_papers),
            "--output", str(output),
            "--title", "Local",
            "--cutoffs", "1", "10",
            "--baseline", "bm25",
            "--seed", "13",
        ]
    )  # fmt: skip
    assert status == 0
    lines = output.read_text().splitlines()
    assert lines[0] == "granularity\tmodel\tMRR\tR@1\tR@10\tNDCG@10\tMAP"
    rows = {tuple(line.split("\t")[:2]): line.split("\t")[2] for line in lines[1:]}
    assert float(rows[("paragraph", "bm25")]) == pytest.approx(100.0)
    assert float(rows[("sentence", "bm25")]) == pytest.approx(25.0)
    assert float(rows[("sentence", "dense")]) == pytest.approx(100.0)
    markdown = output.with_suffix(".md").read_text()
    assert "#### paragraph (1 contexts)" in markdown and "#### sentence (2 contexts)" in markdown
    assert (tmp_path / "tables" / "local_test_pvalues.tsv").exists()


def test_triplets_take_hard_negatives_from_the_run_and_never_the_citing_paper(tmp_path):
    from citeval.local.triplets import mine_triplets

    _sample(tmp_path)
    train = tmp_path / "samples/local-train"
    run = tmp_path / "train.trec"
    # t1:0 cites a1; the run ranks its own citing paper t1 first, then a2, a1, a3.
    run.write_text(
        "t1:0 Q0 t1 1 4.0 bm25\nt1:0 Q0 a2 2 3.0 bm25\n"
        "t1:0 Q0 a1 3 2.0 bm25\nt1:0 Q0 a3 4 1.0 bm25\n"
    )
    settings = {"per_query": 4, "hard_negatives": 2, "top": 3, "seed": 13}
    report = mine_triplets(
        run,
        train / "qrels/contexts.rep0.qrels",
        train / "query_papers",
        train / "pools.parquet",
        tmp_path / "out",
        **settings,
    )
    rows = pq.read_table(tmp_path / "out/triplets.parquet").to_pylist()
    assert [r["positive_id"] for r in rows] == ["a1"] * 4
    hard = [r["negative_id"] for r in rows if r["negative_kind"] == "hard"]
    easy = [r["negative_id"] for r in rows if r["negative_kind"] == "easy"]
    # Top 3 without the cited a1 and the citing t1: only a2 is left for the hard negatives.
    assert hard == ["a2"] and len(easy) == 3
    assert not {"a1", "t1"} & set(easy)
    assert report["hard_negatives_short"] == 1 and report["queries"] == 1
    mine_triplets(
        run,
        train / "qrels/contexts.rep0.qrels",
        train / "query_papers",
        train / "pools.parquet",
        tmp_path / "again",
        **settings,
    )
    again = tmp_path / "again/triplets.parquet"
    assert again.read_bytes() == (tmp_path / "out/triplets.parquet").read_bytes()


def test_oracle_prefetch_puts_every_cited_paper_in_the_top_k(tmp_path):
    from citeval.local.oracle import oracle_list, oracle_run

    ranked = ["d1", "d2", "d3", "d4", "d5", "c2"]
    # c1 (not retrieved) and c2 (rank 6) enter the top 3 in place of its lowest uncited
    # candidates, which move down; the rest keeps its order.
    assert oracle_list(ranked, {"c1", "c2"}, 3) == ["d1", "c1", "c2", "d2", "d3", "d4", "d5"]
    assert oracle_list(ranked, {"d2"}, 3) == ranked  # already there: unchanged
    assert oracle_list(["d1"], {"c1"}, 3) == ["d1", "c1"]  # a short list makes room itself
    with pytest.raises(CitevalError, match="cannot fit"):
        oracle_list(ranked, {"a", "b"}, 1)
    run = tmp_path / "run.trec"
    run.write_text("q Q0 d1 1 3.0 bm25\nq Q0 d2 2 2.0 bm25\nq Q0 d3 3 1.0 bm25\n")
    qrels = tmp_path / "qrels"
    qrels.write_text("q 0 d3 1\n")
    assert oracle_run(run, qrels, 1) == {"q": {"d3": 3.0, "d1": 2.0, "d2": 1.0}}
    # Another split's qrels: no query of the run is judged, so nothing could be placed.
    qrels.write_text("other 0 d3 1\n")
    with pytest.raises(InputDataError, match="none of the run's 1 queries is in the qrels"):
        oracle_run(run, qrels, 1)
