# Per-query metrics of every run (trec_eval semantics; queries missing from a run score 0).


rule metrics:
    input:
        run=f"{RESULTS}/runs/{{setup}}-{{split}}/{{group}}.rep{{rep}}/{{model}}.trec",
        samples=split_sample_dir,
    output:
        f"{RESULTS}/metrics/{{setup}}-{{split}}/{{group}}.rep{{rep}}/{{model}}.tsv",
    params:
        qrels=lambda wildcards, input: f"{input.samples}/qrels/{wildcards.group}.rep{wildcards.rep}.qrels",
        cutoffs=shell_words(*METRIC_CUTOFFS),
    conda:
        "../envs/core.yaml"
    log:
        f"{LOGS}/metrics/{{setup}}-{{split}}/{{group}}.rep{{rep}}/{{model}}.log",
    benchmark:
        f"{BENCHMARKS}/metrics/{{setup}}-{{split}}/{{group}}.rep{{rep}}/{{model}}.tsv"
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "python -m citeval.metrics --run {input.run:q} --qrels {params.qrels:q} "
        "--cutoffs {params.cutoffs} --missing-as-zero --output {output:q} 2> {log:q}"
