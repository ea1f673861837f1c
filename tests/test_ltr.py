"""citeval.ltr: the features, training and selection, the saved model, ranking and MDCR."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from citeval.errors import ConfigError
from citeval.ltr import cli as ltr_cli
from citeval.ltr.features import (
    CitingYears,
    PaperFacts,
    feature_matrix,
    feature_names,
    read_citing_years,
)
from citeval.ltr.model import MODEL_FILE, TRAINING_FILE, TrainedLtr
from citeval.mdcr.formats import read_scores, score_key, write_scores
from citeval.trec import read_run, write_qrels, write_run

NO_CITATIONS = CitingYears({})


def facts(years, lengths=None):
    return PaperFacts(years, lengths or {})


def test_a_system_that_left_a_candidate_out_gives_the_declared_defaults():
    candidates = {"q": ["a", "b", "c"]}
    scores = {"s": {"q": {"a": 2.0, "c": 5.0, "z": 1.0}}}
    row = feature_matrix(candidates, scores, facts({}), NO_CITATIONS)
    names = feature_names(["s"])
    column = {name: row[:, i] for i, name in enumerate(names)}
    # b: the lowest score s gave the query, ranked after the two it scored, flagged.
    assert column["s.score"].tolist() == [2.0, 1.0, 5.0]
    assert column["s.rank"].tolist() == [2.0, 3.0, 1.0]
    assert column["s.missing"].tolist() == [0.0, 1.0, 0.0]


def test_rank_ties_break_as_trec_eval_does():
    row = feature_matrix(
        {"q": ["a", "b"]}, {"s": {"q": {"a": 1.0, "b": 1.0}}}, facts({}), NO_CITATIONS
    )
    assert row[:, 1].tolist() == [2.0, 1.0]  # equal scores: id descending


def test_paper_features_count_only_citations_from_before_the_query_year():
    citing = CitingYears({"a": np.array([2015, 2018, 2020, 2020, 2021])})
    papers = facts({"q": 2020, "a": 2010}, {"q": 7, "a": 3})
    row = feature_matrix({"q": ["a", "unknown"]}, {}, papers, citing)
    names = feature_names([])
    values = dict(zip(names, row[0], strict=True))
    assert values == {
        "cited_before": 2.0,  # 2015 and 2018; the query's own year and later are not counted
        "year": 2010.0,
        "age": 10.0,
        "query_length": 7.0,
        "candidate_length": 3.0,
    }
    unknown = dict(zip(names, row[1], strict=True))
    assert (
        unknown["cited_before"] == 0 and math.isnan(unknown["year"]) and math.isnan(unknown["age"])
    )


# --- a small world: papers, a training graph, runs and qrels -----------------------------


def write_world(root, seed=0, signal=True):
    """Training queries (2018-2019) whose cited papers BM25 and a second system rank
    imperfectly, one test query (2021), the corpus's papers and a training graph.
    Without ``signal`` the cited papers are drawn from every paper and no score knows them."""
    rng = np.random.default_rng(seed)
    docs = [f"d{i:03d}" for i in range(60)]
    cited_often = set(docs[:15])
    train_queries = [f"t{i:02d}" for i in range(40)]
    papers = [
        {"paper_id": d, "title": "word " * (3 + i % 5), "abstract": "text", "year": 2000 + i % 15}
        for i, d in enumerate(docs)
    ]
    papers += [
        {"paper_id": q, "title": "query", "abstract": "a b c", "year": 2018 + i % 2}
        for i, q in enumerate(train_queries)
    ]
    papers += [{"paper_id": "test1", "title": "query", "abstract": "x", "year": 2021}]
    papers_dir = root / "papers"
    papers_dir.mkdir()
    pq.write_table(pa.Table.from_pylist(papers), papers_dir / "part-0.parquet")
    # The graph: older papers cite the often-cited ones (the training graph holds no test
    # query); node number = row.
    nodes = sorted(p["paper_id"] for p in papers if p["paper_id"] != "test1")
    node = {paper: i for i, paper in enumerate(nodes)}
    edges = [(node[c], node[d]) for c in docs[30:] for d in sorted(cited_often)]
    graph = root / "graph"
    graph.mkdir()
    pq.write_table(pa.table({"paper_id": nodes}), graph / "nodes.parquet")
    pq.write_table(
        pa.table({"citing": [e[0] for e in edges], "cited": [e[1] for e in edges]}),
        graph / "edges.parquet",
    )
    bm25, dense, qrels = {}, {}, {}
    for query in train_queries:
        pool = sorted(cited_often) if signal else docs
        relevant = set(rng.choice(pool, size=3, replace=False))
        qrels[query] = {d: 1 for d in sorted(relevant)}
        lift = 1.0 if signal else 0.0
        bm25[query] = {d: float(rng.normal()) + (0.8 * lift if d in relevant else 0) for d in docs}
        dense[query] = {
            d: float(rng.normal()) + (1.5 * lift if d in relevant else 0) for d in docs[:50]
        }
    runs = root / "runs"
    runs.mkdir()
    write_run(bm25, runs / "bm25.trec", "bm25")
    write_run(dense, runs / "dense.trec", "dense")
    write_qrels(qrels, root / "train.qrels")
    return {"papers": papers_dir, "graph": graph, "runs": runs, "qrels": root / "train.qrels"}


def train_args(world, output_dir, *extra):
    return [
        "train", "--name", "ltr", "--first-stage", f"bm25={world['runs'] / 'bm25.trec'}",
        "--feature", f"bm25={world['runs'] / 'bm25.trec'}",
        "--feature", f"dense={world['runs'] / 'dense.trec'}",
        "--qrels", str(world["qrels"]), "--papers", str(world["papers"]),
        "--graph", str(world["graph"]), "--output-dir", str(output_dir),
        "--k", "30", "--min-data-in-leaf", "5", "--max-trees", "40", "--eval-every", "5",
        "--seed", "13", "--memory-limit", "1GB", *extra,
    ]  # fmt: skip


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return write_world(tmp_path_factory.mktemp("ltr"))


@pytest.fixture(scope="module")
def trained(world, tmp_path_factory):
    output = tmp_path_factory.mktemp("model") / "ltr"
    assert ltr_cli.main(train_args(world, output)) == 0
    return output


def test_the_citing_years_come_from_the_graph(world):
    citing = read_citing_years(world["graph"], world["papers"], ["d000", "d040"], "1GB")
    assert sorted(citing.years) == ["d000"]  # d040 is cited by nobody
    assert len(citing.years["d000"]) == 30


def test_training_learns_keeps_its_best_trees_and_records_the_curve(trained):
    record = json.loads((trained / TRAINING_FILE).read_text())
    validation = record["validation"]
    assert validation["curve"][0]["step"] == 0
    assert record["trees"] == validation["kept_step"] >= 5
    kept = next(p for p in validation["curve"] if p["step"] == validation["kept_step"])
    assert kept["map"] == max(p["map"] for p in validation["curve"][1:])
    # The dense system and the citation count carry the signal the first stage lacks.
    assert validation["learned"], validation
    assert record["features"] == feature_names(["bm25", "dense"])
    gains = record["importance_gain"]
    assert gains["dense.score"] > gains["bm25.rank"]
    assert record["held_out_queries"] == 8 and record["training_queries"] == 32
    model = TrainedLtr.load(trained)
    assert model.booster.num_trees() == record["trees"]
    card = (trained / "README.md").read_text()
    assert "Reorders the top 30 of `bm25`" in card and "ltr learned" in card


def test_a_model_without_signal_to_learn_is_flagged(tmp_path):
    noise = write_world(_folder(tmp_path / "noise"), seed=3, signal=False)
    output = tmp_path / "model"
    assert ltr_cli.main(train_args(noise, output)) == 0
    record = json.loads((output / TRAINING_FILE).read_text())
    assert not record["validation"]["learned"]
    assert "ltr did NOT learn" in (output / "README.md").read_text()


def _folder(path):
    path.mkdir()
    return path


def test_the_same_settings_give_a_byte_identical_model(world, trained, tmp_path):
    again = tmp_path / "again"
    assert ltr_cli.main(train_args(world, again)) == 0
    assert (again / MODEL_FILE).read_bytes() == (trained / MODEL_FILE).read_bytes()


def test_training_reads_labels_from_the_qrels_it_is_given_only(world, tmp_path):
    """The labels are the given (training split's) qrels: with a test query's qrels instead,
    no training pair is labelled and there is nothing to learn (a one-line error)."""
    other = tmp_path / "other.qrels"
    write_qrels({"test1": {"d000": 1}}, other)
    args = train_args(world, tmp_path / "m")
    args[args.index("--qrels") + 1] = str(other)
    assert ltr_cli.main(args) == 2
    assert not (tmp_path / "m" / MODEL_FILE).exists()


def test_ranking_reorders_the_top_k_and_keeps_the_tail(world, trained, tmp_path):
    output = tmp_path / "ltr.trec"
    code = ltr_cli.main([
        "rank", "--model", str(trained), "--run", str(world["runs"] / "bm25.trec"),
        "--feature", f"bm25={world['runs'] / 'bm25.trec'}",
        "--feature", f"dense={world['runs'] / 'dense.trec'}",
        "--papers", str(world["papers"]), "--graph", str(world["graph"]), "--output", str(output),
    ])  # fmt: skip
    assert code == 0
    first, ranked = read_run(world["runs"] / "bm25.trec"), read_run(output)
    for query, scores in ranked.items():
        order = sorted(scores, key=lambda d: -scores[d])
        first_order = sorted(first[query], key=lambda d: (-first[query][d], d))
        assert set(order[:30]) == set(first_order[:30])
        assert order[30:] == [d for d in first_order[30:]]


def test_a_model_refuses_other_feature_systems(world, trained, tmp_path):
    with pytest.raises(ConfigError, match="trained on \\['bm25', 'dense'\\]"):
        from citeval.ltr.features import paper_reader
        from citeval.ltr.rank import rank_run

        rank_run(
            TrainedLtr.load(trained),
            world["runs"] / "bm25.trec",
            {"dense": world["runs"] / "dense.trec"},
            paper_reader(world["graph"], world["papers"], None, "1GB"),
        )


def test_mdcr_pairs_are_scored_from_the_systems_scores(world, trained, tmp_path):
    benchmark = {"field": {"t00": {"true": ["d000"], "random": ["d050", "d051"]}}}
    (tmp_path / "b.json").write_text(json.dumps(benchmark))
    files = []
    for name in ("bm25", "dense"):
        run = read_run(world["runs"] / f"{name}.trec")["t00"]
        path = tmp_path / f"{name}.json"
        write_scores({score_key("t00", d): run.get(d, 0.0) for d in ("d000", "d050", "d051")}, path)
        files += ["--system-scores", f"{name}={path}"]
    output = tmp_path / "ltr.json"
    code = ltr_cli.main([
        "score-mdcr", "--model", str(trained), "--benchmark", str(tmp_path / "b.json"), *files,
        "--papers", str(world["papers"]), "--graph", str(world["graph"]), "--output", str(output),
    ])  # fmt: skip
    assert code == 0
    assert sorted(read_scores(output)) == [score_key("t00", d) for d in ("d000", "d050", "d051")]


def test_importance_table_and_figure(trained, tmp_path):
    code = ltr_cli.main([
        "importance", "--model", f"ltr={trained / TRAINING_FILE}",
        "--table", str(tmp_path / "ltr_importance"), "--plot", str(tmp_path / "imp.png"),
    ])  # fmt: skip
    assert code == 0
    rows = (tmp_path / "ltr_importance.tsv").read_text().splitlines()
    assert rows[0] == "model\tfeature\tgain\tshare %" and len(rows) == 1 + 11
    assert (tmp_path / "imp.png").stat().st_size > 0


def test_a_context_query_takes_its_citing_papers_year_and_its_own_length(world, tmp_path):
    from citeval.ltr.features import paper_reader

    contexts = tmp_path / "query_papers"
    contexts.mkdir()
    rows = [{"paper_id": "t00:3", "title": "as shown in CIT we", "abstract": "x y",
             "citing_id": "t00"}]  # fmt: skip
    pq.write_table(pa.Table.from_pylist(rows), contexts / "part-0.parquet")
    facts, citing = paper_reader(world["graph"], world["papers"], contexts, "1GB")(
        {"t00:3": ["d000"]}
    )
    assert facts.years["t00:3"] == 2018 and facts.lengths["t00:3"] == 7
    assert facts.years["d000"] == 2000 and citing.cited_before("d000", 2018) == 30


def test_the_same_model_and_inputs_give_a_byte_identical_run(world, trained, tmp_path):
    outputs = []
    for name in ("a", "b"):
        output = tmp_path / f"{name}.trec"
        ltr_cli.main([
            "rank", "--model", str(trained), "--run", str(world["runs"] / "bm25.trec"),
            "--feature", f"bm25={world['runs'] / 'bm25.trec'}",
            "--feature", f"dense={world['runs'] / 'dense.trec'}",
            "--papers", str(world["papers"]), "--graph", str(world["graph"]),
            "--output", str(output),
        ])  # fmt: skip
        outputs.append(output.read_bytes())
    assert outputs[0] == outputs[1]
