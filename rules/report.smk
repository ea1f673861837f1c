# The paper's tables (TSV + Markdown, p-values against report.baseline) and a provenance
# record, from every test metric file; figures of Tables 1, 2 and 4. Outputs marked with
# report() make up `snakemake --report report.html`, with captions from report/.


rule report:
    input:
        metrics=test_metric_files,
        corpus_inputs=[path for _, path in INPUT_SHARDS.values()],
    output:
        provenance=f"{RESULTS}/tables/provenance.json",
        tables=[report_item(path, caption, "Tables") for caption, path in REPORT_TABLES.items()],
    params:
        setups=shell_words(*SETUPS),
        models=shell_words(*(MODEL_LABELS.get(model, model) for model in MODELS)),
        rerank_models=shell_words(
            *(
                ["--rerank-models", *RERANK["first_stages"], *MODEL_LABELS.values()]
                if RERANKER
                else []
            )
        ),
        fields=shell_words(*config["sampling"]["field_level"]["fields"]),
        cutoff=config["metrics"]["cutoffs"][0],
        config_json=lambda wildcards: shlex.quote(json.dumps(config, sort_keys=True)),
        significance=SIGNIFICANCE_ARGUMENTS,
        results=lambda wildcards, output: Path(output.provenance).parent.parent,
        output_dir=lambda wildcards, output: Path(output.provenance).parent,
    conda:
        "../envs/core.yaml"
    log:
        f"{LOGS}/report.log",
    benchmark:
        f"{BENCHMARKS}/report.tsv"
    resources:
        mem_mb=1000,
        runtime=30,
    shell:
        "python -m citeval.report --results {params.results:q} --setups {params.setups} "
        "--models {params.models} {params.rerank_models} --fields {params.fields} "
        "--cutoff {params.cutoff:q} "
        "--config-json {params.config_json} --inputs {input.corpus_inputs:q} {params.significance} "
        "--output-dir {params.output_dir:q} 2> {log:q}"


rule plots:
    input:
        [table for _, table in PLOT_SOURCES.values() if table],
    output:
        [report_item(path, name, "Figures") for name, path in PLOT_FILES.items()],
    params:
        tables=shell_words(
            *(word for flag, table in PLOT_SOURCES.values() if table for word in (f"--{flag}", table))
        ),
        output_dir=lambda wildcards, output: Path(output[0]).parent,
    conda:
        "../envs/core.yaml"
    log:
        f"{LOGS}/plots.log",
    benchmark:
        f"{BENCHMARKS}/plots.tsv"
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "python -m citeval.plots {params.tables} --output-dir {params.output_dir:q} 2> {log:q}"
