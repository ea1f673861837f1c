"""End to end: Snakemake runs the whole pipeline on a small synthetic corpus.

Checks the acceptance criteria of the pipeline as a user meets them, on the run every
end-to-end module shares (tests/pipeline_runs.py): runs, qrels and the paper's tables
appear with every system's rows and hold the numbers regressions/e2e.yaml pins; a change
of config reruns only what it touches; a second dry run has nothing to do. The hard kill,
its recovery and byte-identical reruns are tests/test_recovery.py's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from pipeline_runs import (
    FIRST_STAGES,
    LOCAL_MODELS,
    LOCAL_RERANKED,
    LTR,
    REPO,
    RERANKED,
    RERANKED_FIRST_STAGES,
    snakemake,
)

from citeval.collection_list import read_collections, tuning_collections
from citeval.regressions.cli import main as regressions

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def first_run(e2e_run: Path) -> Path:
    return e2e_run


def test_outputs_exist_and_tables_have_every_model(first_run):
    out = first_run / "results" / "e2e"
    table1 = (out / "tables" / "table1_dataset_level.tsv").read_text().splitlines()
    assert table1[0].split("\t") == ["model", "600 MAP", "600 NDCG", "600 R@30"]
    rows = [*FIRST_STAGES, *RERANKED]
    assert [row.split("\t")[0] for row in table1[1:]] == rows
    table2 = (out / "tables" / "table2_field_level_map.tsv").read_text().splitlines()
    assert table2[0].split("\t") == ["model", "Biology", "Art", "AVG"]
    for name in ("table7_field_level_ndcg", "table8_field_level_recall"):
        assert (out / "tables" / f"{name}.md").read_text().startswith("### Table")
    bm25_map = float(table1[1].split("\t")[1])
    assert 5.0 < bm25_map <= 100.0, "BM25 should find the synthetic corpus's lexical signal"
    runs = [run for run in (out / "runs").rglob("*.trec") if "local-" not in run.parent.parent.name]
    reranked = {f"{label.replace('>', '.')}.trec" for label in RERANKED}
    assert {run.name for run in runs} == {f"{name}.trec" for name in FIRST_STAGES} | reranked
    rerank = (out / "tables" / "table_rerank_dataset_level.tsv").read_text().splitlines()
    assert rerank[0].split("\t")[1:] == [
        f"600 {m}" for m in ("MAP", "NDCG", "R@30", "R@10", "MRR", "F1@20")
    ]
    assert [row.split("\t")[0] for row in rerank[1:]] == [*RERANKED_FIRST_STAGES, LTR, *RERANKED]
    pvalues = (out / "tables" / "table1_dataset_level_pvalues.tsv").read_text().splitlines()
    assert {line.split("\t")[1] for line in pvalues[1:]} == set(rows) - {"bm25"}
    tradeoff = (out / "tables" / "tradeoff.tsv").read_text().splitlines()
    assert [tuple(line.split("\t")[:2]) for line in tradeoff[1:]] == [
        *((first, k) for first in RERANKED_FIRST_STAGES for k in ("0", "5", "10")),
        (LTR, "0"),
    ]
    assert (out / "tables" / "tradeoff.png").stat().st_size > 10_000
    assert sorted((out / "samples" / "dataset-test" / "qrels").glob("*.qrels"))
    for log in (out / "logs").rglob("*.log"):
        assert "Traceback" not in log.read_text(), log


def test_main_tables_hold_the_numbers_the_regression_file_pins(first_run, capsys):
    """Within each cell's tolerance: exact for what is counted, a measured drift for what a
    model computes (regressions/e2e.yaml). A change that moves a number fails here with the
    cells that moved, until ``citeval regressions update e2e`` pins the new ones."""
    expected = REPO / "regressions" / "e2e.yaml"
    results = first_run / "results" / "e2e"
    status = regressions(["check", str(expected), "--results", str(results), "--misses"])
    said = capsys.readouterr()
    assert status == 0, said.out[-8000:] + said.err


def test_local_task_has_contexts_splits_and_tables(first_run):
    out = first_run / "results" / "e2e"
    report = json.loads((out / "local" / "contexts_report.json").read_text())
    assert report["merge"]["contexts_kept"] > 0
    sample = json.loads((out / "samples" / "local-report.json").read_text())
    assert sample["splits"]["test"]["queries"] == 40
    for split in ("test", "valid"):
        lines = (out / "tables" / f"local_{split}.tsv").read_text().splitlines()
        assert lines[0].split("\t")[:3] == ["granularity", "model", "MRR"]
        rows = [line.split("\t") for line in lines[1:]]
        labels = [*LOCAL_MODELS, *LOCAL_RERANKED]
        assert [(row[0], row[1]) for row in rows] == [("chars-200", label) for label in labels]
        r100 = lines[0].split("\t").index("R@100")
        recall = {row[1]: row[r100] for row in rows}
        assert float(recall["bm25"]) > 20.0, "BM25 should find the citing sentences' words"
        # Reranking the top K changes no candidate: R@100 is BM25's.
        assert recall["bm25>ce@20"] == recall["bm25"]
        # The oracle prefetch holds every cited paper in its top K: R@K is 100.
        r20 = lines[0].split("\t").index("R@20")
        assert float(next(row[r20] for row in rows if row[1] == "bm25+oracle20>ce@20")) == 100.0
    tradeoff = (out / "tables" / "local_tradeoff.tsv").read_text().splitlines()
    assert [line.split("\t")[1] for line in tradeoff[1:]] == ["0", "20"]


def test_mdcr_is_built_scored_and_tabulated_for_every_model(first_run):
    out = first_run / "results" / "e2e"
    for name in ("mdcr_test.json", "mdcr_test_data.jsonl", "mdcr_test_jaccard.tsv",
                 "mdcr_test_report.json"):  # fmt: skip
        assert (out / "mdcr" / name).is_file(), name
    benchmark = json.loads((out / "mdcr" / "mdcr_test.json").read_text())
    assert set(benchmark) <= {"Biology", "Art"}
    table3 = (out / "tables" / "table3_mdcr.tsv").read_text().splitlines()
    header = table3[0].split("\t")
    assert header[0] == "model" and header[-3:] == ["AVG MAP", "AVG NDCG", "AVG R@5"]
    assert [row.split("\t")[0] for row in table3[1:]] == [*FIRST_STAGES, "ce"]
    table4 = (out / "tables" / "table4_mdcr_types.tsv").read_text().splitlines()
    kinds = {column.split(" ")[0] for column in table4[0].split("\t")[1:]}
    assert {"graph", "most_cited", "random"} <= kinds
    assert [row.split("\t")[0] for row in table4[1:]] == [*FIRST_STAGES, "ce"]
    for row in table3[1:] + table4[1:]:
        assert all(0.0 <= float(value) <= 100.0 for value in row.split("\t")[1:])


def test_the_ltr_system_trains_on_both_tasks_and_shows_its_features(first_run):
    out = first_run / "results" / "e2e"
    for folder in ("model", "local-model"):
        record = json.loads((out / "ltr" / LTR / folder / "training.json").read_text())
        assert record["feature_systems"] == ["bm25", "bm25okapi"] and record["trees"] >= 1
        assert record["training_queries"] > 0 and record["held_out_queries"] > 0
        assert record["validation"]["curve"][0]["step"] == 0
    importance = (out / "tables" / "ltr_importance.tsv").read_text().splitlines()
    assert {line.split("\t")[0] for line in importance[1:]} == {LTR, f"{LTR} (local task)"}
    assert (out / "tables" / "plots" / "ltr_importance.png").stat().st_size > 5_000
    learning = (out / "tables" / "learning.tsv").read_text()
    assert f"\n{LTR}\t" in learning and f"\n{LTR} (local task)\t" in learning
    # Its runs hold the first stage's candidates, no more, no fewer.
    for run in (out / "runs").rglob(f"{LTR}.trec"):
        first = run.with_name("bm25.trec").read_text().splitlines()
        assert len(run.read_text().splitlines()) == len(first), run


def test_bm25_is_tuned_on_the_policys_collections_and_picks_the_grid_argmax(first_run):
    out = first_run / "results" / "e2e"
    config = yaml.safe_load((first_run / "config.yaml").read_text())
    tune = config["bm25"]["tune"]
    for setup, expected in (("dataset", ["pool-600.rep0"]), ("field", None)):
        tuning = json.loads((out / "tuning" / f"bm25-{setup}.json").read_text())
        valid = read_collections(out / "samples" / f"{setup}-valid")
        # Tuning leaves out a collection that sampling left without queries.
        policy = [c.name for c in tuning_collections(setup, valid) if c.n_queries > 0]
        assert tuning["collections"] == policy == (expected or [c.name for c in valid][1:])
        assert (tuning["k1_grid"], tuning["b_grid"]) == (tune["k1_grid"], tune["b_grid"])
        assert (tuning["metric"], tuning["k"]) == ("map", config["retrieval"]["k"])
        points = [(k1, b) for k1 in tune["k1_grid"] for b in tune["b_grid"]]
        assert [(p["k1"], p["b"]) for p in tuning["grid"]] == points
        for point in tuning["grid"]:
            assert sorted(point["per_collection"]) == sorted(policy)
            assert point["score"] == pytest.approx(
                sum(point["per_collection"].values()) / len(policy)
            )
        best = max(p["score"] for p in tuning["grid"])
        first = next(p for p in tuning["grid"] if p["score"] == best)
        assert (tuning["k1"], tuning["b"], tuning["score"]) == (first["k1"], first["b"], best)
        assert 0.0 < best <= 1.0


def test_a_collection_without_queries_still_exists_and_flows_through(first_run):
    """Art has one eligible query left after the test draw, so its validation collection
    is planned, sampled without queries, and every stage handles it: empty runs, BM25
    tuning and MDCR's validation split leave it out."""
    out = first_run / "results" / "e2e"
    (art,) = [c for c in read_collections(out / "samples" / "field-valid") if c.group == "art"]
    assert art.n_queries == 0 and art.pool_size > 0
    warnings = json.loads((out / "samples" / "field-report.json").read_text())["warnings"]
    assert "field-level 'Art' valid queries: requested 3, but only 0 are available" in warnings
    runs = sorted((out / "runs" / "field-valid" / "art.rep0").glob("*.trec"))
    # Validation runs are made for what needs them: BM25's tuning, MDCR's validation
    # split (its model types: bm25, tiny, rrf) and the fusion's members (lsa).
    assert [run.name for run in runs] == ["bm25.trec", "lsa.trec", "rrf.trec", "tiny.trec"]
    assert all(run.read_text() == "" for run in runs)
    tuning = json.loads((out / "tuning" / "bm25-field.json").read_text())
    assert "art.rep0" not in tuning["collections"]
    assert "Art" not in json.loads((out / "mdcr" / "mdcr_val.json").read_text())


def test_visual_report_holds_the_tables_and_figures(first_run):
    out = first_run / "results" / "e2e" / "tables"
    figures = ["map_by_pool_size.png", "field_map.png", "mdcr_types.png"]
    assert all((out / "plots" / name).stat().st_size > 10_000 for name in figures)
    report = first_run / "report.html"
    result = snakemake(first_run, "--report", str(report))
    assert result.returncode == 0, result.stderr[-3000:]
    html = report.read_text()
    names = ["tradeoff.png", "table1_dataset_level.tsv", "table4_mdcr_types.tsv"]
    for name in [*figures, *names, "local_test.tsv", "local_tradeoff.png"]:
        assert name in html, name
    assert "how quickly" in html  # a figure's caption (report/map_by_pool_size.rst)


def planned_jobs(workdir: Path, change, *options: str) -> dict[str, list[str]]:
    """Rule -> output lines of the jobs a dry run plans after ``change(config)``."""
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    change(config)
    (workdir / "variant.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(workdir, "-n", *options, config="variant.yaml")
    assert result.returncode == 0, result.stderr[-3000:]
    jobs: dict[str, list[str]] = {}
    rule = None
    for line in result.stdout.splitlines():
        stripped = line.strip()  # jobs of a job group are listed indented under it
        if stripped.startswith(("rule ", "localrule ")) and stripped.endswith(":"):
            rule = stripped.split()[1].rstrip(":")
            jobs.setdefault(rule, [])
        elif rule and line.strip().startswith("output:"):
            jobs[rule].append(line.strip().removeprefix("output:").strip())
    jobs.pop("all", None)
    return jobs


UPSTREAM = {"synth", "ingest_parse", "ingest_merge", "prefilter", "sample", "embed_ids"}
AGGREGATES = {"tables", "plots", "mdcr_tables", "rerank_tradeoff", "local_tables"}


def test_changing_bm25_reruns_only_bm25_and_what_depends_on_it(first_run):
    def change(config):
        config["bm25"]["tune"]["k1_grid"] = [0.8, 1.2]

    jobs = planned_jobs(first_run, change)
    assert {"bm25_tune", "bm25_search", "metrics", "tables"} <= set(jobs)
    untouched = {"encode", "bm25_analyze", "bm25_index", "dense_retrieve"}
    assert not set(jobs) & (UPSTREAM | untouched)


def test_changing_one_model_reruns_only_its_jobs_and_their_dependents(first_run):
    def change(config):
        config["models"]["tiny"]["batch_size"] = 8

    jobs = planned_jobs(first_run, change)
    assert {"encode", "dense_retrieve", "metrics", "tables"} <= set(jobs)
    assert all("tiny" in out for out in jobs["encode"] + jobs["dense_retrieve"])
    assert not set(jobs) & (UPSTREAM | {"bm25_analyze", "bm25_index", "bm25_tune", "bm25_search"})


def test_adding_a_model_only_adds_jobs(first_run):
    def change(config):
        config["fusion"].append({"name": "rrf2", "runs": ["tiny", "bm25"], "k": 30})
        # MDCR's model-based types are chosen among the compared models: fixed here.
        config["mdcr"] = {"models": ["bm25", "tiny", "rrf"]}

    jobs = planned_jobs(first_run, change)
    for rule, outputs in jobs.items():
        if rule not in AGGREGATES:
            assert all("rrf2" in out for out in outputs), (rule, outputs)
    assert "fuse" in jobs and "mdcr_score_fusion" in jobs


def test_changing_the_corpus_reruns_everything(first_run):
    def change(config):
        config["corpus"]["synthetic"]["num_papers"] += 1

    jobs = planned_jobs(first_run, change)
    every_job = planned_jobs(first_run, lambda config: None, "--forceall")
    assert {rule: len(outputs) for rule, outputs in jobs.items()} == {
        rule: len(outputs) for rule, outputs in every_job.items()
    }


def test_changing_table_formatting_reruns_only_the_tables(first_run):
    def change(config):
        config.setdefault("tables", {}).setdefault("significance", {})["alpha"] = 0.01

    assert set(planned_jobs(first_run, change)) <= AGGREGATES


def test_second_dry_run_has_nothing_to_do(first_run):
    result = snakemake(first_run, "-n")
    assert result.returncode == 0, result.stderr
    assert "Nothing to be done" in result.stdout + result.stderr
