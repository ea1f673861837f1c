"""citeval.systems: each kind of system declared once, and the plan asking it."""

from __future__ import annotations

from pathlib import Path

import yaml

from citeval.config import load_config
from citeval.jobs import NEEDS
from citeval.plan import Plan
from citeval.systems import (
    BM25,
    EMBEDDINGS,
    ENCODER,
    FUSION,
    KINDS,
    RERANKER,
    RUN,
    drift_of,
    systems_of,
)


def demo_config():
    with open("config/config.yaml", encoding="utf-8") as handle:
        return load_config(yaml.safe_load(handle))


def test_a_config_declares_its_systems_in_table_order():
    systems = systems_of(demo_config())
    assert [(name, s.kind.name) for name, s in systems.items()] == [
        ("bm25", "bm25"),
        ("minilm", "encoder"),
        ("minilm_scincl", "encoder"),
        ("minilm_specter", "encoder"),
        ("minilm_local", "encoder"),
        ("lsa", "embeddings"),
        ("bm25okapi", "run"),
        ("rrf", "fusion"),
        ("ltr", "ltr"),
        ("ce", "reranker"),
    ]
    assert systems["rrf"].members == ("bm25", "minilm")
    assert systems["ltr"].members == (
        "bm25", "minilm", "minilm_scincl", "minilm_specter", "minilm_local", "lsa", "bm25okapi",
        "rrf",
    )  # fmt: skip
    assert systems["ltr"].scores_mdcr


def test_each_systems_drift_follows_what_computes_its_numbers():
    """Counting is exact; a model's forward pass is computed; what the pipeline trains (the
    fine-tuned encoders, the prefetcher, the reranker, an ltr model) is trained; a fusion
    takes its loosest member's."""
    drifts = {name: drift.name for name, drift in drift_of(demo_config()).items()}
    assert drifts == {
        "bm25": "exact", "minilm": "computed", "minilm_scincl": "trained",
        "minilm_specter": "trained", "minilm_local": "trained", "lsa": "computed",
        "bm25okapi": "computed", "rrf": "computed", "ltr": "trained", "ce": "trained",
    }  # fmt: skip
    raw = yaml.safe_load(Path("config/config.yaml").read_text(encoding="utf-8"))
    raw["fusion"] = [{"name": "rrf", "runs": ["bm25", "minilm_local"]}]
    assert drift_of(load_config(raw))["rrf"].name == "trained"


def test_every_kind_names_jobs_and_environments_that_exist():
    for kind in KINDS.values():
        assert kind.mdcr_job in NEEDS, kind
        assert all(job in NEEDS for job in kind.run_jobs), kind
        with open(f"envs/{kind.mdcr_env}.yaml", encoding="utf-8"):
            pass
    assert [k.name for k in KINDS.values() if k.first_stage] == [
        "bm25", "encoder", "embeddings", "run", "fusion", "ltr"
    ]  # fmt: skip
    assert not RERANKER.first_stage and ENCODER.embeds and FUSION.combines and BM25.single
    # A user's system and a learned combination are evaluated on MDCR but never shape it; a
    # run's scores are imported.
    assert [k.name for k in KINDS.values() if not k.shapes_mdcr] == ["embeddings", "run", "ltr"]
    assert EMBEDDINGS.embeds and RUN.mdcr_score is None


def test_the_mdcr_rules_score_with_their_kinds_word():
    """Each MDCR scoring rule runs ``mdcr score --kind`` with its kind's declared word, and
    uses its kind's job need."""
    text = "".join(
        Path(f"rules/{name}.smk").read_text(encoding="utf-8")
        for name in ("mdcr", "rerank", "external")
    )
    for kind, rule in (
        (BM25, "mdcr_score_bm25"),
        (ENCODER, "mdcr_score_dense"),
        (EMBEDDINGS, "mdcr_score_embeddings"),
        (RUN, "mdcr_import_scores"),
        (FUSION, "mdcr_score_fusion"),
        (RERANKER, "mdcr_score_rerank"),
    ):
        block = text[text.index(f"rule {rule}:") :].split("\nrule ")[0]
        word = f"--kind {kind.mdcr_score} " if kind.mdcr_score else "citeval.external mdcr-scores"
        assert word in block, rule
        assert kind.mdcr_job == rule


def test_the_plan_asks_the_kind_not_the_name():
    """A fusion of a fusion still reads embeddings through its members, and a run's
    metrics join its retrieval's chain by kind."""
    with open("config/config.yaml", encoding="utf-8") as handle:
        raw = yaml.safe_load(handle)
    raw["fusion"].append({"name": "rrf2", "runs": ["rrf", "bm25"]})
    plan = Plan.from_config(load_config(raw))
    assert plan.systems.uses_encoders("rrf2")
    assert not plan.systems.uses_encoders("bm25")
    assert plan.systems.chain_of_metrics("bm25") == BM25.chain
    assert plan.systems.chain_of_metrics("minilm") == ENCODER.chain
    assert plan.systems.chain_of_metrics("rrf2") is None
    assert plan.systems.chain_of_metrics("bm25.ce@10") is None
    timings = plan.systems.run_timings("rrf2", ("dataset-test", "pool-400.rep0"))
    # BM25's search once, though both fusions fuse it: its cost counts once.
    assert timings == [
        "results/demo/timings/bm25_search/dataset-test/pool-400.rep0.tsv",
        "results/demo/timings/dense_retrieve/dataset-test/pool-400.rep0/minilm.tsv",
        "results/demo/timings/fuse/dataset-test/pool-400.rep0/rrf.tsv",
        "results/demo/timings/fuse/dataset-test/pool-400.rep0/rrf2.tsv",
    ]


def test_the_plan_names_no_system():
    """No comparison in the plan tests a system's or kind's name (``model == "bm25"``,
    ``name in ("bm25", ...)``): flow decisions ask the kind."""
    import ast

    names = {kind.name for kind in KINDS.values()} | set(systems_of(demo_config()))
    for path in sorted(Path("workflow/citeval/plan").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        compared = {
            node.value
            for comparison in ast.walk(tree)
            if isinstance(comparison, ast.Compare)
            for node in ast.walk(comparison)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
        }
        assert not compared & names, path
