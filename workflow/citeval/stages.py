"""The config settings of every stage command, in one table.

Each entry is the list of config keys a command takes as flags (:mod:`citeval.settings`):
the command's parser is built from it (so its defaults are the schema's) and the plan
writes the rules' command lines from it (so the pipeline passes exactly those keys).
Inputs, outputs, wildcards and thread counts are wiring, passed by the rules themselves.
"""

from __future__ import annotations

from citeval.settings import StageSettings

_MEMORY = StageSettings.of("jobs.memory_limit")
_SAMPLING = StageSettings.of(
    "seed",
    "sampling.query_year",
    "sampling.min_query_references",
    "sampling.on_too_small",
    "sampling.exclude_query_ids",
)
_SIGNIFICANCE = StageSettings.of(
    "tables.baseline",
    "tables.significance.permutations",
    "tables.significance.alpha",
    "seed",
)
_BM25_PARAMETERS = StageSettings.of("bm25.k1", "bm25.b", "bm25.searcher")
# A trained reranker scores with the token budgets its training.json records
# (citeval.rerank.model.trained_budgets): they are not scoring settings.
_RERANK_SCORING = StageSettings.of(
    "rerank.batch_tokens",
    "rerank.batch_size",
    "rerank.dtype",
    "rerank.device",
)

SYNTH = StageSettings.section("corpus.synthetic") + StageSettings.of("seed")
INGEST_PARSE = StageSettings.of("ingest.max_bad_fraction")
INGEST_MERGE = StageSettings.of("ingest.on_duplicate", "ingest.rows_per_part") + _MEMORY
PREFILTER = StageSettings.section("prefilter") + _MEMORY
SAMPLE_DATASET = (
    _SAMPLING
    + StageSettings.of(
        "sampling.dataset_level.num_queries",
        ("sampling.validation.num_queries", "num-valid-queries"),
        "sampling.dataset_level.pool_sizes",
        "sampling.dataset_level.repetitions",
    )
    + _MEMORY
)
SAMPLE_FIELD = (
    _SAMPLING
    + StageSettings.of(
        ("sampling.field_level.queries_per_field", "num-queries"),
        ("sampling.validation.queries_per_field", "num-valid-queries"),
        "sampling.field_level.fields",
        "sampling.field_level.pool_size",
        "sampling.field_level.repetitions",
    )
    + _MEMORY
)
SAMPLE_TRAIN = (
    _SAMPLING
    + StageSettings.of(
        "rerank.train.years_before", "rerank.train.num_queries", "rerank.train.pool_size"
    )
    + _MEMORY
)
BM25_ANALYZE = _MEMORY
BM25_TUNE = StageSettings.of(
    "bm25.tune.k1_grid", "bm25.tune.b_grid", "bm25.tune.metric", "retrieval.k", "bm25.searcher"
)
BM25_SEARCH = StageSettings.of("retrieval.k") + _BM25_PARAMETERS
ENCODE = StageSettings.of("encode.num_shards", "encode.device") + _MEMORY
RETRIEVE = StageSettings.of("retrieval.k") + StageSettings.section("faiss")
FUSE = StageSettings.of("fusion.*.k", ("retrieval.k", "depth"))
METRICS = StageSettings.of("metrics.cutoffs")
MDCR_BUILD = (
    StageSettings.of("seed", "sampling.field_level.fields")
    + StageSettings.section(
        "mdcr", exclude=("enabled", "source", "import", "models", "num_model_types")
    )
    + StageSettings.of("mdcr.models", "mdcr.num_model_types")
    + _MEMORY
)
MDCR_SCORE_BM25 = _BM25_PARAMETERS
MDCR_SCORE_DENSE = StageSettings.of("encode.device")
MDCR_SCORE_RERANK = _RERANK_SCORING
MDCR_SCORE_FUSION = StageSettings.of("fusion.*.k")
MDCR_TABLES = _SIGNIFICANCE
RERANK_TRAIN = (
    StageSettings.of(
        ("rerank.model", "base-model"), ("rerank.base_layers", "base-layers"), "rerank.head"
    )
    + StageSettings.section(
        "rerank.train", exclude=("first_stage", "num_queries", "pool_size", "years_before")
    )
    + StageSettings.of("rerank.query_tokens", "rerank.candidate_tokens", "rerank.device", "seed")
)
RERANK = _RERANK_SCORING
LTR_TRAIN = (
    StageSettings.of(
        "ltr.*.k",
        "ltr.*.train.learning_rate",
        "ltr.*.train.num_leaves",
        "ltr.*.train.min_data_in_leaf",
        "ltr.*.train.max_trees",
        "ltr.*.train.eval_every",
        "ltr.*.train.validation_fraction",
        "seed",
    )
    + _MEMORY
)
# Applying a model reads the same paper features (citeval.ltr.features) within the budget.
LTR_APPLY = _MEMORY
TRAIN_GRAPH = _MEMORY
TRAIN_EMBED_GRAPH = StageSettings.section("train.graph_embedding") + StageSettings.of("seed")
TRAIN_TRIPLETS = (
    StageSettings.section("train.triplets")
    + StageSettings.section("train.triplets.scincl")
    + StageSettings.of("seed")
)
TRAIN_FIT = StageSettings.section("train.fit") + StageSettings.of("seed") + _MEMORY
TABLES = StageSettings.of("sampling.field_level.fields", "metrics.cutoffs") + _SIGNIFICANCE
CONTEXTS = StageSettings.of(
    "local.input.format",
    ("local.window.unit", "window-unit"),
    ("local.window.chars", "window-chars"),
    ("local.window.sentences", "window-sentences"),
    "local.marker_token",
    "ingest.max_bad_fraction",
)
LOCAL_SAMPLE = (
    StageSettings.of(
        "seed",
        "sampling.on_too_small",
        "local.valid_fraction",
        "local.num_queries",
        "local.num_valid_queries",
        ("local.train.num_queries", "num-train-queries"),
        "local.pool_size",
        "local.global_context",
    )
    + _MEMORY
)
LOCAL_TABLES = StageSettings.of("local.cutoffs") + _SIGNIFICANCE
CONTEXTS_MERGE = _MEMORY
LOCAL_TRIPLETS = StageSettings.of(
    "train.triplets.per_query",
    "train.triplets.hard_negatives",
    ("local.train.top", "top"),
    "seed",
)
# DuckDB reads a collection's pool and queries from the corpus within the limit.
EXPORT_BEIR = _MEMORY
