# Dense retrieval: a Faiss index over each pool's vectors (gathered from the shards), then
# top-k search for the pool's queries.


rule dense_retrieve:
    input:
        shards=embedding_shards,
        samples=split_sample_dir,
        queries=query_embeddings,
    output:
        run=LAYOUT.run(**COLLECTION, model="{dense_model}"),
    log:
        LAYOUT.log("dense_retrieve", *PER_COLLECTION, "{dense_model}"),
    benchmark:
        LAYOUT.timing("dense_retrieve", *PER_COLLECTION, "{dense_model}")
    group:
        ENCODER.chain
    conda:
        "../envs/dense.yaml"
    threads: JOBS.threads("dense_retrieve")
    resources:
        **JOBS.resources("dense_retrieve"),
    params:
        embeddings=lambda wildcards: LAYOUT.embeddings(wildcards.dense_model),
        queries=lambda wildcards, input: (
            shell_words(["--query-embeddings", Path(input.queries).parent])
            if input.queries
            else ""
        ),
        similarity=lambda wildcards: PLAN.systems.similarity(wildcards.dense_model),
        # A user's store has no pooling: one vector a paper.
        pooling=lambda wildcards: shell_words(
            ["--pooling", PLAN.systems.pooling(wildcards.dense_model)]
            if PLAN.systems.pooling(wildcards.dense_model)
            else []
        ),
        settings=lambda wildcards: settings(
            stages.RETRIEVE, k=PLAN.setups.retrieval_k(wildcards.setup)
        ),
    shell:
        "python -m citeval.retrieve --embeddings {params.embeddings:q} "
        "--similarity {params.similarity:q} {params.pooling} "
        "--queries {input.samples:q}/queries.parquet --pools {input.samples:q}/pools.parquet "
        "--group {wildcards.group:q} --rep {wildcards.rep:q} {params.settings} {params.queries} "
        "--threads {threads} --output {output.run:q} --tag {wildcards.dense_model:q} "
        "2> {log:q}"
