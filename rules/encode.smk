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
        settings=settings(stages.ENCODE),
    shell:
        "python -m citeval.encode --model {wildcards.dense_model:q} --model-json {params.spec} "
        "--papers {input.corpus:q}/papers --ids {input.ids:q} --shard-id {wildcards.index:q} "
        "{params.settings} --threads {threads} --output {output:q} 2> {log:q}"
