# Citation-recommendation evaluation: S2ORC -> prefilter -> queries and pools -> BM25 and
# encoders -> metrics -> the paper's tables. All logic lives in the citeval package
# (workflow/citeval): the config is typed and checked by citeval.config, what runs and
# where it writes is decided by citeval.plan and citeval.layout (rules/common.smk), and
# the rules only wire its `python -m citeval.<stage>` commands (docs/architecture.md).
from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "config/config.yaml"


validate(config, "workflow/citeval/schema.yaml")


report: "report/workflow.rst"


include: "rules/common.smk"
include: "rules/synth.smk"
include: "rules/ingest.smk"
include: "rules/filter.smk"
include: "rules/sample.smk"
include: "rules/bm25.smk"
include: "rules/encode.smk"
include: "rules/index.smk"
include: "rules/external.smk"
include: "rules/fusion.smk"
include: "rules/metrics.smk"
include: "rules/mdcr.smk"


if PLAN.training.models or PLAN.ltr.names:

    include: "rules/train.smk"


if RERANKER or PLAN.local.reranker:

    include: "rules/rerank.smk"


if PLAN.ltr.names:

    include: "rules/ltr.smk"


if PLAN.local.enabled:

    include: "rules/local.smk"


include: "rules/tables.smk"
include: "rules/export.smk"


rule all:
    default_target: True
    input:
        final_outputs,
