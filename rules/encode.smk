# Embedding shards: every paper in any test pool or query is embedded once per model and
# reused across pools and repetitions. One job per shard; a finished shard is never redone.
# GPU requests are cluster settings and live in profiles/ (set-resources), not here.


rule encode:
    input:
        ids=rules.embed_ids.output,
        corpus=rules.ingest_merge.output,
        model=trained_model_folder,
    output:
        f"{RESULTS}/embeddings/{{dense_model}}/shard-{{index}}.npy",
    params:
        spec=model_spec_json,
        num_shards=NUM_ENCODE_SHARDS,
        device=ENCODE["device"],
    wildcard_constraints:
        index=r"\d{5}",
    conda:
        "../envs/dense.yaml"
    log:
        f"{LOGS}/encode/{{dense_model}}/shard-{{index}}.log",
    benchmark:
        f"{BENCHMARKS}/encode/{{dense_model}}/shard-{{index}}.tsv"
    threads: 2
    resources:
        mem_mb=8000,
        runtime=240,
    shell:
        "python -m citeval.encode --model {wildcards.dense_model:q} --model-json {params.spec} "
        "--papers {input.corpus:q}/papers --ids {input.ids:q} --shard-id {wildcards.index:q} "
        "--num-shards {params.num_shards:q} --device {params.device:q} --threads {threads} "
        "--output {output:q} 2> {log:q}"
