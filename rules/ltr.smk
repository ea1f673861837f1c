# Learning to rank (docs/ltr.md): LambdaMART over every feature system's runs and the
# candidates' citation counts, years and lengths, trained on the reranker's training split,
# reordering its first stage's top k on every collection, scoring every MDCR pair; the
# feature importances in a table and a figure.


rule ltr_train:
    input:
        unpack(lambda wildcards: PLAN.ltr.training_inputs(wildcards.ltr)),
        corpus=rules.ingest_merge.output,
        graph=rules.train_graph.output.edges,
    output:
        directory(LAYOUT.ltr_model("{ltr}")),
    log:
        LAYOUT.log("ltr_train", "{ltr}"),
    benchmark:
        LAYOUT.timing("ltr_train", "{ltr}")
    conda:
        "../envs/core.yaml"
    resources:
        **JOBS.resources("ltr_train"),
    params:
        files=lambda wildcards: shell_words(PLAN.ltr.training_arguments(wildcards.ltr)),
        settings=lambda wildcards: settings(stages.LTR_TRAIN, **PLAN.ltr.settings(wildcards.ltr)),
        graph=input_folder("graph"),
    shell:
        "python -m citeval.ltr train --name {wildcards.ltr:q} {params.files} "
        "--papers {input.corpus:q}/papers --graph {params.graph:q} --output-dir {output:q} "
        "{params.settings} 2> {log:q}"


# The local task's model of an ltr system that local.models lists: the same features, on
# the local training split's contexts.
use rule ltr_train as ltr_train_local with:
    input:
        unpack(lambda wildcards: PLAN.ltr.training_inputs(wildcards.ltr, local=True)),
        corpus=rules.ingest_merge.output,
        graph=rules.train_graph.output.edges,
    output:
        directory(LAYOUT.ltr_model("{ltr}", LOCAL_SETUP)),
    log:
        LAYOUT.log("ltr_train_local", "{ltr}"),
    benchmark:
        LAYOUT.timing("ltr_train_local", "{ltr}")
    params:
        files=lambda wildcards: shell_words(PLAN.ltr.training_arguments(wildcards.ltr, local=True)),
        settings=lambda wildcards: settings(stages.LTR_TRAIN, **PLAN.ltr.settings(wildcards.ltr)),
        graph=input_folder("graph"),


rule ltr_rank:
    input:
        model=lambda wildcards: PLAN.ltr.model(wildcards.ltr, wildcards.setup),
        first_stage=lambda wildcards: PLAN.ltr.first_stage_run(
            wildcards.ltr, wildcards.setup, wildcards.split, collection_of(wildcards)
        ),
        features=lambda wildcards: PLAN.ltr.feature_runs(
            wildcards.ltr, wildcards.setup, wildcards.split, collection_of(wildcards)
        ).values(),
        samples=split_sample_dir,
        corpus=rules.ingest_merge.output,
        graph=rules.train_graph.output.edges,
    output:
        LAYOUT.run(**COLLECTION, model="{ltr}"),
    log:
        LAYOUT.log("ltr_rank", *PER_COLLECTION, "{ltr}"),
    benchmark:
        LAYOUT.timing("ltr_rank", *PER_COLLECTION, "{ltr}")
    conda:
        "../envs/core.yaml"
    resources:
        **JOBS.resources("ltr_rank"),
    params:
        files=lambda wildcards: shell_words(
            PLAN.ltr.rank_arguments(
                wildcards.ltr, wildcards.setup, wildcards.split, collection_of(wildcards)
            )
        ),
        graph=input_folder("graph"),
        settings=settings(stages.LTR_APPLY),
    shell:
        "python -m citeval.ltr rank --model {input.model:q} --run {input.first_stage:q} "
        "{params.files} --papers {input.corpus:q}/papers --graph {params.graph:q} "
        "--output {output:q} --tag {wildcards.ltr:q} {params.settings} 2> {log:q}"


rule mdcr_score_ltr:
    input:
        unpack(mdcr_files),
        model=LAYOUT.ltr_model("{ltr}"),
        scores=lambda wildcards: PLAN.ltr.mdcr_scores(wildcards.ltr, wildcards.mdcr_split).values(),
        corpus=rules.ingest_merge.output,
        graph=rules.train_graph.output.edges,
    output:
        LAYOUT.mdcr_scores("{mdcr_split}", "{ltr}"),
    log:
        LAYOUT.log("mdcr_score", "{mdcr_split}", "{ltr}"),
    benchmark:
        LAYOUT.timing("mdcr_score", "{mdcr_split}", "{ltr}")
    conda:
        "../envs/core.yaml"
    resources:
        **JOBS.resources(LTR.mdcr_job),
    params:
        scores=lambda wildcards: shell_words(
            PLAN.ltr.mdcr_arguments(wildcards.ltr, wildcards.mdcr_split)
        ),
        graph=input_folder("graph"),
        settings=settings(stages.LTR_APPLY),
    shell:
        "python -m citeval.ltr score-mdcr --model {input.model:q} "
        "--benchmark {input.benchmark:q} {params.scores} --papers {input.corpus:q}/papers "
        "--graph {params.graph:q} --output {output:q} {params.settings} 2> {log:q}"


rule ltr_importance:
    input:
        list(PLAN.ltr.models().values()),
    output:
        table=LAYOUT.table(LTR_IMPORTANCE),
        markdown=LAYOUT.table(LTR_IMPORTANCE, "md"),
        plot=report_item(LAYOUT.plot(LTR_IMPORTANCE), "ltr_importance", "Figures"),
    log:
        LAYOUT.log("ltr_importance"),
    benchmark:
        LAYOUT.timing("ltr_importance")
    conda:
        "../envs/core.yaml"
    resources:
        **JOBS.resources("ltr_importance"),
    params:
        models=shell_words(
            f"{name}={folder}/training.json" for name, folder in PLAN.ltr.models().items()
        ),
        table=lambda wildcards, output: Path(output.table).with_suffix(""),
    shell:
        "python -m citeval.ltr importance --model {params.models} --table {params.table:q} "
        "--plot {output.plot:q} 2> {log:q}"
