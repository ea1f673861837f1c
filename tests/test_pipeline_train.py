"""End to end: encoders trained on the corpus's citation graph, as model rows in every table.

On the shared end-to-end run (tests/pipeline_runs.py): the tiny BERT is fine-tuned with
SciNCL's sampler and the packaged MiniLM on the local task's training contexts (the
prefetcher), and the trained models are embedded, retrieved, scored on MDCR and tabulated
next to their base model.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pipeline_runs import FIRST_STAGES, LTR, PREFETCHER, TRAINED

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def trained_run(e2e_run: Path) -> Path:
    return e2e_run / "results" / "e2e"


def test_trained_models_are_rows_of_every_table(trained_run):
    tables = trained_run / "tables"
    for name in ("table1_dataset_level", "table2_field_level_map", "table3_mdcr",
                 "table4_mdcr_types"):  # fmt: skip
        rows = (tables / f"{name}.tsv").read_text().splitlines()[1:]
        assert [row.split("\t")[0] for row in rows][: len(FIRST_STAGES)] == FIRST_STAGES, name
    for name in TRAINED:
        assert (trained_run / "runs" / "dataset-test" / "pool-600.rep0" / f"{name}.trec").is_file()
        assert (trained_run / "mdcr" / "scores" / "test" / f"{name}.json").is_file()


def test_training_graph_holds_no_evaluation_query(trained_run):
    train = trained_run / "train"
    nodes = set(pq.read_table(train / "graph" / "nodes.parquet").column(0).to_pylist())
    report = json.loads((train / "graph" / "report.json").read_text())
    splits = [f"{setup}-{split}" for setup in ("dataset", "field") for split in ("test", "valid")]
    local = ["local-test", "local-valid"]
    assert sorted(report["held_out"]) == [f"split:{name}" for name in sorted(splits + local)]
    for name in splits:
        queries = pq.read_table(trained_run / "samples" / name / "queries.parquet")
        assert nodes.isdisjoint(queries.column("query_id").to_pylist()), name
    # The local task's evaluated contexts: their citing papers are held out.
    for name in local:
        queries = pq.read_table(trained_run / "samples" / name / "query_papers")
        assert nodes.isdisjoint(queries.column("citing_id").to_pylist()), name
    assert report["edges_removed"] > 0
    for name in TRAINED:
        triplets = pq.read_table(train / name / "triplets.parquet")
        papers = set(triplets.column("query_id").to_pylist())
        papers |= set(triplets.column("positive_id").to_pylist())
        papers |= set(triplets.column("negative_id").to_pylist())
        assert papers <= nodes, name
        training = json.loads((train / name / "model" / "training.json").read_text())
        # Some anchors' triplets are held out for the validation curve.
        held_out = training["validation_triplets"]
        assert training["num_triplets"] + held_out == triplets.num_rows and held_out > 0
        assert training["num_triplets"] > 0 and training["steps"] > 0


def test_the_prefetcher_trains_on_earlier_contexts_and_beats_its_base_or_says_not(trained_run):
    triplets = pq.read_table(trained_run / "train" / PREFETCHER / "triplets.parquet")
    train = pq.read_table(trained_run / "samples" / "local-train" / "query_papers")
    assert set(triplets.column("query_id").to_pylist()) <= set(train.column("paper_id").to_pylist())
    evaluated = set()
    for split in ("test", "valid"):
        queries = pq.read_table(trained_run / "samples" / f"local-{split}" / "query_papers")
        evaluated |= set(queries.column("citing_id").to_pylist())
    assert evaluated.isdisjoint(train.column("citing_id").to_pylist())
    training = json.loads(
        (trained_run / "train" / PREFETCHER / "model" / "training.json").read_text()
    )
    assert training["loss"] == "in_batch"
    losses = [entry["loss"] for entry in training["loss_history"]]
    assert losses[-1] < losses[0], losses
    # Trained on earlier years' contexts, the prefetcher ranks the validation split's cited
    # papers higher than the MiniLM it started from, or its curve and the table say that
    # it did not learn (the synthetic words of a small run may not teach it).
    lines = (trained_run / "tables" / "local_valid.tsv").read_text().splitlines()
    header = lines[0].split("\t")
    rows = [line.split("\t") for line in lines[1:]]
    mrr = {row[1]: float(row[header.index("MRR")]) for row in rows}
    assert {"minilm", PREFETCHER} <= set(mrr)
    if mrr[PREFETCHER] <= mrr["minilm"]:
        assert not training["validation"]["learned"], mrr
        table = (trained_run / "tables" / "local_valid.md").read_text()
        assert f"Not learned:** {PREFETCHER} did NOT learn" in table


def test_every_trained_model_has_its_validation_curve_in_the_tables(trained_run):
    """The graph-trained encoder, the prefetcher, the ltr system's two models, the reranker
    and the local reranker each keep a curve (step 0 first) in training.json; the learning
    table and figure show them all, and each table with rows of a model that did not learn
    says so under it."""
    folders = {
        "tiny_scincl": trained_run / "train" / "tiny_scincl" / "model",
        PREFETCHER: trained_run / "train" / PREFETCHER / "model",
        LTR: trained_run / "ltr" / LTR / "model",
        f"{LTR} (local task)": trained_run / "ltr" / LTR / "local-model",
        "ce": trained_run / "rerank" / "ce" / "model",
        "ce (local task)": trained_run / "local" / "rerank" / "ce" / "model",
    }
    verdicts = {}
    for name, folder in folders.items():
        validation = json.loads((folder / "training.json").read_text())["validation"]
        steps = [point["step"] for point in validation["curve"]]
        assert steps[0] == 0 and len(steps) >= 3 and steps == sorted(steps), name
        assert validation["kept_step"] in steps and validation["queries"] > 0, name
        verdicts[name] = validation["learned"]
        assert ("did NOT learn" in (folder / "README.md").read_text()) != verdicts[name]
    rows = (trained_run / "tables" / "learning.tsv").read_text().splitlines()[1:]
    learned = {row.split("\t")[0]: row.split("\t")[-1] == "yes" for row in rows}
    assert learned == verdicts
    assert (trained_run / "tables" / "plots" / "learning.png").stat().st_size > 0
    table1 = (trained_run / "tables" / "table1_dataset_level.md").read_text()
    assert ("Not learned:** tiny_scincl" in table1) != verdicts["tiny_scincl"]
    local = (trained_run / "tables" / "local_test.md").read_text()
    assert ("Not learned:** ce " in local) != verdicts["ce (local task)"]
