# Ingestion: one parse job per input shard (resumable, parallel), then one merge job that
# deduplicates, resolves the citation graph and writes the canonical corpus tables.
# Ingest does no linear algebra: OPENBLAS_NUM_THREADS=1 keeps numpy's OpenBLAS from
# starting idle worker threads, which would take CPU from the parse itself.


rule ingest_parse:
    input:
        shard_input,
    output:
        directory(LAYOUT.staging("{shard}")),
    log:
        LAYOUT.log("ingest_parse", "{shard}"),
    benchmark:
        LAYOUT.timing("ingest_parse", "{shard}")
    conda:
        "../envs/core.yaml"
    resources:
        **JOBS.resources("ingest_parse"),
    params:
        format=lambda wildcards: PLAN.shards[wildcards.shard][0],
        settings=settings(stages.INGEST_PARSE),
    shell:
        "OPENBLAS_NUM_THREADS=1 python -m citeval.ingest parse --format {params.format:q} "
        "--input {input:q} --output-dir {output:q} {params.settings} 2> {log:q}"


rule ingest_merge:
    input:
        [LAYOUT.staging(shard) for shard in sorted(PLAN.shards)],
    output:
        directory(LAYOUT.corpus),
    log:
        LAYOUT.log("ingest_merge"),
    benchmark:
        LAYOUT.timing("ingest_merge")
    conda:
        "../envs/core.yaml"
    threads: JOBS.threads("ingest_merge")
    resources:
        **JOBS.resources("ingest_merge"),
    params:
        settings=settings(stages.INGEST_MERGE),
    shell:
        "OPENBLAS_NUM_THREADS=1 python -m citeval.ingest merge --staging {input:q} "
        "--output-dir {output:q} {params.settings} --threads {threads} 2> {log:q}"
