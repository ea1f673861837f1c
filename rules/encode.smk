# Embedding shards: every paper in any test pool or query is embedded once per model and
# reused across pools and repetitions. One job per shard; a finished shard is never redone.
# Its GPU request comes from citeval.jobs (jobs.gpu); the partition from the profile.


rule encode:
    input:
        ids=rules.embed_ids.output,
        corpus=rules.ingest_merge.output,
        model=trained_model_folder,
    output:
        LAYOUT.embedding_shard("{dense_model}", "{index}"),
    log:
        LAYOUT.log("encode", "{dense_model}", "shard-{index}"),
    benchmark:
        LAYOUT.timing("encode", "{dense_model}", "shard-{index}")
    wildcard_constraints:
        index=r"\d{5}",
        dense_model=ENCODERS,
    conda:
        "../envs/dense.yaml"
    threads: JOBS.threads("encode")
    resources:
        **JOBS.resources("encode"),
    params:
        spec=model_spec_json,
        settings=encode_settings("document"),
    shell:
        "python -m citeval.encode --model {wildcards.dense_model:q} --model-json {params.spec} "
        "--papers {input.corpus:q}/papers --ids {input.ids:q} --shard-id {wildcards.index:q} "
        "{params.settings} --threads {threads} --output {output:q} 2> {log:q}"


# A split's query papers, embedded with the query prompt, for a model whose query and
# document prompts differ (citeval.plan.encoders); the papers' store has the document's.
rule encode_query_papers:
    input:
        samples=split_sample_dir,
        corpus=rules.ingest_merge.output,
        model=trained_model_folder,
    output:
        LAYOUT.query_paper_shard("{dense_model}", "{setup}", "{split}"),
    log:
        LAYOUT.log("encode_query_papers", "{dense_model}", "{setup}-{split}"),
    benchmark:
        LAYOUT.timing("encode_query_papers", "{dense_model}", "{setup}-{split}")
    wildcard_constraints:
        dense_model=ENCODERS,
    conda:
        "../envs/dense.yaml"
    threads: JOBS.threads("encode_query_papers")
    resources:
        **JOBS.resources("encode_query_papers"),
    params:
        spec=model_spec_json,
        settings=encode_settings("query", num_shards=1),
    shell:
        "python -m citeval.encode --model {wildcards.dense_model:q} --model-json {params.spec} "
        "--papers {input.corpus:q}/papers --ids {input.samples:q}/queries.parquet "
        "--ids-column query_id --shard-id 0 {params.settings} --threads {threads} "
        "--output {output:q} 2> {log:q}"
