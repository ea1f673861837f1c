# The paper's tables (TSV + Markdown, p-values against tables.baseline) and a provenance
# record, from every test metric file; figures of Tables 1, 2 and 4. Outputs marked with
# report() make up `snakemake --report report.html`, with captions from report/.


rule tables:
    input:
        metrics=PLAN.outputs.test_metric_files(),
        collections=PLAN.setups.sample_dirs(["test"]),
        trained=list(PLAN.outputs.trained_models.values()),
        corpus_inputs=[path for _, path in PLAN.shards.values()],
    output:
        provenance=LAYOUT.table("provenance", "json"),
        tables=[
            report_item(path, caption, "Tables") for caption, path in PLAN.outputs.tables.items()
        ],
    log:
        LAYOUT.log("tables"),
    benchmark:
        LAYOUT.timing("tables")
    conda:
        "../envs/core.yaml"
    resources:
        **JOBS.resources("tables"),
    params:
        setups=shell_words(PLAN.setups.names),
        models=shell_words(PLAN.systems.label(model) for model in PLAN.systems.runs),
        rerank_models=shell_words(
            ["--rerank-models", *PLAN.systems.rerank_table_rows] if RERANKER else []
        ),
        settings=settings(stages.TABLES),
        trained=trained_arguments(PLAN.outputs.trained_models),
        # Functions: the config holds braces (corpus.paths' {shard}) that are no wildcards.
        config_json=lambda wildcards: shlex.quote(
            json.dumps(PLAN.outputs.provenance_config, sort_keys=True)
        ),
        results=output_folder("provenance", levels=2),
        output_dir=output_folder("provenance"),
    shell:
        "python -m citeval.tables --results {params.results:q} --setups {params.setups} "
        "--models {params.models} {params.rerank_models} {params.settings} {params.trained} "
        "--config-json {params.config_json} --inputs {input.corpus_inputs:q} "
        "--output-dir {params.output_dir:q} 2> {log:q}"


rule plots:
    input:
        [table for _, table in PLAN.outputs.plot_sources.values()],
    output:
        [report_item(LAYOUT.plot(name), name, "Figures") for name in PLAN.outputs.plot_sources],
    log:
        LAYOUT.log("plots"),
    benchmark:
        LAYOUT.timing("plots")
    conda:
        "../envs/core.yaml"
    resources:
        **JOBS.resources("plots"),
    params:
        tables=shell_words(
            word
            for flag, table in PLAN.outputs.plot_sources.values()
            for word in (f"--{flag}", table)
        ),
        output_dir=output_folder(),
    shell:
        "python -m citeval.plots {params.tables} --output-dir {params.output_dir:q} 2> {log:q}"


rule learning:
    input:
        list(PLAN.outputs.trained_models.values()),
    output:
        table=report_item(LAYOUT.table("learning"), "learning", "Tables"),
        markdown=LAYOUT.table("learning", "md"),
        plot=report_item(LAYOUT.plot("learning"), "learning_curves", "Figures"),
    log:
        LAYOUT.log("learning"),
    benchmark:
        LAYOUT.timing("learning")
    conda:
        "../envs/core.yaml"
    resources:
        **JOBS.resources("learning"),
    params:
        trained=trained_arguments(PLAN.outputs.trained_models),
        tables_dir=output_folder("table"),
    shell:
        "python -m citeval.learning {params.trained} --tables-dir {params.tables_dir:q} "
        "--plot {output.plot:q} 2> {log:q}"
