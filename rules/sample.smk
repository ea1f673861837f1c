# Query and pool sampling: one job per setup writes the test and validation splits, every
# collection the config plans (rules/common.smk: collections), so the downstream jobs are
# known before it runs.


rule sample:
    input:
        filtered=rules.prefilter.output.papers,
        corpus=rules.ingest_merge.output,
        exclude=SAMPLING["exclude_query_ids"] or [],
    output:
        test=directory(f"{RESULTS}/samples/{{setup}}-test"),
        valid=directory(f"{RESULTS}/samples/{{setup}}-valid"),
        report=f"{RESULTS}/samples/{{setup}}-report.json",
    params:
        arguments=sample_arguments,
        output_dir=lambda wildcards, output: Path(output.report).parent,
        memory_limit=config["ingest"]["memory_limit"],
    conda:
        "../envs/core.yaml"
    log:
        f"{LOGS}/sample/{{setup}}.log",
    benchmark:
        f"{BENCHMARKS}/sample/{{setup}}.tsv"
    threads: 2
    resources:
        mem_mb=4000,
        runtime=120,
    shell:
        "python -m citeval.sample {wildcards.setup:q} --filtered {input.filtered:q} "
        "--corpus {input.corpus:q} --output-dir {params.output_dir:q} {params.arguments} "
        "--memory-limit {params.memory_limit:q} --threads {threads} 2> {log:q}"


rule embed_ids:
    input:
        embedding_sample_dirs(),
    output:
        f"{RESULTS}/samples/embed_ids.parquet",
    conda:
        "../envs/core.yaml"
    log:
        f"{LOGS}/embed_ids.log",
    benchmark:
        f"{BENCHMARKS}/embed_ids.tsv"
    resources:
        mem_mb=2000,
        runtime=30,
    shell:
        "python -m citeval.sample embed-ids --samples {input:q} --output {output:q} 2> {log:q}"
