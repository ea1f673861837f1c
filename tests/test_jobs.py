"""Each rule's threads and resources from the config (citeval.jobs)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from citeval.config import load_config
from citeval.jobs import NEEDS, Jobs


def jobs(**sections) -> Jobs:
    return Jobs.from_config(load_config({"dataset": "d", "seed": 1, "corpus": CORPUS, **sections}))


CORPUS = {"format": "parquet", "paths": ["papers.parquet"]}


def test_threaded_rules_take_the_configured_threads_and_the_rest_one():
    configured = jobs(jobs={"threads": 12})
    assert configured.threads("ingest_merge") == 12
    assert configured.threads("bm25_search") == 12
    assert configured.threads("metrics") == 1
    assert configured.threads("bm25_index") == 1
    assert jobs().threads("encode") == 2  # the schema's default


def test_memory_follows_the_memory_limit_and_the_input():
    assert jobs().resources("ingest_merge") == {"mem_mb": 4000, "runtime": 720}
    large = jobs(jobs={"memory_limit": "10GB"})
    assert large.resources("ingest_merge")["mem_mb"] == 1000 + 15000
    assert large.resources("bm25_analyze")["mem_mb"] == 2000 + 10000
    assert large.resources("metrics") == {"mem_mb": 1000, "runtime": 10}
    mem_mb = large.resources("dense_retrieve")["mem_mb"]
    assert mem_mb(None, SimpleNamespace(size_mb=30000)) == 4000 + 60000


def test_model_jobs_ask_for_a_gpu_unless_gpus_are_off():
    on, off = jobs(), jobs(jobs={"gpu": False})
    for rule, need in NEEDS.items():
        assert ("gpu" in on.resources(rule)) == need.model, rule
        assert "gpu" not in off.resources(rule), rule
    assert on.resources("train_encoder")["gpu"] == 1


def test_a_rule_without_an_entry_is_named():
    with pytest.raises(KeyError, match=r"rule 'bm25_serach' has no entry in citeval\.jobs\.NEEDS"):
        jobs().resources("bm25_serach")
