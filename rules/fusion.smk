# Hybrid rows: reciprocal rank fusion of existing runs (for example BM25 + a dense model).


rule fuse:
    input:
        lambda wildcards: [
            f"{RESULTS}/runs/{wildcards.setup}-{wildcards.split}/"
            f"{wildcards.group}.rep{wildcards.rep}/{name}.trec"
            for name in FUSIONS[wildcards.fusion]["runs"]
        ],
    output:
        f"{RESULTS}/runs/{{setup}}-{{split}}/{{group}}.rep{{rep}}/{{fusion}}.trec",
    params:
        k=lambda wildcards: FUSIONS[wildcards.fusion]["k"],
        depth=config["retrieval"]["k"],
    conda:
        "../envs/core.yaml"
    log:
        f"{LOGS}/fuse/{{setup}}-{{split}}/{{group}}.rep{{rep}}/{{fusion}}.log",
    benchmark:
        f"{BENCHMARKS}/fuse/{{setup}}-{{split}}/{{group}}.rep{{rep}}/{{fusion}}.tsv"
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "python -m citeval.fusion --runs {input:q} --k {params.k:q} --depth {params.depth:q} "
        "--output {output:q} --tag {wildcards.fusion:q} 2> {log:q}"
