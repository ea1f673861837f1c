# Dense retrieval: a Faiss index over each pool's vectors (gathered from the shards), then
# top-k search for the pool's queries.


rule dense_retrieve:
    input:
        shards=embedding_shards,
        samples=split_sample_dir,
    output:
        run=f"{RESULTS}/runs/{{setup}}-{{split}}/{{group}}.rep{{rep}}/{{dense_model}}.trec",
    params:
        embeddings=lambda wildcards: f"{RESULTS}/embeddings/{wildcards.dense_model}",
        similarity=lambda wildcards: config["models"][wildcards.dense_model]["similarity"],
        pooling=lambda wildcards: config["models"][wildcards.dense_model]["pooling"],
        index=shell_words(
            "--index", FAISS["index"], "--ivf-nlist", FAISS["ivf_nlist"],
            "--ivf-nprobe", FAISS["ivf_nprobe"], "--hnsw-m", FAISS["hnsw_m"],
            "--hnsw-ef-search", FAISS["hnsw_ef_search"],
        ),
        k=config["retrieval"]["k"],
    conda:
        "../envs/dense.yaml"
    log:
        f"{LOGS}/dense_retrieve/{{setup}}-{{split}}/{{group}}.rep{{rep}}/{{dense_model}}.log",
    benchmark:
        f"{BENCHMARKS}/dense_retrieve/{{setup}}-{{split}}/{{group}}.rep{{rep}}/{{dense_model}}.tsv"
    threads: config["retrieval"]["threads"]
    resources:
        mem_mb=8000,
        runtime=120,
    shell:
        "python -m citeval.retrieve --embeddings {params.embeddings:q} "
        "--similarity {params.similarity:q} --pooling {params.pooling:q} "
        "--queries {input.samples:q}/queries.parquet --pools {input.samples:q}/pools.parquet "
        "--group {wildcards.group:q} --rep {wildcards.rep:q} --k {params.k:q} {params.index} "
        "--threads {threads} --output {output.run:q} --tag {wildcards.dense_model:q} "
        "2> {log:q}"
