# Local citation recommendation (docs/local.md): contexts from full text or curated files,
# split by time into samples/local-{test,valid}, which BM25, the encoders, fusion and the
# metrics rules run on as on any sample (setup "local"), and the local tables.


rule contexts_extract:
    input:
        lambda wildcards: PLAN.local.inputs[wildcards.shard],
    output:
        table=LAYOUT.contexts_staging("{shard}") + ".parquet",
        report=LAYOUT.contexts_staging("{shard}") + ".json",
    log:
        LAYOUT.log("contexts_extract", "{shard}"),
    benchmark:
        LAYOUT.timing("contexts_extract", "{shard}")
    conda:
        "../envs/core.yaml"
    resources:
        **JOBS.resources("contexts_extract"),
    params:
        settings=settings(stages.CONTEXTS),
    shell:
        "python -m citeval.contexts extract --input {input:q} --output {output.table:q} "
        "--report {output.report:q} {params.settings} 2> {log:q}"


rule contexts_merge:
    input:
        tables=[LAYOUT.contexts_staging(shard) + ".parquet" for shard in PLAN.local.inputs],
        reports=[LAYOUT.contexts_staging(shard) + ".json" for shard in PLAN.local.inputs],
        corpus=rules.ingest_merge.output,
    output:
        table=LAYOUT.contexts.table,
        report=LAYOUT.contexts.report,
    log:
        LAYOUT.log("contexts_merge"),
    benchmark:
        LAYOUT.timing("contexts_merge")
    conda:
        "../envs/core.yaml"
    threads: JOBS.threads("contexts_merge")
    resources:
        **JOBS.resources("contexts_merge"),
    params:
        settings=settings(stages.CONTEXTS_MERGE),
    shell:
        "python -m citeval.contexts merge --staging {input.tables:q} "
        "--reports {input.reports:q} --papers {input.corpus:q}/papers "
        "--output {output.table:q} --report {output.report:q} --threads {threads} "
        "{params.settings} 2> {log:q}"


rule local_sample:
    input:
        contexts=rules.contexts_merge.output.table,
        filtered=rules.prefilter.output.papers,
        corpus=rules.ingest_merge.output,
    output:
        test=directory(LAYOUT.sample_dir(LOCAL_SETUP, "test")),
        valid=directory(LAYOUT.sample_dir(LOCAL_SETUP, "valid")),
        train=directory(LAYOUT.sample_dir(LOCAL_SETUP, "train")),
        report=LAYOUT.sample_report(LOCAL_SETUP),
    log:
        LAYOUT.log("local_sample"),
    benchmark:
        LAYOUT.timing("local_sample")
    conda:
        "../envs/core.yaml"
    threads: JOBS.threads("local_sample")
    resources:
        **JOBS.resources("local_sample"),
    params:
        settings=settings(stages.LOCAL_SAMPLE),
        query_year=PLAN.local.query_year,
        output_dir=output_folder("report"),
    shell:
        "python -m citeval.local sample --contexts {input.contexts:q} "
        "--filtered {input.filtered:q} --papers {input.corpus:q}/papers "
        "--output-dir {params.output_dir:q} --query-year {params.query_year} "
        "{params.settings} --threads {threads} 2> {log:q}"


if PLAN.training.context_trained:

    rule local_triplets:
        input:
            run=PLAN.local.train_run,
            samples=LAYOUT.sample_dir(LOCAL_SETUP, "train"),
        output:
            triplets=LAYOUT.trained("{trained}", "triplets.parquet"),
            report=LAYOUT.trained("{trained}", "triplets_report.json"),
        log:
            LAYOUT.log("local_triplets", "{trained}"),
        benchmark:
            LAYOUT.timing("local_triplets", "{trained}")
        wildcard_constraints:
            trained=alternatives(PLAN.training.context_trained),
        conda:
            "../envs/core.yaml"
        resources:
            **JOBS.resources("local_triplets"),
        params:
            qrels=LAYOUT.qrels(LOCAL_SETUP, "train", LOCAL_COLLECTION),
            settings=settings(stages.LOCAL_TRIPLETS),
            output_dir=output_folder("report"),
        shell:
            "python -m citeval.local triplets --run {input.run:q} "
            "--qrels {params.qrels:q} "
            "--query-papers {input.samples:q}/query_papers --pools {input.samples:q}/pools.parquet "
            "--output-dir {params.output_dir:q} {params.settings} 2> {log:q}"


rule encode_local_queries:
    input:
        samples=lambda wildcards: LAYOUT.sample_dir(LOCAL_SETUP, wildcards.split),
        model=trained_model_folder,
    output:
        LAYOUT.query_embedding_shard("{dense_model}", "{split}"),
    log:
        LAYOUT.log("encode_local_queries", "{dense_model}", "{split}"),
    benchmark:
        LAYOUT.timing("encode_local_queries", "{dense_model}", "{split}")
    wildcard_constraints:
        dense_model=ENCODERS,
    conda:
        "../envs/dense.yaml"
    threads: JOBS.threads("encode_local_queries")
    resources:
        **JOBS.resources("encode_local_queries"),
    params:
        spec=model_spec_json,
        settings=encode_settings("query", num_shards=1),
        query_papers=lambda wildcards: LAYOUT.query_papers(wildcards.split),
        query_ids=lambda wildcards: LAYOUT.query_ids(wildcards.split),
    shell:
        "python -m citeval.encode --model {wildcards.dense_model:q} --model-json {params.spec} "
        "--papers {params.query_papers:q} --ids {params.query_ids:q} --shard-id 0 "
        "{params.settings} --threads {threads} --output {output:q} 2> {log:q}"


rule local_tables:
    input:
        metrics=lambda wildcards: PLAN.local.metrics(wildcards.split).values(),
        samples=lambda wildcards: LAYOUT.sample_dir(LOCAL_SETUP, wildcards.split),
        trained=list(PLAN.local.trained_models.values()),
    output:
        tsv=report_item(LAYOUT.table("local_{split}"), "local_table", "Tables"),
        markdown=LAYOUT.table("local_{split}", "md"),
    log:
        LAYOUT.log("local_tables", "{split}"),
    benchmark:
        LAYOUT.timing("local_tables", "{split}")
    conda:
        "../envs/core.yaml"
    resources:
        **JOBS.resources("local_tables"),
    params:
        metrics=lambda wildcards: shell_words(
            word
            for model, path in PLAN.local.metrics(wildcards.split).items()
            for word in ("--metrics", model, path)
        ),
        query_papers=lambda wildcards: LAYOUT.query_papers(wildcards.split),
        title=lambda wildcards: (
            f"Local citation recommendation, {wildcards.split} split "
            f"(citing papers of {PLAN.local.query_year})"
        ),
        settings=settings(stages.LOCAL_TABLES),
        trained=trained_arguments(PLAN.local.trained_models),
    shell:
        "python -m citeval.local tables {params.metrics} --query-papers {params.query_papers:q} "
        "--title {params.title:q} {params.settings} {params.trained} --output {output.tsv:q} "
        "2> {log:q}"


if PLAN.local.reranker:

    # The global task's reranking rules (rules/rerank.smk), on the local splits: the queries'
    # texts are the contexts, and training adds each context's cited paper.
    use rule rerank_train as local_rerank_train with:
        input:
            run=PLAN.local.train_run,
            samples=LAYOUT.sample_dir(LOCAL_SETUP, "train"),
            corpus=rules.ingest_merge.output,
        output:
            directory(LAYOUT.local_reranker_model(PLAN.local.reranker)),
        log:
            LAYOUT.log("local_rerank_train"),
        benchmark:
            LAYOUT.timing("local_rerank_train")
        threads: JOBS.threads("local_rerank_train")
        resources:
            **JOBS.resources("local_rerank_train"),
        params:
            qrels=LAYOUT.qrels(LOCAL_SETUP, "train", LOCAL_COLLECTION),
            queries=lambda wildcards, input: (
                context_query_papers(wildcards, input) + " --add-cited"
            ),

    use rule rerank as local_rerank with:
        input:
            model=rules.local_rerank_train.output,
            run=LAYOUT.run(LOCAL_SETUP, "{split}", LOCAL_COLLECTION, "{first_stage}"),
            samples=lambda wildcards: LAYOUT.sample_dir(LOCAL_SETUP, wildcards.split),
            corpus=rules.ingest_merge.output,
        output:
            runs=[
                LAYOUT.run(LOCAL_SETUP, "{split}", LOCAL_COLLECTION, name)
                for name in (
                    reranked_run("{first_stage}", PLAN.local.reranker, k) for k in PLAN.local.ks
                )
            ],
            timing=LAYOUT.rerank_timing(
                PLAN.local.reranker, LOCAL_SETUP, "{split}", LOCAL_COLLECTION, "{first_stage}"
            ),
        log:
            LAYOUT.log("local_rerank", "{split}", "{first_stage}"),
        benchmark:
            LAYOUT.timing("local_rerank", "{split}", "{first_stage}")
        threads: JOBS.threads("local_rerank")
        resources:
            **JOBS.resources("local_rerank"),
        params:
            ks=shell_words(PLAN.local.ks),
            tag_prefix=reranked_label("{first_stage}", PLAN.local.reranker, ""),
            queries=context_query_papers,

    rule local_oracle:
        input:
            run=LAYOUT.run(LOCAL_SETUP, "{split}", LOCAL_COLLECTION, "{first_stage}"),
            samples=lambda wildcards: LAYOUT.sample_dir(LOCAL_SETUP, wildcards.split),
        output:
            LAYOUT.run(LOCAL_SETUP, "{split}", LOCAL_COLLECTION, oracle_run("{first_stage}", "{k}")),
        log:
            LAYOUT.log("local_oracle", "{split}", "{first_stage}", "{k}"),
        benchmark:
            LAYOUT.timing("local_oracle", "{split}", "{first_stage}", "{k}")
        wildcard_constraints:
            k=r"\d+",
        conda:
            "../envs/core.yaml"
        resources:
            **JOBS.resources("local_oracle"),
        params:
            qrels=lambda wildcards: LAYOUT.qrels(LOCAL_SETUP, wildcards.split, LOCAL_COLLECTION),
        shell:
            "python -m citeval.local oracle --run {input.run:q} --qrels {params.qrels:q} "
            "--k {wildcards.k} --output {output:q} 2> {log:q}"

    use rule local_rerank as local_rerank_oracle with:
        input:
            model=rules.local_rerank_train.output,
            run=rules.local_oracle.output,
            samples=lambda wildcards: LAYOUT.sample_dir(LOCAL_SETUP, wildcards.split),
            corpus=rules.ingest_merge.output,
        output:
            runs=[
                LAYOUT.run(
                    LOCAL_SETUP,
                    "{split}",
                    LOCAL_COLLECTION,
                    reranked_run(oracle_run("{first_stage}", "{k}"), PLAN.local.reranker, "{k}"),
                )
            ],
            timing=LAYOUT.rerank_timing(
                PLAN.local.reranker,
                LOCAL_SETUP,
                "{split}",
                LOCAL_COLLECTION,
                oracle_run("{first_stage}", "{k}"),
            ),
        log:
            LAYOUT.log("local_rerank_oracle", "{split}", "{first_stage}", "{k}"),
        benchmark:
            LAYOUT.timing("local_rerank_oracle", "{split}", "{first_stage}", "{k}")
        wildcard_constraints:
            k=r"\d+",
        threads: JOBS.threads("local_rerank_oracle")
        resources:
            **JOBS.resources("local_rerank_oracle"),
        params:
            ks=lambda wildcards: wildcards.k,
            tag_prefix=reranked_label(oracle_run("{first_stage}", ""), PLAN.local.reranker, ""),

    rule local_tradeoff:
        input:
            PLAN.local.tradeoff.inputs,
        output:
            LAYOUT.table("local_tradeoff"),
            LAYOUT.table("local_tradeoff", "md"),
            report_item(LAYOUT.table("local_tradeoff", "png"), "local_tradeoff", "Figures"),
        log:
            LAYOUT.log("local_tradeoff"),
        benchmark:
            LAYOUT.timing("local_tradeoff")
        conda:
            "../envs/core.yaml"
        resources:
            **JOBS.resources("local_tradeoff"),
        params:
            arguments=tradeoff_arguments(PLAN.local.tradeoff),
            title="Local citation recommendation: reranking trade-off (test split)",
            output_dir=output_folder(),
        shell:
            "python -m citeval.rerank tradeoff {params.arguments} --title {params.title:q} "
            "--output-dir {params.output_dir:q} --name local_tradeoff 2> {log:q}"
