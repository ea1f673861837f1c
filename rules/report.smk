# The paper's tables (TSV + Markdown, p-values against report.baseline) and a provenance
# record, from every test metric file.


rule report:
    input:
        metrics=test_metric_files,
        corpus_inputs=[path for _, path in INPUT_SHARDS.values()],
    output:
        f"{RESULTS}/tables/provenance.json",
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
        results=lambda wildcards, output: Path(output[0]).parent.parent,
        output_dir=lambda wildcards, output: Path(output[0]).parent,
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
