"""benchmarks/bench_gpu.py runs every path on a tiny model (``--smoke``), so it cannot rot
between the sessions that have a GPU to run it on."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_gpu_check_runs_every_path_on_a_tiny_model(tmp_path: Path) -> None:
    output = tmp_path / "gpu.json"
    completed = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_gpu.py"), "--smoke",
         "--device", "cpu", "--output", str(output)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads(output.read_text())
    assert result["failed"] is False and result["smoke"] is True
    encode, rerank, train = result["encode"], result["rerank"], result["train"]
    assert encode["docs"] > 0 and encode["citeval_docs_per_s"] > 0
    assert encode["min_cosine_citeval_vs_plain"] > 0.999
    assert rerank["pairs"] > 0 and rerank["max_abs_score_difference_vs_plain"] < 1e-4
    assert [run["precision"] for run in train["runs"]] == ["float32"] * 3
    assert train["effective_batch"] == 32 and train["model_alone_triplets_per_s"] > 0
