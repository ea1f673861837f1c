# Paths, input functions and wildcard constraints shared by every rule file.
import glob
import json
import os
import re
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "workflow"))
from citeval.cli import memory_bytes
from citeval.collections import (
    MDCR_SPLIT_NAMES,
    planned_collections,
    pool_group,
    tuning_collections,
)

# The citeval package is importable by every job, whether or not it was pip-installed
# into the environment the job runs in (for example a per-rule conda env). The prefix is
# formatted like a rule's command, hence the doubled braces.
_PACKAGE_DIR = shlex.quote(str(Path(workflow.basedir) / "workflow"))
shell.prefix(
    "export PYTHONPATH="
    + _PACKAGE_DIR.replace("{", "{{").replace("}", "}}")
    + "${{PYTHONPATH:+:$PYTHONPATH}}; set -euo pipefail; "
)

RESULTS = f"results/{config['dataset']}"
LOGS = f"{RESULTS}/logs"
BENCHMARKS = f"{RESULTS}/benchmarks"
SETUPS = [
    setup
    for setup, key in (("dataset", "dataset_level"), ("field", "field_level"))
    if config["sampling"][key]["enabled"]
]
# Encoders trained on the corpus's citation graph (rules/train.smk): every train.models
# entry joins the registry as its base entry with the trained folder as path; those listed
# in encode.models are trained, then evaluated like any encoder.
TRAIN = config["train"]
TRAIN_DIR = f"{RESULTS}/train"
for _name, _entry in TRAIN["models"].items():
    if _name in config["models"]:
        raise ValueError(f"train.models.{_name}: the registry already has a model of that name")
    if _entry["base"] not in config["models"]:
        raise ValueError(f"train.models.{_name}.base {_entry['base']!r} is not in models")
    config["models"][_name] = {
        **config["models"][_entry["base"]],
        "path": f"./{TRAIN_DIR}/{_name}/model",
    }
DENSE_MODELS = list(config["encode"]["models"])
TRAINED_MODELS = {name: TRAIN["models"][name] for name in DENSE_MODELS if name in TRAIN["models"]}
FUSIONS = {fusion["name"]: fusion for fusion in config["fusion"]}
FIRST_STAGES = ["bm25", *DENSE_MODELS, *FUSIONS]
RERANK = config["rerank"]
RERANKER = RERANK["name"] if RERANK["enabled"] else None
# Reranked runs are named `<first stage>.<reranker>@<K>` in files and
# `<first stage>><reranker>@<K>` in tables (a `>` in a file name invites shell accidents).
RERANKED_RUNS = {
    f"{first_stage}.{RERANKER}@{k}": (first_stage, k)
    for first_stage in (RERANK["first_stages"] if RERANKER else [])
    for k in sorted(RERANK["ks"])
}
MODELS = [*FIRST_STAGES, *RERANKED_RUNS]
if RERANKER:
    _unknown = sorted(
        {*RERANK["first_stages"], RERANK["train"]["first_stage"]} - set(FIRST_STAGES)
    )
    if _unknown:
        raise ValueError(f"rerank: {_unknown} are not first stages (have {FIRST_STAGES})")
    if RERANKER in FIRST_STAGES:
        raise ValueError(f"rerank.name {RERANKER!r} is already a model name")
    if max(RERANK["ks"]) > config["retrieval"]["k"]:
        raise ValueError(
            f"rerank.ks {RERANK['ks']} go deeper than the runs (retrieval.k "
            f"{config['retrieval']['k']})"
        )
MODEL_LABELS = {
    name: f"{first_stage}>{RERANKER}@{k}" for name, (first_stage, k) in RERANKED_RUNS.items()
}
# The reranking table adds R@10 and F1@20 (Nogueira et al., HAtten) to the configured k.
METRIC_CUTOFFS = list(
    dict.fromkeys([*config["metrics"]["cutoffs"], *([10, 20] if RERANKER else [])])
)
NUM_ENCODE_SHARDS = config["encode"]["num_shards"]
SAMPLING = config["sampling"]
BM25 = config["bm25"]
ENCODE = config["encode"]
FAISS = config["faiss"]


def _alternatives(names):
    return "|".join(re.escape(name) for name in names) or "(?!)"


wildcard_constraints:
    setup="dataset|field",
    split="test|valid|train",
    mdcr_split="test|val",
    rep=r"\d+",
    group=r"[a-z0-9-]+",
    shard=r"[A-Za-z0-9_.-]+",
    dense_model=_alternatives(DENSE_MODELS),
    fusion=_alternatives(FUSIONS),
    model=_alternatives([*MODELS, *([RERANKER] if RERANKER else [])]),
    first_stage=_alternatives(FIRST_STAGES),
    trained=_alternatives(TRAINED_MODELS),


# --- corpus input shards ------------------------------------------------------------


def _shard_name(path, prefix=""):
    name = os.path.basename(path)
    for suffix in (".gz", ".jsonl", ".json", ".parquet"):
        name = name.removesuffix(suffix)
    return prefix + re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def _expand_patterns(patterns):
    paths = []
    for pattern in patterns:
        matches = sorted(glob.glob(pattern))
        if not matches and not glob.has_magic(pattern):
            matches = [pattern]  # let Snakemake report a missing file by name
        paths.extend(matches)
    return paths


def _input_shards():
    """Map a staging shard name to (ingest format, input path)."""
    corpus = config["corpus"]
    synthetic = corpus.get("synthetic")
    if synthetic:
        pattern = corpus["paths"][0]
        return {
            f"{index:05d}": ("s2orc_v2020", pattern.format(shard=f"{index:05d}"))
            for index in range(synthetic["num_shards"])
        }
    if corpus["format"] == "s2ag":
        shards = {}
        for kind in ("papers", "abstracts", "citations"):
            for path in _expand_patterns(corpus["paths"][kind]):
                shards[_shard_name(path, f"{kind}-")] = (f"s2ag-{kind}", path)
        return shards
    shards = {}
    for path in _expand_patterns(corpus["paths"]):
        name = _shard_name(path)
        if name in shards:
            raise ValueError(f"two corpus inputs map to the same shard name {name!r}: {path}")
        shards[name] = (corpus["format"], path)
    return shards


INPUT_SHARDS = _input_shards()


def shard_input(wildcards):
    return INPUT_SHARDS[wildcards.shard][1]


def shard_format(wildcards):
    return INPUT_SHARDS[wildcards.shard][0]


# --- collections (planned from the config: the whole DAG is known before sampling) ---


def sample_dir(setup, split):
    return f"{RESULTS}/samples/{setup}-{split}"


def collections(setup, split):
    """The collections of one split: every configured pool size or field, times the
    repetitions (citeval.collections.planned_collections); sampling writes each of them,
    with no queries where the corpus has none to give."""
    return planned_collections(setup, split, SAMPLING)


def split_sample_dir(wildcards):
    """Input function: the sample folder of the job's (setup, split)."""
    return sample_dir(wildcards.setup, wildcards.split)


def test_metric_files(wildcards=None):
    return [
        f"{RESULTS}/metrics/{setup}-test/{collection.name}/{model}.tsv"
        for setup in SETUPS
        for collection in collections(setup, "test")
        for model in MODELS
    ]


def final_outputs(wildcards):
    return [
        f"{RESULTS}/tables/provenance.json",
        *PLOT_FILES.values(),
        *test_metric_files(),
        *mdcr_outputs(),
        *rerank_outputs(),
    ]


# --- command lines --------------------------------------------------------------------


def shell_words(*words):
    """Command-line words for a shell command, each quoted with shlex.quote."""
    return " ".join(shlex.quote(str(word)) for word in words)


# --- tables ------------------------------------------------------------------

# The report command's tables (report/<caption>.rst describes each in `snakemake --report`).
REPORT_TABLES = {
    caption: f"{RESULTS}/tables/{name}.tsv"
    for caption, name, present in (
        ("table1", "table1_dataset_level", "dataset" in SETUPS),
        ("table2", "table2_field_level_map", "field" in SETUPS),
        ("table7", "table7_field_level_ndcg", "field" in SETUPS),
        ("table8", "table8_field_level_recall", "field" in SETUPS),
        ("table_rerank", "table_rerank_dataset_level", RERANKER and "dataset" in SETUPS),
    )
    if present
}


def report_item(path, caption, category):
    return report(path, caption=f"../report/{caption}.rst", category=category)


# Paired tests of every table's models against report.baseline (docs/significance.md);
# a null baseline writes the tables without them.
SIGNIFICANCE_ARGUMENTS = shell_words(
    *(["--baseline", config["report"]["baseline"]] if config["report"]["baseline"] else []),
    "--permutations", config["report"]["significance"]["permutations"],
    "--alpha", config["report"]["significance"]["alpha"],
    "--seed", config["seed"],
)


# --- prefilter -----------------------------------------------------------------------


def prefilter_arguments(wildcards):
    rules = config["prefilter"]
    words = [] if rules["require_year"] else ["--no-require-year"]
    if not rules["require_title"]:
        words.append("--no-require-title")
    words += [
        "--min-abstract-chars", rules["min_abstract_chars"],
        "--min-citations", rules["min_citations"],
        "--citation-direction", rules["citation_direction"],
    ]
    return shell_words(*words)


# --- sample -----------------------------------------------------------------


def sample_arguments(wildcards):
    words = [
        "--seed", config["seed"],
        "--query-year", SAMPLING["query_year"],
        "--min-query-references", SAMPLING["min_query_references"],
        "--on-too-small", SAMPLING["on_too_small"],
    ]
    if SAMPLING["exclude_query_ids"]:
        words += ["--exclude-query-ids", SAMPLING["exclude_query_ids"]]
    if wildcards.setup == "dataset":
        level = SAMPLING["dataset_level"]
        words += [
            "--num-queries", level["num_queries"],
            "--num-valid-queries", SAMPLING["validation"]["num_queries"],
            "--pool-sizes", *level["pool_sizes"],
        ]
    else:
        level = SAMPLING["field_level"]
        words += [
            "--num-queries", level["queries_per_field"],
            "--num-valid-queries", SAMPLING["validation"]["queries_per_field"],
            "--pool-size", level["pool_size"],
            "--fields", *level["fields"],
        ]
    words += ["--repetitions", level["repetitions"]]
    return shell_words(*words)


# --- bm25 -------------------------------------------------------------------


def bm25_tuning_collections(wildcards):
    """Validation collections that tune k1/b (policy: citeval.collections)."""
    return tuning_collections(wildcards.setup, collections(wildcards.setup, "valid"))


def bm25_parameters(wildcards):
    if BM25["tune"]["enabled"]:
        # The reranker's training split has no validation split of its own.
        setup = SETUPS[0] if wildcards.split == "train" else wildcards.setup
        return f"{RESULTS}/tuning/bm25-{setup}.json"
    return []


# --- encode -----------------------------------------------------------------


def embedding_sample_dirs():
    """Sample folders whose pools and queries the encoders embed: every test split, and
    the field-level validation split when MDCR builds its validation benchmark from it."""
    dirs = [sample_dir(setup, "test") for setup in SETUPS]
    if "val" in MDCR_SPLITS and not MDCR_IMPORT:
        dirs.append(sample_dir("field", "valid"))
    if RERANKER and _uses_encoders(RERANK_TRAIN["first_stage"]):
        dirs.append(sample_dir("dataset", "train"))
    return dirs


def _uses_encoders(model):
    return model in DENSE_MODELS or any(
        run in DENSE_MODELS for run in FUSIONS.get(model, {}).get("runs", [])
    )


def model_spec_json(wildcards):
    return shlex.quote(json.dumps(config["models"][wildcards.dense_model], sort_keys=True))


def trained_model_folder(wildcards):
    """The trained model's folder, for jobs that load a trained encoder (else nothing)."""
    name = wildcards.dense_model
    return f"{TRAIN_DIR}/{name}/model" if name in TRAINED_MODELS else []


def embedding_shards(wildcards):
    return [
        f"{RESULTS}/embeddings/{wildcards.dense_model}/shard-{index:05d}.npy"
        for index in range(NUM_ENCODE_SHARDS)
    ]


# --- mdcr -------------------------------------------------------------------


MDCR = config["mdcr"]
MDCR_DIR = f"{RESULTS}/mdcr"
MDCR_IMPORT = MDCR["source"] == "import"
MDCR_ENABLED = MDCR["enabled"] and (MDCR_IMPORT or "field" in SETUPS)
# MDCR file name of a split -> sample split (mdcr_val.json is built from field-valid).
MDCR_SAMPLE_SPLIT = {name: split for split, name in MDCR_SPLIT_NAMES.items()}
# Built: the test split, and the validation split when field-level validation queries are
# drawn. Imported: every split the config names files for.
MDCR_SPLITS = (
    [name for name, split in MDCR_SAMPLE_SPLIT.items() if MDCR["import"].get(split)]
    if MDCR_IMPORT
    else ["test"] + (["val"] if SAMPLING["validation"]["queries_per_field"] > 0 else [])
)
# Models whose rep-0 field runs the construction compares (empty: every model).
MDCR_BUILD_MODELS = list(MDCR["models"]) or FIRST_STAGES
# Every model that scores MDCR pairs: the first stages, and the reranker on its own.
MDCR_MODELS = [*FIRST_STAGES, *([RERANKER] if RERANKER else [])]


def mdcr_benchmark_files(wildcards):
    """The split's benchmark and data file: built by mdcr_build, or the imported ones."""
    if MDCR_IMPORT:
        split = MDCR_SAMPLE_SPLIT[wildcards.mdcr_split]
        files = MDCR["import"].get(split)
        if not files:
            raise ValueError(f"mdcr.import.{split} names no benchmark and data file")
        return {"benchmark": files["benchmark"], "data": files["data"]}
    return {
        "benchmark": f"{MDCR_DIR}/mdcr_{wildcards.mdcr_split}.json",
        "data": f"{MDCR_DIR}/mdcr_{wildcards.mdcr_split}_data.jsonl",
    }


def mdcr_build_runs(wildcards):
    """Rep-0 runs of the compared models on every field pool of the split."""
    split = MDCR_SAMPLE_SPLIT[wildcards.mdcr_split]
    return [
        f"{RESULTS}/runs/field-{split}/{collection.name}/{model}.trec"
        for collection in collections("field", split)
        if collection.rep == 0
        for model in MDCR_BUILD_MODELS
    ]


def mdcr_build_arguments(wildcards):
    selection = MDCR["model_selection"]
    words = [
        "--seed", config["seed"],
        "--fields", *SAMPLING["field_level"]["fields"],
        "--models", *MDCR_BUILD_MODELS,
        "--model-selection", *([selection] if isinstance(selection, str) else selection),
        "--num-model-types", MDCR["num_model_types"],
        "--positives", MDCR["positives"],
        "--negatives-per-type", MDCR["negatives_per_type"],
        "--model-depth", MDCR["model_depth"],
        "--most-cited-depth", MDCR["most_cited_depth"],
        "--max-candidate-year", MDCR["max_candidate_year"] or "none",
        "--shortfall", MDCR["shortfall"],
        "--memory-limit", config["ingest"]["memory_limit"],
    ]
    return shell_words(*words)


def mdcr_types_from(wildcards):
    """The validation split takes the model types the test split selected (as the published
    benchmark has the same types in both); a configured list needs no such link."""
    if wildcards.mdcr_split == "val" and MDCR["model_selection"] == "auto":
        return f"{MDCR_DIR}/mdcr_test_report.json"
    return []


def mdcr_bm25_parameters(wildcards):
    """The field-level tuning of k1/b where it runs; otherwise the configured k1 and b."""
    if BM25["tune"]["enabled"] and "field" in SETUPS:
        return f"{RESULTS}/tuning/bm25-field.json"
    return []


def mdcr_embedding_shards(wildcards):
    """A built benchmark reuses the model's embedding store: its papers' texts are the
    corpus texts the store was encoded from. An imported one is encoded from its data file."""
    return [] if MDCR_IMPORT else embedding_shards(wildcards)


def mdcr_fusion_inputs(wildcards):
    return [
        f"{MDCR_DIR}/scores/{wildcards.mdcr_split}/{name}.json"
        for name in FUSIONS[wildcards.fusion]["runs"]
    ]


def mdcr_outputs(wildcards=None):
    """Tables 3 and 4 (from the test split), every split's evaluations, and the
    construction's Jaccard tables and reports."""
    if not MDCR_ENABLED or "test" not in MDCR_SPLITS:
        return []
    outputs = [
        f"{RESULTS}/tables/{name}.{ext}"
        for name in ("table3_mdcr", "table4_mdcr_types")
        for ext in ("tsv", "md")
    ]
    if not MDCR_IMPORT:
        outputs += [
            f"{MDCR_DIR}/mdcr_{split}_{name}"
            for split in MDCR_SPLITS
            for name in ("jaccard.tsv", "report.json")
        ]
    outputs += [
        f"{MDCR_DIR}/eval/{split}/{model}.tsv" for split in MDCR_SPLITS for model in MDCR_MODELS
    ]
    return outputs


# --- rerank -----------------------------------------------------------------

RERANK_DIR = f"{RESULTS}/rerank/{RERANKER}"
RERANK_TRAIN = RERANK["train"]
RERANK_KS = sorted(RERANK["ks"])
RERANK_TRAIN_COLLECTION = f"{pool_group(RERANK_TRAIN['pool_size'])}.rep0"
# The trade-off is measured on one collection, as HAtten's Table 4: the largest
# dataset-level pool, repetition 0.
RERANK_TRADEOFF_COLLECTION = (
    f"{pool_group(max(SAMPLING['dataset_level']['pool_sizes']))}.rep0"
    if "dataset" in SETUPS
    else None
)
RERANK_SCORING_ARGUMENTS = shell_words(
    "--query-tokens", RERANK["query_tokens"],
    "--candidate-tokens", RERANK["candidate_tokens"],
    "--batch-size", RERANK["batch_size"],
    "--device", RERANK["device"],
)


def train_sample_arguments(wildcards):
    words = [
        "--seed", config["seed"],
        "--query-year", SAMPLING["query_year"],
        "--years-before", RERANK_TRAIN["years_before"],
        "--num-queries", RERANK_TRAIN["num_queries"],
        "--pool-size", RERANK_TRAIN["pool_size"],
        "--min-query-references", SAMPLING["min_query_references"],
        "--on-too-small", SAMPLING["on_too_small"],
    ]
    if SAMPLING["exclude_query_ids"]:
        words += ["--exclude-query-ids", SAMPLING["exclude_query_ids"]]
    return shell_words(*words)


def rerank_train_arguments(wildcards):
    return shell_words(
        "--base-model", RERANK["model"],
        *(["--base-layers", RERANK["base_layers"]] if RERANK["base_layers"] else []),
        "--seed", config["seed"],
        "--top", RERANK_TRAIN["top"],
        "--lr", RERANK_TRAIN["learning_rate"],
        "--weight-decay", RERANK_TRAIN["weight_decay"],
        "--dropout", RERANK_TRAIN["dropout"],
        "--warmup-steps", RERANK_TRAIN["warmup_steps"],
        "--batch-size", RERANK_TRAIN["batch_size"],
        "--epochs", RERANK_TRAIN["epochs"],
        *(["--max-steps", RERANK_TRAIN["max_steps"]] if RERANK_TRAIN["max_steps"] > 0 else []),
        "--query-tokens", RERANK["query_tokens"],
        "--candidate-tokens", RERANK["candidate_tokens"],
        "--device", RERANK["device"],
    )


def _first_stage_benchmarks(model, collection):
    """Benchmark files of the jobs that make a first stage's run (a fusion: its inputs too)."""
    where = f"dataset-test/{collection}"
    if model == "bm25":
        return [f"{BENCHMARKS}/bm25_search/{where}.tsv"]
    if model in DENSE_MODELS:
        return [f"{BENCHMARKS}/dense_retrieve/{where}/{model}.tsv"]
    inputs = [path for run in FUSIONS[model]["runs"] for path in _first_stage_benchmarks(run, collection)]
    return [*inputs, f"{BENCHMARKS}/fuse/{where}/{model}.tsv"]


def _tradeoff_plan():
    """(first stage, K, metrics file, timing file or None) per trade-off row."""
    collection = RERANK_TRADEOFF_COLLECTION
    metrics = f"{RESULTS}/metrics/dataset-test/{collection}"
    timing = f"{RERANK_DIR}/timing/dataset-test/{collection}"
    rows = []
    for first_stage in RERANK["first_stages"]:
        rows.append((first_stage, 0, f"{metrics}/{first_stage}.tsv", None))
        for k in RERANK_KS:
            rows.append(
                (first_stage, k, f"{metrics}/{first_stage}.{RERANKER}@{k}.tsv", f"{timing}/{first_stage}.json")
            )
    return rows


def tradeoff_inputs(wildcards):
    rows = _tradeoff_plan()
    return {
        "metrics": [row[2] for row in rows],
        "timings": sorted({row[3] for row in rows if row[3]}),
        "benchmarks": sorted(
            {
                path
                for first_stage in RERANK["first_stages"]
                for path in _first_stage_benchmarks(first_stage, RERANK_TRADEOFF_COLLECTION)
            }
        ),
    }


def tradeoff_arguments(wildcards):
    words = []
    for first_stage in RERANK["first_stages"]:
        words += ["--first-stage", first_stage,
                  *_first_stage_benchmarks(first_stage, RERANK_TRADEOFF_COLLECTION)]  # fmt: skip
    for first_stage, k, metrics, timing in _tradeoff_plan():
        words += ["--entry", first_stage, k, metrics, *([timing] if timing else [])]
    return shell_words(*words)


def rerank_outputs(wildcards=None):
    """The reranked runs' metrics come with test_metric_files; here the trade-off."""
    if not RERANKER or RERANK_TRADEOFF_COLLECTION is None:
        return []
    return [f"{RESULTS}/tables/tradeoff.{ext}" for ext in ("tsv", "md", "png")]


# --- train ------------------------------------------------------------------


def held_out_sample_dirs():
    """Every test and validation split: their query papers never enter the training graph."""
    return [sample_dir(setup, split) for setup in SETUPS for split in ("test", "valid")]


def held_out_mdcr_files():
    """An imported MDCR benchmark's queries are held out too (a built one's queries are the
    field-level test and validation queries already held out)."""
    if not (MDCR_ENABLED and MDCR_IMPORT):
        return []
    return [MDCR["import"][MDCR_SAMPLE_SPLIT[name]]["benchmark"] for name in MDCR_SPLITS]


def triplet_arguments(wildcards):
    triplets = TRAIN["triplets"]
    return shell_words(
        "--sampler", TRAINED_MODELS[wildcards.trained]["sampler"],
        "--num-queries", triplets["num_queries"],
        "--per-query", triplets["per_query"],
        "--hard-negatives", triplets["hard_negatives"],
        "--k-positive", triplets["scincl"]["k_positive"],
        "--k-hard", triplets["scincl"]["k_hard"],
        "--seed", config["seed"],
    )


def triplet_graph_inputs(wildcards):
    graph = f"{TRAIN_DIR}/graph"
    inputs = [f"{graph}/nodes.parquet", f"{graph}/edges.parquet"]
    if TRAINED_MODELS[wildcards.trained]["sampler"] == "scincl":
        inputs.append(f"{graph}/embedding.npy")
    return inputs


def fit_arguments(wildcards):
    fit = TRAIN["fit"]
    base = config["models"][TRAINED_MODELS[wildcards.trained]["base"]]
    return shell_words(
        "--name", wildcards.trained,
        "--model-json", json.dumps(base, sort_keys=True),
        "--epochs", fit["epochs"],
        "--batch-size", fit["batch_size"],
        "--gradient-accumulation", fit["gradient_accumulation"],
        "--lr", fit["learning_rate"],
        "--weight-decay", fit["weight_decay"],
        "--warmup-steps", fit["warmup_steps"],
        "--margin", fit["margin"],
        "--max-steps", fit["max_steps"],
        "--seed", config["seed"],
        "--device", fit["device"],
    )


# --- plots ------------------------------------------------------------------

# Figure -> the table TSV it is drawn from (citeval.plots).
PLOT_SOURCES = {
    "map_by_pool_size": ("table1", REPORT_TABLES.get("table1")),
    "field_map": ("table2", REPORT_TABLES.get("table2")),
    "mdcr_types": ("table4", f"{RESULTS}/tables/table4_mdcr_types.tsv" if mdcr_outputs() else None),
}
PLOT_FILES = {
    name: f"{RESULTS}/tables/plots/{name}.png" for name, (_, table) in PLOT_SOURCES.items() if table
}
