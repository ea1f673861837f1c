"""The model-loading stages start without the heavy libraries they do not use.

Each encode, rerank and train job loads a model; importing polars, DuckDB, Faiss and the
like at its start would cost seconds per job for nothing. Each module is imported in a
fresh interpreter, whose ``sys.modules`` then must hold none of them.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("polars", "duckdb", "faiss", "sklearn", "scipy", "numba", "matplotlib")

MODEL_STAGE_MODULES = [
    "citeval.encode",
    "citeval.encode.cli",
    "citeval.rerank.model",
    "citeval.rerank.train",
    "citeval.rerank.cli",
    "citeval.train.fit",
    "citeval.train.cli",
]

SCRIPT = """
import importlib, sys
importlib.import_module(sys.argv[1])
print(" ".join(sorted({name.partition(".")[0] for name in sys.modules} & set(sys.argv[2:]))))
"""


@pytest.mark.parametrize("module", MODEL_STAGE_MODULES)
def test_model_stage_imports_no_heavy_library(module: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, module, *HEAVY],
        capture_output=True,
        text=True,
        check=True,
    )
    offenders = result.stdout.split()
    assert not offenders, f"importing {module} imported {offenders}"
