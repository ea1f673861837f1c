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


# The training split of the learned second stages (the reranker, ltr): queries of the
# years before the query year, never a test or validation query.
if PLAN.training_split:

    rule sample_train:
        input:
            filtered=rules.prefilter.output.papers,
            corpus=rules.ingest_merge.output,
            exclude=CONFIG.sampling.exclude_query_ids or [],
        output:
            split=directory(LAYOUT.sample_dir("dataset", "train")),
            report=LAYOUT.sample_report("train"),
        log:
            LAYOUT.log("sample_train"),
        benchmark:
            LAYOUT.timing("sample_train")
        conda:
            "../envs/core.yaml"
        threads: JOBS.threads("sample_train")
        resources:
            **JOBS.resources("sample_train"),
        params:
            settings=settings(stages.SAMPLE_TRAIN),
            output_dir=lambda wildcards, output: Path(output.report).parent,
        shell:
            "python -m citeval.sample train --filtered {input.filtered:q} --corpus {input.corpus:q} "
            "--output-dir {params.output_dir:q} {params.settings} --threads {threads} 2> {log:q}"
