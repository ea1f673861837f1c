# MDCR (docs/mdcr.md): the benchmark built from the field-level test and validation
# splits (or imported from published files), every model's score of every query-candidate
# pair, the published evaluator per field and per candidate type, and Tables 3 and 4.


rule mdcr_build:
    input:
        samples=lambda wildcards: sample_dir("field", MDCR_SAMPLE_SPLIT[wildcards.mdcr_split]),
        runs=mdcr_build_runs,
        corpus=rules.ingest_merge.output,
        filtered=rules.prefilter.output.papers,
        types_from=mdcr_types_from,
    output:
        benchmark=f"{MDCR_DIR}/mdcr_{{mdcr_split}}.json",
        data=f"{MDCR_DIR}/mdcr_{{mdcr_split}}_data.jsonl",
        jaccard=f"{MDCR_DIR}/mdcr_{{mdcr_split}}_jaccard.tsv",
        report=f"{MDCR_DIR}/mdcr_{{mdcr_split}}_report.json",
    params:
        arguments=mdcr_build_arguments,
        types_from=lambda wildcards, input: (
            shell_words("--model-types-from", input.types_from) if input.types_from else ""
        ),
        split=lambda wildcards: MDCR_SAMPLE_SPLIT[wildcards.mdcr_split],
        runs=lambda wildcards: f"{RESULTS}/runs/field-{MDCR_SAMPLE_SPLIT[wildcards.mdcr_split]}",
        output_dir=lambda wildcards, output: Path(output.benchmark).parent,
    conda:
        "../envs/core.yaml"
    log:
        f"{LOGS}/mdcr_build/{{mdcr_split}}.log",
    benchmark:
        f"{BENCHMARKS}/mdcr_build/{{mdcr_split}}.tsv"
    threads: 2
    resources:
        mem_mb=4000,
        runtime=60,
    shell:
        "python -m citeval.mdcr build --split {params.split:q} --samples {input.samples:q} "
        "--runs {params.runs:q} --corpus {input.corpus:q} --filtered {input.filtered:q} "
        "{params.arguments} {params.types_from} --threads {threads} "
        "--output-dir {params.output_dir:q} 2> {log:q}"


rule mdcr_score_bm25:
    input:
        unpack(mdcr_benchmark_files),
        parameters=mdcr_bm25_parameters,
    output:
        f"{MDCR_DIR}/scores/{{mdcr_split}}/bm25.json",
    params:
        bm25=lambda wildcards, input: (
            shell_words("--params-json", input.parameters)
            if input.parameters
            else shell_words("--k1", BM25["k1"], "--b", BM25["b"])
        ),
        searcher=BM25["searcher"],
    conda:
        "../envs/bm25.yaml"
    log:
        f"{LOGS}/mdcr_score/{{mdcr_split}}/bm25.log",
    benchmark:
        f"{BENCHMARKS}/mdcr_score/{{mdcr_split}}/bm25.tsv"
    threads: config["retrieval"]["threads"]
    resources:
        mem_mb=4000,
        runtime=120,
    shell:
        "python -m citeval.mdcr score --benchmark {input.benchmark:q} --data {input.data:q} "
        "--model bm25 --kind bm25 {params.bm25} --searcher {params.searcher:q} "
        "--threads {threads} --output {output:q} 2> {log:q}"


rule mdcr_score_dense:
    input:
        unpack(mdcr_benchmark_files),
        shards=mdcr_embedding_shards,
        model=trained_model_folder,
    output:
        f"{MDCR_DIR}/scores/{{mdcr_split}}/{{dense_model}}.json",
    params:
        spec=model_spec_json,
        embeddings=lambda wildcards, input: (
            shell_words("--embeddings", f"{RESULTS}/embeddings/{wildcards.dense_model}")
            if input.shards
            else ""
        ),
        device=ENCODE["device"],
    conda:
        "../envs/dense.yaml"
    log:
        f"{LOGS}/mdcr_score/{{mdcr_split}}/{{dense_model}}.log",
    benchmark:
        f"{BENCHMARKS}/mdcr_score/{{mdcr_split}}/{{dense_model}}.tsv"
    threads: 2
    resources:
        mem_mb=8000,
        runtime=240,
    shell:
        "python -m citeval.mdcr score --benchmark {input.benchmark:q} --data {input.data:q} "
        "--model {wildcards.dense_model:q} --kind dense --model-json {params.spec} "
        "{params.embeddings} --device {params.device:q} --threads {threads} "
        "--output {output:q} 2> {log:q}"


rule mdcr_score_fusion:
    input:
        unpack(mdcr_benchmark_files),
        scores=mdcr_fusion_inputs,
    output:
        f"{MDCR_DIR}/scores/{{mdcr_split}}/{{fusion}}.json",
    params:
        k=lambda wildcards: FUSIONS[wildcards.fusion]["k"],
    conda:
        "../envs/core.yaml"
    log:
        f"{LOGS}/mdcr_score/{{mdcr_split}}/{{fusion}}.log",
    benchmark:
        f"{BENCHMARKS}/mdcr_score/{{mdcr_split}}/{{fusion}}.tsv"
    resources:
        mem_mb=2000,
        runtime=30,
    shell:
        "python -m citeval.mdcr score --benchmark {input.benchmark:q} --data {input.data:q} "
        "--model {wildcards.fusion:q} --kind rrf --inputs {input.scores:q} --k {params.k:q} "
        "--output {output:q} 2> {log:q}"


rule mdcr_evaluate:
    input:
        unpack(mdcr_benchmark_files),
        scores=f"{MDCR_DIR}/scores/{{mdcr_split}}/{{model}}.json",
    output:
        means=f"{MDCR_DIR}/eval/{{mdcr_split}}/{{model}}.tsv",
        per_query=f"{MDCR_DIR}/eval/{{mdcr_split}}/{{model}}.per_query.tsv",
    conda:
        "../envs/core.yaml"
    log:
        f"{LOGS}/mdcr_evaluate/{{mdcr_split}}/{{model}}.log",
    benchmark:
        f"{BENCHMARKS}/mdcr_evaluate/{{mdcr_split}}/{{model}}.tsv"
    resources:
        mem_mb=2000,
        runtime=30,
    shell:
        "python -m citeval.mdcr evaluate --benchmark {input.benchmark:q} "
        "--scores {input.scores:q} --output {output.means:q} "
        "--per-query-output {output.per_query:q} > {log:q} 2>&1"


rule mdcr_tables:
    input:
        evaluations=expand(f"{MDCR_DIR}/eval/test/{{model}}.tsv", model=MDCR_MODELS),
        per_query=expand(f"{MDCR_DIR}/eval/test/{{model}}.per_query.tsv", model=MDCR_MODELS),
    output:
        report_item(f"{RESULTS}/tables/table3_mdcr.tsv", "table3", "Tables"),
        f"{RESULTS}/tables/table3_mdcr.md",
        report_item(f"{RESULTS}/tables/table4_mdcr_types.tsv", "table4", "Tables"),
        f"{RESULTS}/tables/table4_mdcr_types.md",
    params:
        evaluations=lambda wildcards, input: shell_words(
            *(f"{model}={path}" for model, path in zip(MDCR_MODELS, input.evaluations))
        ),
        per_query=lambda wildcards, input: shell_words(
            *(f"{model}={path}" for model, path in zip(MDCR_MODELS, input.per_query))
        ),
        significance=SIGNIFICANCE_ARGUMENTS,
        output_dir=lambda wildcards, output: Path(output[0]).parent,
    conda:
        "../envs/core.yaml"
    log:
        f"{LOGS}/mdcr_tables.log",
    benchmark:
        f"{BENCHMARKS}/mdcr_tables.tsv"
    resources:
        mem_mb=1000,
        runtime=60,
    shell:
        "python -m citeval.mdcr tables --evaluations {params.evaluations} "
        "--per-query {params.per_query} {params.significance} "
        "--output-dir {params.output_dir:q} 2> {log:q}"
