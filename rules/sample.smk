# Query and pool sampling: one job per setup writes the test and validation splits, every
# collection the config plans (citeval.plan), so the downstream jobs are known before it
# runs.


rule sample:
    input:
        filtered=rules.prefilter.output.papers,
        corpus=rules.ingest_merge.output,
        exclude=CONFIG.sampling.exclude_query_ids or [],
    output:
        test=directory(LAYOUT.sample_dir("{setup}", "test")),
        valid=directory(LAYOUT.sample_dir("{setup}", "valid")),
        report=LAYOUT.sample_report("{setup}"),
    log:
        LAYOUT.log("sample", "{setup}"),
    benchmark:
        LAYOUT.timing("sample", "{setup}")
    wildcard_constraints:
        setup="dataset|field",
    conda:
        "../envs/core.yaml"
    threads: JOBS.threads("sample")
    resources:
        **JOBS.resources("sample"),
    params:
        settings=lambda wildcards: settings(
            stages.SAMPLE_DATASET if wildcards.setup == "dataset" else stages.SAMPLE_FIELD
        ),
        output_dir=lambda wildcards, output: Path(output.report).parent,
    shell:
        "python -m citeval.sample {wildcards.setup:q} --filtered {input.filtered:q} "
        "--corpus {input.corpus:q} --output-dir {params.output_dir:q} {params.settings} "
        "--threads {threads} 2> {log:q}"


rule embed_ids:
    input:
        PLAN.encoders.sample_dirs,
    output:
        LAYOUT.embed_ids,
    log:
        LAYOUT.log("embed_ids"),
    benchmark:
        LAYOUT.timing("embed_ids")
    conda:
        "../envs/core.yaml"
    resources:
        **JOBS.resources("embed_ids"),
    shell:
        "python -m citeval.sample embed-ids --samples {input:q} --output {output:q} 2> {log:q}"
