"""The pipeline's configuration: the schema's defaults filled in, validated, and typed.

``schema.yaml`` (beside this module; ``config/schema.yaml`` links to it) is the one place
where each setting's default and description live. :func:`load_config` fills those
defaults into a merged YAML config, validates it, decodes it into the frozen structs below
(one per section) and runs the checks that span sections, so a bad config fails before
Snakemake builds its DAG, with the key's path. The structs declare no defaults of their
own: every value comes from the config or the schema.

Stage commands read their defaults from the same schema (:func:`schema_default`, used by
:mod:`citeval.settings`), so a stage run by hand behaves as the pipeline's.
"""

from __future__ import annotations

import copy
import functools
import string
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import jsonschema
import msgspec
import yaml

from citeval.errors import ConfigError
from citeval.systems import BM25_SYSTEM, systems_of, with_members

SCHEMA_PATH = Path(__file__).with_name("schema.yaml")


class Section(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A config section: every field required, as the schema supplies the defaults."""


# --- corpus and ingestion -----------------------------------------------------------


class Synthetic(Section):
    num_papers: int
    num_shards: int
    first_year: int
    last_year: int


class S2agPaths(Section):
    papers: list[str]
    abstracts: list[str]
    citations: list[str]


class Corpus(Section):
    format: Literal["s2orc_v2020", "s2ag", "parquet"]
    paths: list[str] | S2agPaths
    synthetic: Synthetic | None


class Ingest(Section):
    max_bad_fraction: float
    on_duplicate: Literal["error", "keep_first"]
    rows_per_part: int


class Prefilter(Section):
    require_year: bool
    require_title: bool
    min_abstract_chars: int
    min_citations: int
    citation_direction: Literal["cited_by", "references", "both"]


# --- sampling ----------------------------------------------------------------------


class DatasetLevel(Section):
    enabled: bool
    num_queries: int
    pool_sizes: list[int]
    repetitions: int


class FieldLevel(Section):
    enabled: bool
    fields: list[str]
    queries_per_field: int
    pool_size: int
    repetitions: int


class Validation(Section):
    num_queries: int
    queries_per_field: int


class Sampling(Section):
    query_year: int
    on_too_small: Literal["fail", "cap"]
    min_query_references: int
    exclude_query_ids: str | None
    dataset_level: DatasetLevel
    field_level: FieldLevel
    validation: Validation


# --- retrieval ---------------------------------------------------------------------


class Retrieval(Section):
    k: int


class BM25Tune(Section):
    enabled: bool
    k1_grid: list[float]
    b_grid: list[float]
    metric: Literal["map", "ndcg"]


class BM25(Section):
    k1: float
    b: float
    searcher: Literal["impacts", "lucene"]
    tune: BM25Tune


class Metrics(Section):
    cutoffs: list[int]


class ModelEntry(Section):
    path: str
    pooling: Literal["cls", "mean", "aspire"]
    max_length: int
    batch_tokens: int | None
    batch_size: int | None
    dtype: Literal["auto", "float32", "float16", "bfloat16"]
    similarity: Literal["ip", "l2", "cosine"]
    adapter: str | None
    query_prompt: str | None
    document_prompt: str | None


# Prompts a registry entry leaves unset are left out of its builtins: the entry's JSON,
# which the encode jobs take as a parameter and fingerprint, stays what it was before
# prompts existed, so models without prompts keep their jobs and checkpoints.
UNSET_WHEN_NULL = ("query_prompt", "document_prompt")


def model_entry_builtins(entry: ModelEntry) -> dict[str, Any]:
    """A registry entry as plain data, unset prompts left out."""
    values = msgspec.to_builtins(entry)
    return {
        key: value
        for key, value in values.items()
        if not (key in UNSET_WHEN_NULL and value is None)
    }


class Encode(Section):
    models: list[str]
    num_shards: int
    device: Literal["auto", "cpu", "cuda"]


class EmbeddingsSystem(Section):
    name: str
    store: str | None
    contexts: str | None
    similarity: Literal["ip", "l2", "cosine"]
    command: str | None


class RunSystem(Section):
    name: str
    runs: str | None
    mdcr: str | None
    command: str | None
    mdcr_command: str | None
    missing_queries: Literal["error", "zero"]


# The placeholders a user's command may use (systems.*.command, mdcr_command): the files
# the pipeline hands it and the files it writes (docs/contracts.md).
COMMAND_PLACEHOLDERS = {
    ("embeddings", "command"): ("papers", "contexts", "store", "contexts_store"),
    ("runs", "command"): (
        "queries",
        "pools",
        "group",
        "rep",
        "query_papers",
        "papers",
        "k",
        "output",
    ),
    ("runs", "mdcr_command"): ("benchmark", "data", "output"),
}


class Systems(Section):
    embeddings: list[EmbeddingsSystem]
    runs: list[RunSystem]


class Faiss(Section):
    index: Literal["flat", "ivf", "hnsw"]
    ivf_nlist: int
    ivf_nprobe: int
    hnsw_m: int
    hnsw_ef_search: int


class Fusion(Section):
    name: str
    runs: list[str]
    k: int


class LtrTrain(Section):
    learning_rate: float
    num_leaves: int
    min_data_in_leaf: int
    max_trees: int
    eval_every: int
    validation_fraction: float


class Ltr(Section):
    name: str
    first_stage: str
    features: list[str]
    k: int
    train: LtrTrain


# --- tables ------------------------------------------------------------------------


class Significance(Section):
    permutations: int
    alpha: float


class Tables(Section):
    baseline: str | None
    significance: Significance


# --- MDCR --------------------------------------------------------------------------


class MdcrFiles(Section):
    benchmark: str
    data: str


class MdcrImport(Section):
    test: MdcrFiles | None
    valid: MdcrFiles | None


class Mdcr(Section):
    enabled: bool
    source: Literal["build", "import"]
    import_: MdcrImport = msgspec.field(name="import")
    positives: int
    negatives_per_type: int
    models: list[str]
    model_selection: Literal["auto"] | list[str]
    num_model_types: int
    model_depth: int
    most_cited_depth: int
    max_candidate_year: Literal["query_year"] | None
    shortfall: Literal["fill_from_random", "keep_fewer"]


# --- reranking and training ----------------------------------------------------------


class RerankTrain(Section):
    first_stage: str
    top: int
    loss: Literal["pointwise", "listwise", "pairwise"]
    validation_fraction: float
    eval_steps: int
    num_queries: int
    pool_size: int
    years_before: int
    learning_rate: float
    weight_decay: float
    dropout: float
    warmup_steps: int
    batch_size: int
    epochs: int
    max_steps: int


class Rerank(Section):
    enabled: bool
    name: str
    model: str
    base_layers: int | None
    head: Literal["cls", "mean_segments"]
    query_tokens: int
    candidate_tokens: int
    first_stages: list[str]
    ks: list[int]
    batch_tokens: int | None
    batch_size: int | None
    dtype: Literal["auto", "float32", "float16", "bfloat16"]
    device: str
    train: RerankTrain


class LocalInput(Section):
    format: Literal["s2orc_v2020", "s2ag", "curated"]
    paths: list[str]


class LocalWindow(Section):
    unit: Literal["chars", "sentences"]
    chars: int
    sentences: int


class LocalTrain(Section):
    num_queries: int | None
    first_stage: str
    top: int


class LocalRerank(Section):
    enabled: bool
    first_stages: list[str]
    ks: list[int]
    oracle: bool


class Local(Section):
    enabled: bool
    input: LocalInput
    window: LocalWindow
    marker_token: str
    query_year: int | None
    valid_fraction: float
    num_queries: int | None
    num_valid_queries: int | None
    pool_size: int | None
    global_context: bool
    k: int
    cutoffs: list[int]
    models: list[str]
    train: LocalTrain
    rerank: LocalRerank


class TrainModel(Section):
    sampler: Literal["scincl", "specter", "contexts"]
    base: str


class GraphEmbedding(Section):
    dim: int
    iterations: int


class SciNCLBands(Section):
    k_positive: int
    k_hard: int
    index: Literal["auto", "flat", "ivf"]
    min_recall: float
    recall_sample: int


class Triplets(Section):
    num_queries: int
    per_query: int
    hard_negatives: int
    scincl: SciNCLBands


class Fit(Section):
    epochs: int
    batch_size: int
    gradient_accumulation: int
    learning_rate: float
    weight_decay: float
    warmup_steps: int
    margin: float
    max_steps: int
    validation_fraction: float
    eval_steps: int
    device: str


class Train(Section):
    models: dict[str, TrainModel]
    graph_embedding: GraphEmbedding
    triplets: Triplets
    fit: Fit


class Jobs(Section):
    threads: int
    gpu: bool
    memory_limit: str


class Config(Section):
    dataset: str
    seed: int
    jobs: Jobs
    corpus: Corpus
    ingest: Ingest
    prefilter: Prefilter
    sampling: Sampling
    retrieval: Retrieval
    bm25: BM25
    metrics: Metrics
    models: dict[str, ModelEntry]
    encode: Encode
    systems: Systems
    faiss: Faiss
    fusion: list[Fusion]
    ltr: list[Ltr]
    tables: Tables
    mdcr: Mdcr
    rerank: Rerank
    local: Local
    train: Train


# --- the schema ----------------------------------------------------------------------


@functools.cache
def _schema() -> dict[str, Any]:
    with SCHEMA_PATH.open(encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def schema() -> dict[str, Any]:
    """A copy of the configuration's JSON Schema."""
    return copy.deepcopy(_schema())


def _object_branch(node: Mapping[str, Any], value: Any) -> Mapping[str, Any]:
    """The branch of a ``oneOf``/``anyOf`` that describes a mapping, when ``value`` is one."""
    if isinstance(value, dict):
        for branch in node.get("oneOf", node.get("anyOf", ())):
            if branch.get("type") == "object":
                return branch
    return node


def fill_defaults(value: Any, node: Mapping[str, Any]) -> Any:
    """``value`` with the schema's defaults filled in wherever a key is missing."""
    node = _object_branch(node, value)
    if isinstance(value, dict):
        filled = dict(value)
        for key, child in node.get("properties", {}).items():
            if key not in filled and "default" in child:
                filled[key] = copy.deepcopy(child["default"])
            if key in filled:
                filled[key] = fill_defaults(filled[key], child)
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            for key in set(filled) - set(node.get("properties", {})):
                filled[key] = fill_defaults(filled[key], extra)
        return filled
    if isinstance(value, list) and isinstance(node.get("items"), dict):
        return [fill_defaults(item, node["items"]) for item in value]
    return value


def _schema_node(path: str) -> Mapping[str, Any]:
    node: Mapping[str, Any] = _schema()
    for key in path.split("."):
        node = _object_branch(node, {})
        properties = node.get("properties", {})
        if key in properties:
            node = properties[key]
        elif key == "*" and isinstance(node.get("additionalProperties"), dict):
            node = node["additionalProperties"]
        elif key == "*" and isinstance(node.get("items"), dict):
            node = node["items"]
        else:
            raise KeyError(f"the config schema has no key {path!r}")
    return node


def schema_node(path: str) -> dict[str, Any]:
    """A copy of the schema of a dotted key (``models.*`` for a registry entry)."""
    return copy.deepcopy(dict(_schema_node(path)))


def entry_with_defaults(path: str, value: Any) -> tuple[Any, list[jsonschema.ValidationError]]:
    """One value checked on its own against the schema of the dotted key ``path``: the
    value with that schema's defaults filled in, and its validation errors (paths relative
    to the value). For an entry that reaches a stage outside a config, such as a
    ``--model-json`` registry entry."""
    node = _schema_node(path)
    filled = fill_defaults(copy.deepcopy(value), node)
    return filled, list(jsonschema.Draft202012Validator(node).iter_errors(filled))


def schema_default(path: str) -> Any:
    """The schema's default of a dotted key (``models.*.batch_size`` for a registry entry).

    A key without a default in its own node takes it from its section's default mapping.
    """
    parent, _, key = path.rpartition(".")
    node = _schema_node(path)
    if "default" in node:
        return copy.deepcopy(node["default"])
    if parent:
        section = _schema_node(parent).get("default")
        if isinstance(section, dict) and key in section:
            return copy.deepcopy(section[key])
    raise KeyError(f"the config schema gives {path!r} no default")


def schema_bounds(path: str) -> dict[str, Any]:
    """The schema's numeric bounds of a key (``minimum``, ``exclusiveMaximum``, ...), of its
    items for a list."""
    node = _schema_node(path)
    node = node.get("items", node) if node.get("type") == "array" else node
    bounds = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
    return {name: node[name] for name in bounds if name in node}


def schema_description(path: str) -> str:
    """The schema's description of a dotted key, on one line ('' if it has none)."""
    return " ".join(str(_schema_node(path).get("description", "")).split())


# --- loading --------------------------------------------------------------------------


def _key_path(error: jsonschema.ValidationError) -> str:
    return ".".join(str(part) for part in error.absolute_path) or "<config>"


# Keys that moved: old dotted key -> (new key, why). The schema still lets each old key
# through, without a type or default, so that Snakemake's own validation of the config
# does not bury this message under a schema dump; loading stops on it, naming the new key.
RENAMED_KEYS = {
    "ingest.memory_limit": (
        "jobs.memory_limit",
        "it budgets every job that runs DuckDB, not ingestion alone",
    ),
}
_ABSENT = object()


def check_renamed_keys(raw: Mapping[str, Any]) -> None:
    """Fail on a key of :data:`RENAMED_KEYS`, naming the key that replaced it."""
    for old, (new, why) in RENAMED_KEYS.items():
        node: Any = raw
        for part in old.split("."):
            node = node.get(part, _ABSENT) if isinstance(node, Mapping) else _ABSENT
        if node is not _ABSENT:
            raise ConfigError(f"{old}: renamed {new} ({why}); set {new}: {node} instead")


def with_defaults(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The merged config with every default filled in, validated against the schema."""
    check_renamed_keys(raw)
    filled = fill_defaults(copy.deepcopy(dict(raw)), _schema())
    validator = jsonschema.Draft202012Validator(_schema())
    errors = sorted(validator.iter_errors(filled), key=lambda error: list(error.absolute_path))
    if errors:
        raise ConfigError("; ".join(f"{_key_path(error)}: {error.message}" for error in errors[:5]))
    return filled


def load_config(raw: Mapping[str, Any]) -> Config:
    """Fill, validate and type a merged config, then check what spans its sections."""
    filled = with_defaults(raw)
    try:
        config = msgspec.convert(filled, Config)
    except msgspec.ValidationError as error:
        raise ConfigError(f"config: {error}") from None
    check_config(config)
    return config


def load_config_file(*paths: str | Path) -> Config:
    """:func:`load_config` of YAML files merged left to right, as ``--configfile`` does."""
    merged: dict[str, Any] = {}
    for path in paths:
        with Path(path).open(encoding="utf-8") as handle:
            _merge(merged, yaml.safe_load(handle) or {})
    return load_config(merged)


def _merge(base: dict[str, Any], update: Mapping[str, Any]) -> None:
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = copy.deepcopy(value)


def _unknown(where: str, names: list[str], known: list[str]) -> None:
    missing = sorted(set(names) - set(known))
    if missing:
        raise ConfigError(f"{where}: {missing} are not among {known}")


def _check_ltr(where: str, ltr: Ltr, earlier: list[str], depth: int) -> None:
    """An ltr entry names earlier systems only, so no chain of systems can loop."""
    if ltr.name in earlier:
        raise ConfigError(f"{where}.name {ltr.name!r} is already a model name")
    for key, names in (("first_stage", [ltr.first_stage]), ("features", ltr.features)):
        if ltr.name in names:
            raise ConfigError(f"{where}.{key}: {ltr.name!r} is this ltr system itself")
        _unknown(f"{where}.{key}", names, earlier)
    if len(set(ltr.features)) != len(ltr.features):
        raise ConfigError(f"{where}.features names a system twice: {ltr.features}")
    if ltr.k > depth:
        raise ConfigError(f"{where}.k {ltr.k} goes deeper than the runs (retrieval.k {depth})")


def _check_own_system(where: str, entry: EmbeddingsSystem | RunSystem) -> None:
    """A user's system names its files or the command that writes them, never both."""
    files_key = "store" if isinstance(entry, EmbeddingsSystem) else "runs"
    if (getattr(entry, files_key) is None) == (entry.command is None):
        raise ConfigError(f"{where}: set exactly one of {files_key} (your files) and command")
    section = "embeddings" if isinstance(entry, EmbeddingsSystem) else "runs"
    for (kind, key), known in COMMAND_PLACEHOLDERS.items():
        template = getattr(entry, key, None) if kind == section else None
        if template is None:
            continue
        try:
            used = {field for _, field, _, _ in string.Formatter().parse(template) if field}
        except ValueError as error:
            raise ConfigError(f"{where}.{key}: {error} in {template!r}") from None
        unknown = sorted(used - set(known))
        if unknown:
            raise ConfigError(
                f"{where}.{key}: unknown placeholders {unknown}; it may use {list(known)} "
                "(write {{ and }} for a literal brace)"
            )
    if isinstance(entry, EmbeddingsSystem):
        if entry.command is not None and entry.contexts is not None:
            raise ConfigError(f"{where}: set contexts or command (it writes both), not both")
        return
    if entry.mdcr is not None and entry.mdcr_command is not None:
        raise ConfigError(f"{where}: set mdcr or mdcr_command, not both")
    for key, fields in (("runs", ("setup", "split", "collection")), ("mdcr", ("split",))):
        template = getattr(entry, key)
        missing = [f"{{{field}}}" for field in fields if f"{{{field}}}" not in (template or "")]
        if template is not None and missing:
            raise ConfigError(
                f"{where}.{key}: the template needs {', '.join(missing)}, got {template!r}"
            )


def check_config(config: Config) -> None:
    """Checks no single key's schema can make: names that must refer to one another."""
    for name, entry in config.train.models.items():
        if name in config.models:
            raise ConfigError(f"train.models.{name}: the registry already has a model of that name")
        if entry.base not in config.models:
            raise ConfigError(f"train.models.{name}.base {entry.base!r} is not in models")
    registry = [*config.models, *config.train.models]
    _unknown("encode.models", config.encode.models, registry)
    first_stages = [BM25_SYSTEM, *config.encode.models]
    for section in ("embeddings", "runs"):
        for index, entry in enumerate(getattr(config.systems, section)):
            where = f"systems.{section}[{index}] ({entry.name})"
            _check_own_system(where, entry)
            if entry.name in first_stages:
                raise ConfigError(f"{where}: another system has that name")
            first_stages.append(entry.name)
    for index, fusion in enumerate(config.fusion):
        if fusion.name in first_stages:
            raise ConfigError(f"fusion[{index}].name {fusion.name!r} is already a model name")
        _unknown(f"fusion[{index}].runs", fusion.runs, first_stages)
        first_stages.append(fusion.name)
    # The local task's rows may be ltr systems (each trains a local model); its first
    # stages (training, reranking) are the others.
    local_systems = list(first_stages)
    for index, ltr in enumerate(config.ltr):
        _check_ltr(f"ltr[{index}]", ltr, first_stages, config.retrieval.k)
        first_stages.append(ltr.name)
    rerank = config.rerank
    if rerank.enabled:
        _unknown("rerank.first_stages", rerank.first_stages, first_stages)
        _unknown("rerank.train.first_stage", [rerank.train.first_stage], first_stages)
        if rerank.name in first_stages:
            raise ConfigError(f"rerank.name {rerank.name!r} is already a model name")
        if max(rerank.ks) > config.retrieval.k:
            raise ConfigError(
                f"rerank.ks {rerank.ks} go deeper than the runs (retrieval.k {config.retrieval.k})"
            )
    local = config.local
    for name, entry in config.train.models.items():
        if entry.sampler == "contexts" and name in config.encode.models and not local.enabled:
            raise ConfigError(
                f"train.models.{name}: sampler contexts trains on the local task's training "
                "split; set local.enabled"
            )
    if local.enabled:
        _unknown("local.models", local.models, first_stages)
        systems = systems_of(config)
        ranked = with_members(local.models, lambda name: systems[name].members)
        for entry in config.systems.embeddings:
            if entry.name in ranked and entry.store is not None and entry.contexts is None:
                raise ConfigError(
                    f"local.models: {entry.name} ranks contexts by their vectors, but its "
                    "systems.embeddings entry names no contexts store"
                )
        if not local.input.paths:
            raise ConfigError("local.input.paths names no input (full text or curated contexts)")
        for ltr in config.ltr:
            if ltr.name in local.models and ltr.k > local.k:
                raise ConfigError(
                    f"local.models: ltr system {ltr.name!r} reorders {ltr.k} candidates, deeper "
                    f"than the local runs (local.k {local.k})"
                )
        _unknown("local.train.first_stage", [local.train.first_stage], local_systems)
        if local.rerank.enabled:
            _unknown("local.rerank.first_stages", local.rerank.first_stages, local_systems)
            if max(local.rerank.ks) > local.k:
                raise ConfigError(
                    f"local.rerank.ks {local.rerank.ks} go deeper than local.k {local.k}"
                )
        if max(local.cutoffs) > local.k:
            raise ConfigError(f"local.cutoffs {local.cutoffs} go deeper than local.k {local.k}")
    mdcr = config.mdcr
    if mdcr.enabled and mdcr.source == "build":
        _unknown("mdcr.models", mdcr.models, first_stages)
        if isinstance(mdcr.model_selection, list):
            _unknown("mdcr.model_selection", mdcr.model_selection, mdcr.models or first_stages)
    files = mdcr.import_
    if mdcr.enabled and mdcr.source == "import" and files.test is None and files.valid is None:
        raise ConfigError("mdcr.import names no benchmark and data file (test or valid)")
