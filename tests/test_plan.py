"""citeval.plan and citeval.layout: what a config runs and where it writes, without Snakemake."""

from __future__ import annotations

import re

import pytest
import yaml

from citeval.commands import settings_flags, tradeoff_arguments
from citeval.config import load_config, load_config_file
from citeval.layout import WILDCARDS, Layout, reranked_label, reranked_run
from citeval.plan import Plan


def demo_raw():
    with open("config/config.yaml", encoding="utf-8") as handle:
        return yaml.safe_load(handle)


@pytest.fixture(scope="module")
def plan():
    return Plan.from_config(load_config(demo_raw()))


def test_setups_models_and_names(plan):
    assert plan.setups.names == ["dataset", "field"]
    assert plan.systems.first_stages == [
        "bm25", "minilm", "minilm_scincl", "minilm_specter", "minilm_local", "lsa", "bm25okapi",
        "rrf", "ltr",
    ]  # fmt: skip
    assert list(plan.systems.reranked_runs) == ["bm25.ce@10", "bm25.ce@20"]
    assert plan.systems.label("bm25.ce@10") == "bm25>ce@10" and plan.systems.label("rrf") == "rrf"
    assert plan.systems.metric_cutoffs == [30, 10, 20]
    assert plan.mdcr.models == [*plan.systems.first_stages, "ce"]


def test_wildcard_constraints_match_the_planned_names_only(plan):
    constraints = plan.wildcard_constraints()
    assert re.fullmatch(constraints["model"], "bm25.ce@10")
    assert re.fullmatch(constraints["model"], "minilm_local")
    assert not re.fullmatch(constraints["model"], "minilm_loca")
    assert re.fullmatch(constraints["dense_model"], "minilm_scincl")
    assert not re.fullmatch(constraints["dense_model"], "bm25")
    assert re.fullmatch(constraints["fusion"], "rrf")
    # A config without a kind of name plans none of its files.
    raw = demo_raw()
    raw["fusion"], raw["local"]["models"], raw["ltr"] = [], ["bm25", "minilm"], []
    switched_off = Plan.from_config(load_config(raw))
    assert not re.fullmatch(switched_off.wildcard_constraints()["fusion"], "rrf")
    assert not re.fullmatch(switched_off.wildcard_constraints()["ltr"], "ltr")


def test_query_papers_get_a_store_of_their_own_only_where_prompts_differ(plan, tmp_path):
    # The demo's encoders have no prompts: one store, no query jobs, no --role.
    assert plan.encoders.queries_apart == frozenset()
    assert plan.encoders.query_shard("minilm", "dataset", "test") is None
    assert plan.encoders.role_flags("minilm", "document") == []
    assert "query_prompt" not in plan.systems.model_specs["minilm"]
    assert plan.encoders.query_shard("minilm", "local", "test") == (
        "results/demo/local/embeddings/minilm/test/shard-00000.npy"
    )
    # Equal prompts: still one store.
    raw = demo_raw()
    raw["models"]["minilm"].update(query_prompt="x: ", document_prompt="x: ")
    assert Plan.from_config(load_config(raw)).encoders.queries_apart == frozenset()
    # Different prompts, configured: the model and the encoders trained from it.
    raw["models"]["minilm"]["query_prompt"] = "query: "
    apart = Plan.from_config(load_config(raw))
    assert apart.encoders.queries_apart == {
        "minilm", "minilm_scincl", "minilm_specter", "minilm_local"
    }  # fmt: skip
    assert apart.encoders.query_shard("minilm", "field", "valid") == (
        "results/demo/query_embeddings/minilm/field-valid/shard-00000.npy"
    )
    assert apart.encoders.query_shard("minilm", "local", "test") == (
        "results/demo/local/embeddings/minilm/test/shard-00000.npy"
    )
    assert apart.encoders.role_flags("minilm", "query") == ["--role", "query"]
    assert apart.systems.model_specs["minilm"]["query_prompt"] == "query: "
    # Different prompts in a sentence-transformers folder this machine holds.
    folder = tmp_path / "st"
    folder.mkdir()
    (folder / "modules.json").write_text("[]")
    (folder / "config_sentence_transformers.json").write_text(
        '{"prompts": {"query": "query: ", "passage": "passage: "}}'
    )
    raw = demo_raw()
    raw["models"]["minilm"]["path"] = str(folder)
    assert "minilm" in Plan.from_config(load_config(raw)).encoders.queries_apart
    # A folder that is not here yet (an encoder not trained): the configured prompts.
    raw["models"]["minilm"]["path"] = str(tmp_path / "later")
    assert Plan.from_config(load_config(raw)).encoders.queries_apart == frozenset()


def test_users_systems_are_imported_evaluated_and_never_shape_mdcr(plan):
    systems = plan.systems
    assert (systems.stores, systems.imported_runs) == (["lsa"], ["bm25okapi"])
    assert systems.vector_models == [*systems.encoders, "lsa"]
    assert (systems.similarity("lsa"), systems.pooling("lsa")) == ("cosine", None)
    assert (systems.similarity("minilm"), systems.pooling("minilm")) == ("cosine", "mean")
    # Their commands write into the layout, where the imports read.
    assert systems.store_source("lsa") == "results/demo/external/lsa/store"
    assert systems.store_input("lsa", contexts=True) == "results/demo/external/lsa"
    assert systems.run_source("bm25okapi", "field", "test", "art.rep0") == (
        "results/demo/external/bm25okapi/runs/field-test/art.rep0.trec"
    )
    assert plan.encoders.shards("lsa") == ["results/demo/embeddings/lsa/shard-00000.npy"]
    assert "lsa" not in plan.mdcr.build_models and "bm25okapi" not in plan.mdcr.build_models
    assert {"lsa", "bm25okapi"} <= set(plan.mdcr.models)
    # The local ltr model trains on the training split's lsa run: its contexts' vectors too.
    assert plan.local.context_vector_splits("lsa") == ["test", "valid", "train"]
    assert plan.local.context_vector_splits("bm25okapi") == []
    constraints = plan.wildcard_constraints()
    assert re.fullmatch(constraints["store"], "lsa") and re.fullmatch(
        constraints["dense_model"], "lsa"
    )
    assert not re.fullmatch(constraints["imported_run"], "lsa")


def test_users_files_are_read_where_they_are(plan):
    raw = demo_raw()
    raw["systems"] = {
        "embeddings": [
            {"name": "v", "similarity": "l2", "store": "/data/v.parquet", "contexts": "/c"}
        ],
        "runs": [{"name": "r", "runs": "/runs/{setup}/{split}/{collection}.trec"}],
    }
    raw["local"]["models"] = ["bm25", "v", "r"]
    raw["ltr"] = [{"name": "ltr", "first_stage": "bm25", "features": ["bm25", "r"]}]
    files = Plan.from_config(load_config(raw))
    assert files.systems.store_input("v") == "/data/v.parquet"
    assert files.systems.store_source("v", contexts=True) == "/c"
    assert files.systems.run_source("r", "local", "test", "contexts.rep0") == (
        "/runs/local/test/contexts.rep0.trec"
    )
    # A run system without MDCR scores has no MDCR rows.
    assert "r" not in files.mdcr.models and "v" in files.mdcr.models
    # Nor has an ltr system reading that run's scores.
    assert "ltr" not in files.mdcr.models
    assert files.systems.commands("runs") == {}


def test_trained_encoders_join_the_registry_as_their_base_loaded_from_their_folder(plan):
    assert set(plan.training.models) == {"minilm_scincl", "minilm_specter", "minilm_local"}
    assert plan.training.graph_trained == ["minilm_scincl", "minilm_specter"]
    assert plan.training.context_trained == ["minilm_local"]
    entry = plan.systems.model_specs["minilm_scincl"]
    assert entry["path"] == "./results/demo/train/minilm_scincl/model"
    assert {k: v for k, v in entry.items() if k != "path"} == {
        k: v for k, v in plan.systems.model_specs["minilm"].items() if k != "path"
    }
    assert plan.outputs.provenance_config["models"]["minilm_specter"]["pooling"] == "mean"


def test_collections_follow_the_config(plan):
    names = [c.name for c in plan.setups.collections("dataset", "test")]
    assert names == ["pool-400.rep0", "pool-400.rep1", "pool-800.rep0", "pool-800.rep1"]
    assert len(plan.setups.collections("field", "test")) == 4
    assert [c.name for c in plan.setups.collections("dataset", "valid")] == [
        "pool-400.rep0",
        "pool-800.rep0",
    ]
    assert [c.name for c in plan.setups.bm25_tuning_collections("dataset")] == ["pool-400.rep0"]
    # The reranker's training split uses the first setup's tuned k1/b.
    assert (
        plan.setups.bm25_parameters("dataset", "train") == "results/demo/tuning/bm25-dataset.json"
    )
    assert plan.setups.bm25_parameters("field", "test") == "results/demo/tuning/bm25-field.json"
    assert plan.setups.bm25_parameters("local", "test") is None
    assert plan.mdcr.bm25_parameters() == "results/demo/tuning/bm25-field.json"


def test_job_counts_of_the_default_run(plan):
    # 8 test collections x (8 first stages, the ltr system + 2 reranked runs).
    assert len(plan.outputs.test_metric_files()) == 88
    assert plan.mdcr.splits == ["test", "valid"]
    # rep-0 field pools x compared models (the built-in first stages)
    assert len(plan.mdcr.build_runs("test")) == 4 * 6
    assert plan.mdcr.types_from("valid") == ["results/demo/mdcr/mdcr_test_report.json"]
    assert plan.mdcr.types_from("test") == []
    assert plan.encoders.sample_dirs == [
        "results/demo/samples/dataset-test",
        "results/demo/samples/field-test",
        "results/demo/samples/field-valid",
        "results/demo/samples/dataset-train",
        "results/demo/samples/local-test",
        "results/demo/samples/local-valid",
        "results/demo/samples/local-train",
    ]
    assert plan.encoders.shards("minilm") == ["results/demo/embeddings/minilm/shard-00000.npy"]
    assert plan.held_out_sample_dirs == [
        "results/demo/samples/dataset-test",
        "results/demo/samples/dataset-valid",
        "results/demo/samples/field-test",
        "results/demo/samples/field-valid",
        "results/demo/samples/local-test",
        "results/demo/samples/local-valid",
    ]
    outputs = plan.outputs.final()
    assert len(outputs) == len(set(outputs))
    assert "results/demo/tables/tradeoff.png" in outputs
    assert "results/demo/tables/plots/mdcr_types.png" in outputs
    assert "results/demo/tables/plots/ltr_importance.png" in outputs
    assert all(path.startswith("results/demo/") for path in outputs)


def test_ltr_trains_on_the_training_split_only(plan):
    """Its runs, labels and features on the training split: never a test or validation
    split's file (which the training graph holds out as well)."""
    files = plan.ltr.training_files("ltr")
    paths = [files["first_stage"], files["qrels"], *files["features"].values()]
    assert all("/dataset-train/" in path for path in paths), paths
    assert files["qrels"] == "results/demo/samples/dataset-train/qrels/pool-3000.rep0.qrels"
    assert list(files["features"]) == [
        "bm25", "minilm", "minilm_scincl", "minilm_specter", "minilm_local", "lsa", "bm25okapi",
        "rrf",
    ]  # fmt: skip
    # The encoders it reads embed the training split's papers.
    assert "results/demo/samples/dataset-train" in plan.encoders.sample_dirs
    assert plan.ltr.settings("ltr") == {
        "k": 100, "learning_rate": 0.05, "num_leaves": 15, "min_data_in_leaf": 20,
        "max_trees": 300, "eval_every": 10, "validation_fraction": 0.2,
    }  # fmt: skip
    assert plan.ltr.mdcr_scores("ltr", "test")["rrf"] == "results/demo/mdcr/scores/test/rrf.json"
    assert plan.ltr.feature_runs("ltr", "field", "test", "g.rep0")["bm25"] == (
        "results/demo/runs/field-test/g.rep0/bm25.trec"
    )
    # Listed in local.models, it trains a local model on the local training contexts.
    assert plan.local.ltr_rows == ["ltr"]
    local = plan.ltr.training_files("ltr", local=True)
    assert local["qrels"] == "results/demo/samples/local-train/qrels/contexts.rep0.qrels"
    assert all(
        "/local-train/" in path for path in [local["first_stage"], *local["features"].values()]
    )
    assert plan.ltr.model("ltr", "local") == "results/demo/ltr/ltr/local-model"
    assert plan.ltr.query_papers("local", "test") == [
        "--query-papers", "results/demo/samples/local-test/query_papers"
    ]  # fmt: skip
    assert plan.ltr.query_papers("dataset", "test") == []
    # The commands' files, in the model's order; the local task's with its contexts.
    words = plan.ltr.training_arguments("ltr", local=True)
    assert words[:2] == ["--first-stage", "bm25=" + local["first_stage"]]
    assert words[2:4] == ["--feature", "bm25=results/demo/runs/local-train/contexts.rep0/bm25.trec"]
    assert words[-4:] == [
        "--qrels", local["qrels"], "--query-papers", "results/demo/samples/local-train/query_papers"
    ]  # fmt: skip
    assert plan.ltr.rank_arguments("ltr", "dataset", "test", "pool-400.rep0")[-2:] == [
        "--feature", "rrf=results/demo/runs/dataset-test/pool-400.rep0/rrf.trec"
    ]  # fmt: skip
    assert plan.ltr.training_inputs("ltr")["samples"] == "results/demo/samples/dataset-train"
    assert plan.local.context_vector_splits("minilm_scincl") == ["test", "valid", "train"]


def test_the_tradeoff_reads_its_first_stages_timings(plan):
    assert plan.rerank.train_collection == "pool-3000.rep0"
    assert plan.rerank.tradeoff_collection == "pool-800.rep0"
    rows = [(row.first_stage, row.k) for row in plan.rerank.tradeoff.rows]
    # The ltr system is a point of its own: its run's cost against its effectiveness.
    assert rows == [("bm25", 0), ("bm25", 10), ("bm25", 20), ("ltr", 0)]
    timings = plan.rerank.tradeoff.first_stage_timings
    assert timings["bm25"] == ["results/demo/timings/bm25_search/dataset-test/pool-800.rep0.tsv"]
    fused = plan.systems.run_timings("rrf", ("dataset-test", "pool-800.rep0"))
    assert fused[-1] == "results/demo/timings/fuse/dataset-test/pool-800.rep0/rrf.tsv"
    assert len(fused) == 3  # bm25's search, minilm's retrieval, the fusion
    # Every job its features need, each once (BM25 is the first stage, a feature and a
    # member of rrf), then its own.
    assert timings["ltr"][-1] == "results/demo/timings/ltr_rank/dataset-test/pool-800.rep0/ltr.tsv"
    assert len(timings["ltr"]) == len(set(timings["ltr"])) == 9
    assert plan.systems.rerank_table_rows == ["bm25", "ltr", "bm25>ce@10", "bm25>ce@20"]


def test_the_local_task_of_the_default_run(plan):
    assert plan.local.inputs == {
        shard: f"resources/synthetic/demo/pdf_parses-{shard}.jsonl.gz" for shard in plan.shards
    }
    assert plan.local.query_year == 2019 and plan.local.splits == ["test", "valid"]
    assert list(plan.local.rows) == [
        "bm25", "minilm", "minilm_local", "lsa", "bm25okapi", "rrf", "ltr", "bm25>ce@10",
        "bm25>ce@20",
    ]  # fmt: skip
    assert plan.local.rows["bm25>ce@20"] == "bm25.ce@20"
    # The ltr row's features run on the local task too.
    assert plan.local.runs == [
        "bm25", "minilm", "minilm_scincl", "minilm_specter", "minilm_local", "lsa", "bm25okapi",
        "rrf", "ltr",
    ]  # fmt: skip
    assert plan.local.encoders == [
        "minilm",
        "minilm_scincl",
        "minilm_specter",
        "minilm_local",
        "lsa",
    ]
    assert plan.local.cutoffs == [1, 5, 10, 20, 50, 100, 200, 500, 1000]
    assert plan.metric_cutoffs("local") == plan.local.cutoffs
    assert plan.setups.retrieval_k("local") == 1000 and plan.setups.retrieval_k("dataset") == 500
    assert plan.local.train_run == "results/demo/runs/local-train/contexts.rep0/bm25.trec"
    assert plan.local.metrics("test")["bm25>ce@20"] == (
        "results/demo/metrics/local-test/contexts.rep0/bm25.ce@20.tsv"
    )
    assert plan.training.is_prefetcher("minilm_local")
    assert not plan.training.is_prefetcher("minilm_scincl")
    assert plan.training.anchor_papers() == "results/demo/samples/local-train/query_papers"
    tradeoff = plan.local.tradeoff
    assert "results/demo/timings/bm25_search/local-test/contexts.rep0.tsv" in tradeoff.inputs
    assert tradeoff_arguments(tradeoff).startswith("--first-stage bm25 ")
    outputs = plan.outputs.final()
    for name in ("local_test.md", "local_valid.tsv", "local_tradeoff.png"):
        assert f"results/demo/tables/{name}" in outputs


def test_the_oracle_prefetch_adds_a_reranked_row_per_k():
    raw = demo_raw()
    raw["local"]["rerank"]["oracle"] = True
    plan = Plan.from_config(load_config(raw))
    assert plan.local.oracle_runs == {"bm25+oracle10": ("bm25", 10), "bm25+oracle20": ("bm25", 20)}
    assert plan.local.rows["bm25+oracle20>ce@20"] == "bm25+oracle20.ce@20"


def test_acm_cr_evaluates_its_curated_contexts_on_the_test_split():
    with open("config/acm-cr.yaml", encoding="utf-8") as handle:
        raw = {**demo_raw(), **yaml.safe_load(handle)}
    raw["local"] = {**demo_raw()["local"], **raw["local"]}
    plan = Plan.from_config(load_config(raw))
    assert plan.local.splits == ["test"]
    assert plan.local.inputs == {"contexts": "../shared/data/acm-cr/contexts.jsonl"}
    assert plan.local.reranker is None and plan.local.train_run is None
    assert list(plan.local.rows) == ["bm25", "minilm", "rrf"]


def test_switched_off_parts_plan_nothing():
    raw = demo_raw()
    raw["mdcr"] = {"enabled": False}
    raw["rerank"]["enabled"] = False
    raw["encode"]["models"] = ["minilm"]
    raw["local"]["enabled"] = False
    raw["ltr"] = []
    plan = Plan.from_config(load_config(raw))
    assert plan.systems.reranker is None and plan.systems.reranked_runs == {}
    assert not plan.training_split and plan.ltr.outputs() == []
    assert plan.mdcr.outputs() == [] and plan.rerank.outputs() == []
    assert plan.training.models == {} and plan.systems.metric_cutoffs == [30]
    assert "results/demo/samples/field-valid" not in plan.encoders.sample_dirs
    assert plan.local.inputs == {} and plan.local.outputs() == [] and plan.local.rows == {}


def test_imported_mdcr_scores_the_named_files_and_holds_their_queries_out():
    raw = demo_raw()
    raw["mdcr"] = {
        "source": "import",
        "import": {"test": {"benchmark": "b.json", "data": "d.jsonl"}},
    }
    plan = Plan.from_config(load_config(raw))
    assert plan.mdcr.splits == ["test"]
    assert plan.mdcr.files("test") == {"benchmark": "b.json", "data": "d.jsonl"}
    assert plan.mdcr.held_out_files == ["b.json"]
    assert not any("_jaccard" in path for path in plan.mdcr.outputs())


def test_one_setup_only():
    raw = demo_raw()
    raw["sampling"]["dataset_level"]["enabled"] = False
    plan = Plan.from_config(load_config(raw))
    assert plan.setups.names == ["field"]
    assert plan.rerank.tradeoff_collection is None and plan.rerank.tradeoff is None
    assert (
        "table1" not in plan.outputs.tables and "map_by_pool_size" not in plan.outputs.plot_sources
    )


def test_the_synthetic_corpus_has_one_input_per_shard(plan):
    assert plan.shards == {
        "00000": ("s2orc_v2020", "resources/synthetic/demo/s2orc-00000.jsonl.gz"),
        "00001": ("s2orc_v2020", "resources/synthetic/demo/s2orc-00001.jsonl.gz"),
    }


def test_s2ag_inputs_are_named_by_kind(tmp_path):
    for kind in ("papers", "abstracts", "citations"):
        (tmp_path / f"{kind}-0.jsonl.gz").write_bytes(b"")
    raw = demo_raw()
    raw["corpus"] = {
        "format": "s2ag",
        "paths": {
            kind: [str(tmp_path / f"{kind}-*.jsonl.gz")]
            for kind in ("papers", "abstracts", "citations")
        },
        "synthetic": None,
    }
    plan = Plan.from_config(load_config(raw))
    assert sorted(plan.shards) == [
        "abstracts-abstracts-0",
        "citations-citations-0",
        "papers-papers-0",
    ]
    assert plan.shards["papers-papers-0"][0] == "s2ag-papers"


def test_layout_templates_carry_snakemake_wildcards():
    layout = Layout.for_dataset("demo")
    assert layout.run(**WILDCARDS, model="{model}") == (
        "results/demo/runs/{setup}-{split}/{group}.rep{rep}/{model}.trec"
    )
    assert layout.metrics("dataset", "test", "pool-400.rep0", "bm25") == (
        "results/demo/metrics/dataset-test/pool-400.rep0/bm25.tsv"
    )
    assert layout.log("metrics", "dataset-test", "pool-400.rep0", "bm25") == (
        "results/demo/logs/metrics/dataset-test/pool-400.rep0/bm25.log"
    )
    assert layout.mdcr_file("valid", "data") == "results/demo/mdcr/mdcr_val_data.jsonl"
    assert layout.embedding_shard("m", 3) == "results/demo/embeddings/m/shard-00003.npy"
    assert reranked_run("bm25", "ce", 10) == "bm25.ce@10"
    assert reranked_label("bm25", "ce", 10) == "bm25>ce@10"


def test_settings_are_written_from_the_config(plan):
    from citeval import stages

    assert (
        settings_flags(plan.config, stages.METRICS, cutoffs=plan.systems.metric_cutoffs)
        == "--cutoffs 30 10 20"
    )
    assert "--fields Biology 'Computer Science' Medicine Physics" in settings_flags(
        plan.config, stages.SAMPLE_FIELD
    )


def test_the_mdcr_import_example_scores_the_demos_exported_split_and_samples_nothing():
    plan = Plan.from_config(load_config_file("config/config.yaml", "config/mdcr-import.yaml"))
    assert plan.mdcr.imported and plan.mdcr.splits == ["test"]
    assert plan.mdcr.files("test") == {
        "benchmark": "results/demo/mdcr/mdcr_test.json",
        "data": "results/demo/mdcr/mdcr_test_data.jsonl",
    }
    assert plan.setups.names == [] and plan.mdcr.models == ["bm25", "minilm", "rrf"]
    assert plan.mdcr.tables == [
        f"results/mdcr-import/tables/{name}.{ext}"
        for name in ("table3_mdcr", "table4_mdcr_types")
        for ext in ("tsv", "md")
    ]
