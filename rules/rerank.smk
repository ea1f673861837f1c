# Reranking (docs/rerank.md): training queries from the years before the query year, the
# training first stage's runs on their pool, a cross-encoder trained on those runs' top
# results, every configured first stage's test runs reranked at each K, MDCR scored by the
# reranker, and the speed/accuracy trade-off. The local task's reranking rules
# (rules/local.smk) are these two rules with the local task's inputs.

RERANK_NAME = CONFIG.rerank.name
TRAIN_RUN = LAYOUT.run(
    TRAIN_SETUP, "train", PLAN.rerank.train_collection, CONFIG.rerank.train.first_stage
)


rule rerank_train:
    input:
        run=TRAIN_RUN,
        samples=LAYOUT.sample_dir(TRAIN_SETUP, "train"),
        corpus=rules.ingest_merge.output,
    output:
        directory(LAYOUT.reranker_model(RERANK_NAME)),
    log:
        LAYOUT.log("rerank_train"),
    benchmark:
        LAYOUT.timing("rerank_train")
    conda:
        "../envs/dense.yaml"
    threads: JOBS.threads("rerank_train")
    resources:
        **JOBS.resources("rerank_train"),
    params:
        qrels=LAYOUT.qrels(TRAIN_SETUP, "train", PLAN.rerank.train_collection),
        # The queries' texts: the corpus's papers here, the contexts in the local task.
        queries="",
        settings=settings(stages.RERANK_TRAIN),
        output_dir=lambda wildcards, output: Path(output[0]).parent,
    shell:
        "python -m citeval.rerank train --run {input.run:q} --qrels {params.qrels:q} "
        "--papers {input.corpus:q}/papers {params.queries} --output-dir {params.output_dir:q} "
        "{params.settings} --threads {threads} 2> {log:q}"


rule rerank:
    input:
        model=rules.rerank_train.output,
        run=LAYOUT.run(**COLLECTION, model="{first_stage}"),
        samples=split_sample_dir,
        corpus=rules.ingest_merge.output,
    output:
        runs=[
            LAYOUT.run(**COLLECTION, model=name)
            for name in (
                reranked_run("{first_stage}", RERANK_NAME, k) for k in PLAN.systems.rerank_ks
            )
        ],
        timing=LAYOUT.rerank_timing(RERANK_NAME, **COLLECTION, first_stage="{first_stage}"),
    log:
        LAYOUT.log("rerank", *PER_COLLECTION, "{first_stage}"),
    benchmark:
        LAYOUT.timing("rerank", *PER_COLLECTION, "{first_stage}")
    wildcard_constraints:
        setup="dataset|field",
    conda:
        "../envs/dense.yaml"
    threads: JOBS.threads("rerank")
    resources:
        **JOBS.resources("rerank"),
    params:
        settings=settings(stages.RERANK),
        ks=shell_words(PLAN.systems.rerank_ks),
        tag_prefix=reranked_label("{first_stage}", RERANK_NAME, ""),
        queries="",
    shell:
        "python -m citeval.rerank rerank --model {input.model:q} --papers {input.corpus:q}/papers "
        "{params.queries} --run {input.run:q} --ks {params.ks} --outputs {output.runs:q} "
        "--timing {output.timing:q} {params.settings} --tag-prefix {params.tag_prefix:q} "
        "--threads {threads} 2> {log:q}"


if RERANKER:

    rule mdcr_score_rerank:
        input:
            unpack(mdcr_files),
            model=rules.rerank_train.output,
        output:
            LAYOUT.mdcr_scores("{mdcr_split}", RERANKER),
        log:
            LAYOUT.log("mdcr_score", "{mdcr_split}", RERANKER),
        benchmark:
            LAYOUT.timing("mdcr_score", "{mdcr_split}", RERANKER)
        conda:
            "../envs/dense.yaml"
        threads: JOBS.threads(RERANKER_KIND.mdcr_job)
        resources:
            **JOBS.resources(RERANKER_KIND.mdcr_job),
        params:
            name=RERANKER,
            settings=settings(stages.MDCR_SCORE_RERANK),
        shell:
            "python -m citeval.mdcr score --benchmark {input.benchmark:q} --data {input.data:q} "
            "--model {params.name:q} --kind cross-encoder --model-dir {input.model:q} "
            "{params.settings} --threads {threads} --output {output:q} 2> {log:q}"

    rule rerank_tradeoff:
        input:
            PLAN.rerank.tradeoff.inputs,
        output:
            LAYOUT.table("tradeoff"),
            LAYOUT.table("tradeoff", "md"),
            report_item(LAYOUT.table("tradeoff", "png"), "tradeoff", "Figures"),
        log:
            LAYOUT.log("rerank_tradeoff"),
        benchmark:
            LAYOUT.timing("rerank_tradeoff")
        conda:
            "../envs/core.yaml"
        resources:
            **JOBS.resources("rerank_tradeoff"),
        params:
            arguments=tradeoff_arguments(PLAN.rerank.tradeoff),
            title=f"Reranking trade-off, dataset-level {PLAN.rerank.tradeoff_collection}",
            output_dir=output_folder(),
        shell:
            "python -m citeval.rerank tradeoff {params.arguments} --title {params.title:q} "
            "--output-dir {params.output_dir:q} 2> {log:q}"
