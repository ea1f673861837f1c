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
        index=(
            f"--index {FAISS['index']} --ivf-nlist {FAISS['ivf_nlist']} "
            f"--ivf-nprobe {FAISS['ivf_nprobe']} --hnsw-m {FAISS['hnsw_m']} "
            f"--hnsw-ef-search {FAISS['hnsw_ef_search']}"
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
        "python -m citeval.retrieve --embeddings {params.embeddings} "
        "--similarity {params.similarity} --pooling {params.pooling} "
        "--queries {input.samples}/queries.parquet --pools {input.samples}/pools.parquet "
        "--group {wildcards.group} --rep {wildcards.rep} --k {params.k} {params.index} "
        "--threads {threads} --output {output.run} --tag {wildcards.dense_model} 2> {log}"
