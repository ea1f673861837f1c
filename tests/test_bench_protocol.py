"""benchmarks/bench_protocol.py's config overlay stays a valid config that plans BM25 only,
so the protocol benchmark cannot rot between the runs that need its 10M-paper corpus."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from citeval.config import load_config_file
from citeval.plan import Plan

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_protocol  # noqa: E402


def test_the_protocol_overlay_is_a_valid_bm25_only_config(tmp_path: Path) -> None:
    overlay = bench_protocol.overlay("protocol-test", ["corpus-0.jsonl.gz"], 0.01, threads=4)
    path = tmp_path / "protocol.yaml"
    path.write_text(yaml.safe_dump(overlay))
    config = load_config_file(ROOT / "config" / "config.yaml", path)
    assert config.jobs.threads == 4
    assert config.sampling.dataset_level.pool_sizes == [2000, 5000, 10000, 20000]
    plan = Plan.from_config(config)
    assert plan.systems.runs == ["bm25"]
    assert not plan.local.enabled and plan.systems.reranker is None
