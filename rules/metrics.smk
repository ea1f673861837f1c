# Per-query metrics of every run (trec_eval semantics; queries missing from a run score 0).


rule metrics:
    input:
        run=LAYOUT.run(**COLLECTION, model="{model}"),
        samples=split_sample_dir,
    output:
        LAYOUT.metrics(**COLLECTION, model="{model}"),
    log:
        LAYOUT.log("metrics", *PER_COLLECTION, "{model}"),
    benchmark:
        LAYOUT.timing("metrics", *PER_COLLECTION, "{model}")
    group:
        lambda wildcards: PLAN.systems.chain_of_metrics(wildcards.model)
    conda:
        "../envs/core.yaml"
    resources:
        **JOBS.resources("metrics"),
    params:
        qrels=lambda wildcards: LAYOUT.qrels(
            wildcards.setup, wildcards.split, collection_of(wildcards)
        ),
        settings=lambda wildcards: settings(
            stages.METRICS, cutoffs=PLAN.metric_cutoffs(wildcards.setup)
        ),
    shell:
        "python -m citeval.metrics --run {input.run:q} --qrels {params.qrels:q} "
        "{params.settings} --missing-as-zero --output {output:q} 2> {log:q}"
