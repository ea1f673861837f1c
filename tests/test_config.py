"""citeval.config: the schema's defaults, validation with the key's path, cross-section checks."""

from __future__ import annotations

import copy

import pytest
import yaml

from citeval.config import (
    SCHEMA_PATH,
    Config,
    load_config,
    load_config_file,
    schema_default,
    schema_node,
    with_defaults,
)
from citeval.errors import ConfigError

MINIMAL = {"dataset": "x", "seed": 1, "corpus": {"format": "parquet", "paths": ["a.parquet"]}}


def test_the_shipped_configs_load():
    demo = load_config_file("config/config.yaml")
    assert isinstance(demo, Config)
    assert demo.encode.models == ["minilm", "minilm_scincl", "minilm_specter", "minilm_local"]
    assert demo.local.enabled and demo.train.models["minilm_local"].sampler == "contexts"
    acm = load_config_file("config/config.yaml", "config/acm-cr.yaml")
    assert acm.dataset == "acm-cr" and acm.corpus.synthetic is None
    assert acm.rerank.enabled is False and acm.prefilter.min_citations == 0


def test_missing_keys_take_the_schema_defaults():
    config = load_config(MINIMAL)
    assert config.bm25.k1 == schema_default("bm25.k1") == 0.9
    assert config.train.triplets.num_queries == 136820
    assert config.rerank.train.max_steps == -1
    assert config.mdcr.import_.test is None
    assert len(config.sampling.field_level.fields) == 19


def test_defaults_fill_inside_a_registry_entry_and_a_partial_synthetic_section():
    raw = copy.deepcopy(MINIMAL)
    raw["models"] = {"m": {"path": "p", "pooling": "cls"}}
    raw["corpus"] = {
        "format": "s2orc_v2020",
        "paths": ["x-{shard}"],
        "synthetic": {"num_papers": 500},
    }
    config = load_config(raw)
    assert config.models["m"].batch_tokens is schema_default("models.*.batch_tokens") is None
    assert config.models["m"].batch_size is None
    assert config.corpus.synthetic.num_shards == schema_default("corpus.synthetic.num_shards")


def test_loading_leaves_the_input_alone():
    raw = copy.deepcopy(MINIMAL)
    with_defaults(raw)
    assert raw == MINIMAL


@pytest.mark.parametrize(
    ("update", "where"),
    [
        ({"prefilter": {"min_abstract_chars": -1}}, "prefilter.min_abstract_chars"),
        ({"sampling": {"on_too_small": "shrug"}}, "sampling.on_too_small"),
        ({"retrieval": {"k": "many"}}, "retrieval.k"),
        ({"bm25": {"tune": {"metric": "mrr"}}}, "bm25.tune.metric"),
        ({"models": {"m": {"path": "p"}}}, "models.m"),
    ],
)
def test_a_bad_value_names_its_key(update, where):
    raw = {**copy.deepcopy(MINIMAL), **update}
    with pytest.raises(ConfigError, match=rf"^{where}: "):
        load_config(raw)


def _demo(**sections):
    with open("config/config.yaml", encoding="utf-8") as handle:
        raw = yaml.safe_load(handle)
    for key, value in sections.items():
        section, _, name = key.partition("__")
        raw.setdefault(section, {})[name] = value
    return raw


@pytest.mark.parametrize(
    ("sections", "message"),
    [
        (
            {"train__models": {"minilm": {"sampler": "scincl", "base": "minilm"}}},
            "registry already",
        ),
        ({"train__models": {"t": {"sampler": "scincl", "base": "nope"}}}, r"base 'nope' is not"),
        ({"encode__models": ["minilm", "ghost"]}, r"encode.models: \['ghost'\]"),
        ({"rerank__first_stages": ["ghost"]}, r"rerank.first_stages: \['ghost'\]"),
        ({"rerank__ks": [10, 600]}, "deeper than the runs"),
        ({"rerank__name": "bm25"}, "already a model name"),
        ({"mdcr__models": ["ghost"]}, r"mdcr.models: \['ghost'\]"),
    ],
)
def test_names_that_must_refer_to_one_another(sections, message):
    with pytest.raises(ConfigError, match=message):
        load_config(_demo(**sections))


def test_a_fusion_of_an_unknown_run_fails():
    raw = _demo()
    raw["fusion"] = [{"name": "rrf", "runs": ["bm25", "ghost"]}]
    with pytest.raises(ConfigError, match=r"fusion\[0\].runs: \['ghost'\]"):
        load_config(raw)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"features": ["bm25", "ghost"]}, r"^ltr\[0\].features: \['ghost'\] are not among"),
        ({"first_stage": "ltr"}, r"^ltr\[0\].first_stage: 'ltr' is this ltr system itself"),
        ({"features": ["bm25", "ltr"]}, r"^ltr\[0\].features: 'ltr' is this ltr system itself"),
        ({"name": "rrf"}, r"^ltr\[0\].name 'rrf' is already a model name"),
        ({"k": 5000}, r"^ltr\[0\].k 5000 goes deeper than the runs"),
    ],
)
def test_bad_ltr_settings_fail_at_load_naming_the_key(entry, message):
    raw = _demo()
    raw["ltr"] = [{"name": "ltr", "first_stage": "bm25", "features": ["bm25", "minilm"], **entry}]
    with pytest.raises(ConfigError, match=message):
        load_config(raw)


def test_a_fusion_cannot_loop_through_an_ltr_system():
    """Fusions name earlier systems only, and ltr systems come after them: a fusion of an
    ltr system's run, which the ltr system reads as a feature, is refused at load."""
    raw = _demo()
    raw["ltr"] = [{"name": "ltr", "first_stage": "bm25", "features": ["rrf2"]}]
    raw["fusion"] = [*raw["fusion"], {"name": "rrf2", "runs": ["bm25", "ltr"]}]
    with pytest.raises(ConfigError, match=r"^fusion\[1\].runs: \['ltr'\] are not among"):
        load_config(raw)


def test_the_local_task_trains_and_first_stages_on_no_ltr_system():
    """An ltr system may be a local row (it trains a local model), not the local task's
    training or reranking first stage, nor reorder deeper than its runs."""
    for key in ("train", "rerank"):
        raw = _demo()
        raw["local"][key]["first_stage" if key == "train" else "first_stages"] = (
            "ltr" if key == "train" else ["ltr"]
        )
        with pytest.raises(ConfigError, match=rf"^local.{key}.first_stages?: \['ltr'\]"):
            load_config(raw)
    raw = _demo()
    raw["local"]["k"], raw["local"]["cutoffs"] = 50, [1, 5, 10]
    with pytest.raises(ConfigError, match=r"^local.models: ltr system 'ltr' reorders 100"):
        load_config(raw)


def test_schema_lives_in_the_package_and_config_links_to_it():
    assert SCHEMA_PATH.parent.name == "citeval"
    from pathlib import Path

    assert Path("config/schema.yaml").resolve() == SCHEMA_PATH.resolve()


def test_the_old_memory_limit_key_names_its_new_one():
    """ingest.memory_limit budgets every DuckDB job, so it moved to jobs.memory_limit. The
    schema still lets the old key through, so that this message is what a user sees
    rather than a schema validation error."""
    raw = {**copy.deepcopy(MINIMAL), "ingest": {"memory_limit": "4GB"}}
    with pytest.raises(
        ConfigError,
        match=r"^ingest\.memory_limit: renamed jobs\.memory_limit .*; "
        r"set jobs\.memory_limit: 4GB instead$",
    ):
        load_config(raw)
    moved = {**copy.deepcopy(MINIMAL), "jobs": {"memory_limit": "4GB"}}
    assert load_config(moved).jobs.memory_limit == "4GB"
    assert load_config(MINIMAL).jobs.memory_limit == schema_default("jobs.memory_limit") == "2GB"


STORE = {"name": "v", "similarity": "ip", "store": "vectors.parquet"}
RUNS = {"name": "r", "runs": "runs/{setup}-{split}/{collection}.trec"}


@pytest.mark.parametrize(
    ("systems", "message"),
    [
        ({"embeddings": [{"name": "v", "similarity": "ip"}]}, "set exactly one of store .* and"),
        ({"embeddings": [{**STORE, "command": "make {store}"}]}, "set exactly one of store"),
        (
            {"embeddings": [{"name": "v", "similarity": "ip", "command": "x", "contexts": "c"}]},
            "set contexts or command",
        ),
        ({"runs": [{"name": "r"}]}, "set exactly one of runs .* and command"),
        ({"runs": [{**RUNS, "runs": "runs/{setup}.trec"}]}, r"needs \{split\}, \{collection\}"),
        ({"runs": [{**RUNS, "mdcr": "mdcr.json"}]}, r"mdcr: the template needs \{split\}"),
        (
            {"runs": [{**RUNS, "mdcr": "{split}.json", "mdcr_command": "x"}]},
            "set mdcr or mdcr_command",
        ),
        (
            {"runs": [{"name": "r", "command": "rank {queries} {poool} > {output}"}]},
            r"unknown placeholders \['poool'\]",
        ),
        ({"runs": [{"name": "r", "command": "rank {queries"}]}, "expected '}'"),
        ({"runs": [{**RUNS, "name": "minilm"}]}, r"runs\[0\] \(minilm\): another system has"),
        ({"embeddings": [{**STORE, "name": "r"}], "runs": [RUNS]}, "another system has that name"),
        ({"runs": [{**RUNS, "name": "my run"}]}, "does not match"),
    ],
)
def test_a_users_system_is_checked_when_the_config_loads(systems, message):
    raw = _demo()
    raw["systems"] = systems
    with pytest.raises(ConfigError, match=message):
        load_config(raw)


def test_a_local_row_by_a_store_needs_its_contexts():
    raw = _demo()
    raw["systems"]["embeddings"].append(dict(STORE))
    raw["local"]["models"] = ["bm25", "v"]
    with pytest.raises(ConfigError, match="v ranks contexts by their vectors, but its"):
        load_config(raw)
    raw["systems"]["embeddings"][-1]["contexts"] = "contexts.parquet"
    assert load_config(raw).systems.embeddings[-1].contexts == "contexts.parquet"


def test_users_systems_take_part_in_fusion_reranking_and_mdcr():
    raw = _demo()
    raw["systems"]["embeddings"].append(STORE)
    raw["systems"]["runs"].append(RUNS)
    raw["fusion"] = [{"name": "rrf", "runs": ["v", "r"]}]
    raw["local"]["models"] = ["bm25", "minilm"]  # v has no contexts store
    raw["rerank"]["first_stages"] = ["r"]
    raw.setdefault("mdcr", {})["models"] = ["bm25", "v"]
    config = load_config(raw)
    assert config.fusion[0].runs == ["v", "r"]


def test_a_stores_similarities_are_the_encoders():
    # Retrieval and MDCR score a user's store as they score an encoder's.
    assert (
        schema_node("systems.embeddings.*.similarity")["enum"]
        == (schema_node("models.*.similarity")["enum"])
    )
