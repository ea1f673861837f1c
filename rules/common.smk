# The plan of this config (citeval.plan), its paths (citeval.layout) and the input
# functions and wildcard constraints every rule file shares. What runs, with which settings,
# writing which file, is decided in the package; the rules only wire it.
import json
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "workflow"))
from citeval import stages
from citeval.config import load_config
from citeval.layout import LOCAL_COLLECTION, LOCAL_SETUP, MDCR_FILES, MDCR_SPLIT_OF_FILE
from citeval.layout import QUERY_PAPERS, WILDCARDS, oracle_run, reranked_label, reranked_run
from citeval.systems import BM25, BM25_SYSTEM, EMBEDDINGS, ENCODER, FUSION, LTR, RUN
from citeval.systems import RERANKER as RERANKER_KIND
from citeval.commands import fill_command, fit_sampler_arguments, settings_flags, shell_words
from citeval.commands import tradeoff_arguments, trained_arguments
from citeval.plan import Plan, alternatives
from citeval.plan.ltr import IMPORTANCE as LTR_IMPORTANCE
from citeval.plan.rerank import TRAIN_SETUP
from citeval.slurm import install as adjust_slurm_plugin

# On SLURM, a cancelled or preempted job fails instead of hanging, and a job no partition
# can hold is refused instead of pending for good (citeval.slurm).
adjust_slurm_plugin()

# Every job imports the citeval package from this checkout, whether or not it was
# pip-installed into the job's environment (for example a per-rule conda env). The prefix
# is formatted like a rule's command, hence the doubled braces.
_PACKAGE_DIR = shlex.quote(str(Path(workflow.basedir) / "workflow"))
shell.prefix(
    "export PYTHONPATH="
    + _PACKAGE_DIR.replace("{", "{{").replace("}", "}}")
    + "${{PYTHONPATH:+:$PYTHONPATH}}; set -euo pipefail; "
)

CONFIG = load_config(config)
PLAN = Plan.from_config(CONFIG)
LAYOUT = PLAN.layout
RERANKER = PLAN.systems.reranker
# A wildcard pattern of the encoders alone: their rules share the {dense_model} wildcard
# with the users' stores, which are imported, not encoded.
ENCODERS = alternatives(PLAN.systems.encoders)
# Wildcard placeholders of one collection's files: LAYOUT.run(**COLLECTION, model=...),
# and of its jobs' logs and benchmarks: LAYOUT.log("metrics", *PER_COLLECTION, "{model}").
COLLECTION = WILDCARDS
PER_COLLECTION = ("{setup}-{split}", COLLECTION["collection"])
JOBS = PLAN.jobs


def settings(stage, **values):
    """A job's settings flags from the config (citeval.stages)."""
    return settings_flags(CONFIG, stage, **values)


wildcard_constraints:
    **PLAN.wildcard_constraints(),


# --- input functions: one line each over the plan ----------------------------------


def final_outputs(wildcards):
    return PLAN.outputs.final()


def shard_input(wildcards):
    return PLAN.shards[wildcards.shard][1]


def split_sample_dir(wildcards):
    return LAYOUT.sample_dir(wildcards.setup, wildcards.split)


def collection_of(wildcards):
    return f"{wildcards.group}.rep{wildcards.rep}"


def bm25_parameters(wildcards):
    return PLAN.setups.bm25_parameters(wildcards.setup, wildcards.split) or []


def query_papers(wildcards, input):
    """The queries' texts: the corpus's papers, or the local task's contexts."""
    if wildcards.setup == LOCAL_SETUP:
        return LAYOUT.query_papers(wildcards.split)
    return f"{input.corpus}/papers"


def context_query_papers(wildcards, input):
    """The rerank command's flag for queries that are contexts (the local task)."""
    return shell_words(["--query-papers", f"{input.samples}/{QUERY_PAPERS}"])


def query_embeddings(wildcards):
    """The local task's queries, and the query papers of a model whose prompts differ, are
    embedded apart from the papers (citeval.plan.encoders)."""
    model, setup, split = wildcards.dense_model, wildcards.setup, wildcards.split
    return PLAN.encoders.query_shard(model, setup, split) or []


def encode_settings(role, **values):
    """The encode command's settings, plus its --role where the model's prompts differ (in
    a parameter, not the command: every other model's jobs stay as they were)."""

    def flags(wildcards):
        role_flags = shell_words(PLAN.encoders.role_flags(wildcards.dense_model, role))
        return " ".join(filter(None, [settings(stages.ENCODE, **values), role_flags]))

    return flags


def bm25_tuning_collections(wildcards):
    collections = PLAN.setups.bm25_tuning_collections(wildcards.setup)
    return shell_words(word for c in collections for word in ("--collection", c.name))


def trained_model_folder(wildcards):
    name = wildcards.dense_model
    return LAYOUT.trained(name, "model") if name in PLAN.training.models else []


def model_spec_json(wildcards):
    return shlex.quote(json.dumps(PLAN.systems.model_specs[wildcards.dense_model], sort_keys=True))


def embedding_shards(wildcards):
    return PLAN.encoders.shards(wildcards.dense_model)


def mdcr_files(wildcards):
    return PLAN.mdcr.files(wildcards.mdcr_split)


def split_of_file(wildcards):
    """The split of an MDCR file name (mdcr_val.json: valid)."""
    return MDCR_SPLIT_OF_FILE[wildcards.mdcr_file]


def mdcr_bm25_parameters(wildcards):
    return PLAN.mdcr.bm25_parameters() or []


def params_json(wildcards, input):
    """Tuned k1/b, when tuning ran: they take precedence over the configured k1/b."""
    return shell_words(["--params-json", input.parameters]) if input.parameters else ""


def output_folder(key=0, levels=1):
    """A params function: the folder ``levels`` above an output (index or name). Derived
    from the output, not hard-coded, so that jobs without a shared file system get it."""

    def folder(wildcards, output):
        path = output[key] if isinstance(key, int) else getattr(output, key)
        return Path(path).parents[levels - 1]

    return folder


def input_folder(key):
    """A params function: the folder of a named input."""

    def folder(wildcards, input):
        return Path(getattr(input, key)).parent

    return folder


def report_item(path, caption, category):
    return report(path, caption=f"../report/{caption}.rst", category=category)
