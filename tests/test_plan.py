"""citeval.plan and citeval.layout: what a config runs and where it writes, without Snakemake."""

from __future__ import annotations

import re

import pytest
import yaml

from citeval.config import load_config
from citeval.layout import WILDCARDS, Layout, reranked_label, reranked_run
from citeval.plan import Plan


def demo_raw():
    with open("config/config.yaml", encoding="utf-8") as handle:
        return yaml.safe_load(handle)


@pytest.fixture(scope="module")
def plan():
    return Plan.from_config(load_config(demo_raw()))


def test_setups_models_and_names(plan):
    assert plan.setups == ["dataset", "field"]
    assert plan.first_stages == [
        "bm25", "minilm", "minilm_scincl", "minilm_specter", "minilm_local", "rrf"
    ]  # fmt: skip
    assert list(plan.reranked_runs) == ["bm25.ce@10", "bm25.ce@20"]
    assert plan.label("bm25.ce@10") == "bm25>ce@10" and plan.label("rrf") == "rrf"
    assert plan.metric_cutoffs == [30, 10, 20]
    assert plan.mdcr_models == [*plan.first_stages, "ce"]


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
    raw["fusion"], raw["local"]["models"] = [], ["bm25", "minilm"]
    switched_off = Plan.from_config(load_config(raw))
    assert not re.fullmatch(switched_off.wildcard_constraints()["fusion"], "rrf")


def test_trained_encoders_join_the_registry_as_their_base_loaded_from_their_folder(plan):
    assert set(plan.trained_models) == {"minilm_scincl", "minilm_specter", "minilm_local"}
    assert plan.graph_trained_models == ["minilm_scincl", "minilm_specter"]
    assert plan.context_trained_models == ["minilm_local"]
    entry = plan.registry["minilm_scincl"]
    assert entry["path"] == "./results/demo/train/minilm_scincl/model"
    assert {k: v for k, v in entry.items() if k != "path"} == {
        k: v for k, v in plan.registry["minilm"].items() if k != "path"
    }
    assert plan.provenance_config["models"]["minilm_specter"]["pooling"] == "mean"


def test_collections_follow_the_config(plan):
    names = [c.name for c in plan.collections("dataset", "test")]
    assert names == ["pool-400.rep0", "pool-400.rep1", "pool-800.rep0", "pool-800.rep1"]
    assert len(plan.collections("field", "test")) == 4
    assert [c.name for c in plan.collections("dataset", "valid")] == [
        "pool-400.rep0",
        "pool-800.rep0",
    ]
    assert [c.name for c in plan.bm25_tuning_collections("dataset")] == ["pool-400.rep0"]
    # The reranker's training split uses the first setup's tuned k1/b.
    assert plan.bm25_tuning_setup("dataset", "train") == "dataset"


def test_job_counts_of_the_default_run(plan):
    # 8 test collections x (6 first stages + 2 reranked runs).
    assert len(plan.test_metric_files()) == 64
    assert plan.mdcr_splits == ["test", "valid"]
    assert len(plan.mdcr_build_runs("test")) == 4 * 6  # rep-0 field pools x compared models
    assert plan.mdcr_types_from("valid") == ["results/demo/mdcr/mdcr_test_report.json"]
    assert plan.mdcr_types_from("test") == []
    assert plan.embedding_sample_dirs == [
        "results/demo/samples/dataset-test",
        "results/demo/samples/field-test",
        "results/demo/samples/field-valid",
        "results/demo/samples/local-test",
        "results/demo/samples/local-valid",
    ]
    assert plan.embedding_shards("minilm") == ["results/demo/embeddings/minilm/shard-00000.npy"]
    assert plan.held_out_sample_dirs == [
        "results/demo/samples/dataset-test",
        "results/demo/samples/dataset-valid",
        "results/demo/samples/field-test",
        "results/demo/samples/field-valid",
        "results/demo/samples/local-test",
        "results/demo/samples/local-valid",
    ]
    outputs = plan.final_outputs()
    assert len(outputs) == len(set(outputs))
    assert "results/demo/tables/tradeoff.png" in outputs
    assert "results/demo/tables/plots/mdcr_types.png" in outputs
    assert all(path.startswith("results/demo/") for path in outputs)


def test_the_tradeoff_reads_its_first_stages_timings(plan):
    assert plan.rerank_train_collection == "pool-3000.rep0"
    assert plan.tradeoff_collection == "pool-800.rep0"
    rows = [(row.first_stage, row.k) for row in plan.tradeoff_rows]
    assert rows == [("bm25", 0), ("bm25", 10), ("bm25", 20)]
    assert plan.tradeoff_timings == [
        "results/demo/timings/bm25_search/dataset-test/pool-800.rep0.tsv"
    ]
    fused = plan.first_stage_timings("rrf", "pool-800.rep0")
    assert fused[-1] == "results/demo/timings/fuse/dataset-test/pool-800.rep0/rrf.tsv"
    assert len(fused) == 3  # bm25's search, minilm's retrieval, the fusion


def test_the_local_task_of_the_default_run(plan):
    assert plan.local_inputs == {
        shard: f"resources/synthetic/demo/pdf_parses-{shard}.jsonl.gz" for shard in plan.shards
    }
    assert plan.local_query_year == 2019 and plan.local_splits == ["test", "valid"]
    assert list(plan.local_rows) == [
        "bm25", "minilm", "minilm_local", "rrf", "bm25>ce@10", "bm25>ce@20"
    ]  # fmt: skip
    assert plan.local_rows["bm25>ce@20"] == "bm25.ce@20"
    assert plan.local_runs == ["bm25", "minilm", "minilm_local", "rrf"]
    assert plan.local_dense_models == ["minilm", "minilm_local"]
    assert plan.local_cutoffs == [1, 5, 10, 20, 50, 100, 200, 500, 1000]
    assert plan.metric_cutoffs_of("local") == plan.local_cutoffs
    assert plan.retrieval_k("local") == 1000 and plan.retrieval_k("dataset") == 500
    assert plan.local_train_run == "results/demo/runs/local-train/contexts.rep0/bm25.trec"
    assert plan.local_metrics("test")["bm25>ce@20"] == (
        "results/demo/metrics/local-test/contexts.rep0/bm25.ce@20.tsv"
    )
    assert plan.fit_sampler_arguments("minilm_local") == [
        "--loss", "in_batch", "--anchor-papers", "results/demo/samples/local-train/query_papers"
    ]  # fmt: skip
    assert plan.fit_sampler_arguments("minilm_scincl") == []
    arguments, files = plan.local_tradeoff_arguments()
    assert "results/demo/timings/bm25_search/local-test/contexts.rep0.tsv" in files
    assert arguments.startswith("--first-stage bm25 ")
    outputs = plan.final_outputs()
    for name in ("local_test.md", "local_valid.tsv", "local_tradeoff.png"):
        assert f"results/demo/tables/{name}" in outputs


def test_the_oracle_prefetch_adds_a_reranked_row_per_k():
    raw = demo_raw()
    raw["local"]["rerank"]["oracle"] = True
    plan = Plan.from_config(load_config(raw))
    assert plan.local_oracle_runs == {"bm25+oracle10": ("bm25", 10), "bm25+oracle20": ("bm25", 20)}
    assert plan.local_rows["bm25+oracle20>ce@20"] == "bm25+oracle20.ce@20"


def test_acm_cr_evaluates_its_curated_contexts_on_the_test_split():
    with open("config/acm-cr.yaml", encoding="utf-8") as handle:
        raw = {**demo_raw(), **yaml.safe_load(handle)}
    raw["local"] = {**demo_raw()["local"], **raw["local"]}
    plan = Plan.from_config(load_config(raw))
    assert plan.local_splits == ["test"]
    assert plan.local_inputs == {"contexts": "../shared/data/acm-cr/contexts.jsonl"}
    assert plan.local_reranker is None and plan.local_train_run is None
    assert list(plan.local_rows) == ["bm25", "minilm", "rrf"]


def test_switched_off_parts_plan_nothing():
    raw = demo_raw()
    raw["mdcr"] = {"enabled": False}
    raw["rerank"]["enabled"] = False
    raw["encode"]["models"] = ["minilm"]
    raw["local"]["enabled"] = False
    plan = Plan.from_config(load_config(raw))
    assert plan.reranker is None and plan.reranked_runs == {}
    assert plan.mdcr_outputs() == [] and plan.tradeoff_outputs() == []
    assert plan.trained_models == {} and plan.metric_cutoffs == [30]
    assert "results/demo/samples/field-valid" not in plan.embedding_sample_dirs
    assert plan.local_inputs == {} and plan.local_outputs() == [] and plan.local_rows == {}


def test_imported_mdcr_scores_the_named_files_and_holds_their_queries_out():
    raw = demo_raw()
    raw["mdcr"] = {
        "source": "import",
        "import": {"test": {"benchmark": "b.json", "data": "d.jsonl"}},
    }
    plan = Plan.from_config(load_config(raw))
    assert plan.mdcr_splits == ["test"]
    assert plan.mdcr_files("test") == {"benchmark": "b.json", "data": "d.jsonl"}
    assert plan.held_out_mdcr_files == ["b.json"]
    assert not any("_jaccard" in path for path in plan.mdcr_outputs())


def test_one_setup_only():
    raw = demo_raw()
    raw["sampling"]["dataset_level"]["enabled"] = False
    plan = Plan.from_config(load_config(raw))
    assert plan.setups == ["field"]
    assert plan.tradeoff_collection is None and plan.tradeoff_rows == []
    assert "table1" not in plan.tables and "map_by_pool_size" not in plan.plot_sources


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
    assert layout.mdcr_file("valid", "_data.jsonl") == "results/demo/mdcr/mdcr_val_data.jsonl"
    assert layout.embedding_shard("m", 3) == "results/demo/embeddings/m/shard-00003.npy"
    assert reranked_run("bm25", "ce", 10) == "bm25.ce@10"
    assert reranked_label("bm25", "ce", 10) == "bm25>ce@10"


def test_settings_are_written_from_the_config(plan):
    from citeval import stages

    assert plan.settings(stages.METRICS, cutoffs=plan.metric_cutoffs) == "--cutoffs 30 10 20"
    assert "--fields Biology 'Computer Science' Medicine Physics" in plan.settings(
        stages.SAMPLE_FIELD
    )
