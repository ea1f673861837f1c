# Hybrid rows: reciprocal rank fusion of existing runs (for example BM25 + a dense model).


rule fuse:
    input:
        lambda wildcards: [
            LAYOUT.run(wildcards.setup, wildcards.split, collection_of(wildcards), name)
            for name in PLAN.systems.members(wildcards.fusion)
        ],
    output:
        LAYOUT.run(**COLLECTION, model="{fusion}"),
    log:
        LAYOUT.log("fuse", *PER_COLLECTION, "{fusion}"),
    benchmark:
        LAYOUT.timing("fuse", *PER_COLLECTION, "{fusion}")
    conda:
        "../envs/core.yaml"
    resources:
        **JOBS.resources("fuse"),
    params:
        settings=lambda wildcards: settings(
            stages.FUSE,
            k=PLAN.systems.fusions[wildcards.fusion].k,
            depth=PLAN.setups.retrieval_k(wildcards.setup),
        ),
    shell:
        "python -m citeval.fusion --runs {input:q} {params.settings} "
        "--output {output:q} --tag {wildcards.fusion:q} 2> {log:q}"
