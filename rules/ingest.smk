# Ingestion: one parse job per input shard (resumable, parallel), then one merge job that
# deduplicates, resolves the citation graph and writes the canonical corpus tables.
# Ingest does no linear algebra: OPENBLAS_NUM_THREADS=1 keeps numpy's OpenBLAS from
# starting idle worker threads, which would take CPU from the parse itself.


rule ingest_parse:
    input:
        shard_input,
    output:
        directory(f"{RESULTS}/staging/{{shard}}"),
    params:
        format=shard_format,
        max_bad_fraction=config["ingest"]["max_bad_fraction"],
    conda:
        "../envs/core.yaml"
    log:
        f"{LOGS}/ingest_parse/{{shard}}.log",
    benchmark:
        f"{BENCHMARKS}/ingest_parse/{{shard}}.tsv"
    resources:
        mem_mb=1500,
        runtime=60,
    shell:
        "OPENBLAS_NUM_THREADS=1 python -m citeval.ingest parse --format {params.format:q} "
        "--input {input:q} --output-dir {output:q} "
        "--max-bad-fraction {params.max_bad_fraction:q} 2> {log:q}"


rule ingest_merge:
    input:
        expand(f"{RESULTS}/staging/{{shard}}", shard=sorted(INPUT_SHARDS)),
    output:
        directory(f"{RESULTS}/corpus"),
    params:
        on_duplicate=config["ingest"]["on_duplicate"],
        rows_per_part=config["ingest"]["rows_per_part"],
        memory_limit=config["ingest"]["memory_limit"],
    conda:
        "../envs/core.yaml"
    log:
        f"{LOGS}/ingest_merge.log",
    benchmark:
        f"{BENCHMARKS}/ingest_merge.tsv"
    threads: 2
    resources:
        # Besides --memory-limit the merge holds a fixed part and a few bytes per paper
        # (docs/ingest.md, memory model): headroom.
        mem_mb=max(4000, int(1.5 * memory_bytes(config["ingest"]["memory_limit"]) / 1e6)),
        runtime=240,
    shell:
        "OPENBLAS_NUM_THREADS=1 python -m citeval.ingest merge --staging {input:q} "
        "--output-dir {output:q} --on-duplicate {params.on_duplicate:q} "
        "--rows-per-part {params.rows_per_part:q} --memory-limit {params.memory_limit:q} "
        "--threads {threads} 2> {log:q}"
