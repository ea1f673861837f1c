# MDCR (docs/mdcr.md): the benchmark built from the field-level test and validation
# splits (or imported from published files), every model's score of every query-candidate
# pair, the published evaluator per field and per candidate type, and Tables 3 and 4.


rule mdcr_build:
    input:
        samples=lambda wildcards: LAYOUT.sample_dir("field", split_of_file(wildcards)),
        runs=lambda wildcards: PLAN.mdcr.build_runs(split_of_file(wildcards)),
        corpus=rules.ingest_merge.output,
        filtered=rules.prefilter.output.papers,
        types_from=lambda wildcards: PLAN.mdcr.types_from(split_of_file(wildcards)),
    output:
        **{role: LAYOUT.mdcr_file("{mdcr_file}", role) for role in MDCR_FILES},
    log:
        LAYOUT.log("mdcr_build", "{mdcr_file}"),
    benchmark:
        LAYOUT.timing("mdcr_build", "{mdcr_file}")
    # The published file names say val where every other file says valid.
    wildcard_constraints:
        mdcr_file="test|val",
    conda:
        "../envs/core.yaml"
    threads: JOBS.threads("mdcr_build")
    resources:
        **JOBS.resources("mdcr_build"),
    params:
        settings=settings(stages.MDCR_BUILD, models=PLAN.mdcr.build_models),
        types_from=lambda wildcards, input: (
            f"--model-types-from {shlex.quote(input.types_from[0])}" if input.types_from else ""
        ),
        split=split_of_file,
        runs=lambda wildcards: LAYOUT.runs_dir("field", split_of_file(wildcards)),
        output_dir=output_folder("benchmark"),
    shell:
        "python -m citeval.mdcr build --split {params.split:q} --samples {input.samples:q} "
        "--runs {params.runs:q} --corpus {input.corpus:q} --filtered {input.filtered:q} "
        "{params.settings} {params.types_from} --threads {threads} "
        "--output-dir {params.output_dir:q} 2> {log:q}"


rule mdcr_score_bm25:
    input:
        unpack(mdcr_files),
        parameters=mdcr_bm25_parameters,
    output:
        LAYOUT.mdcr_scores("{mdcr_split}", BM25_SYSTEM),
    log:
        LAYOUT.log("mdcr_score", "{mdcr_split}", BM25_SYSTEM),
    benchmark:
        LAYOUT.timing("mdcr_score", "{mdcr_split}", BM25_SYSTEM)
    conda:
        "../envs/bm25.yaml"
    threads: JOBS.threads(BM25.mdcr_job)
    resources:
        **JOBS.resources(BM25.mdcr_job),
    params:
        name=BM25_SYSTEM,
        settings=settings(stages.MDCR_SCORE_BM25),
        tuned=params_json,
    shell:
        "python -m citeval.mdcr score --benchmark {input.benchmark:q} --data {input.data:q} "
        "--model {params.name:q} --kind bm25 {params.settings} {params.tuned} "
        "--threads {threads} --output {output:q} 2> {log:q}"


rule mdcr_score_dense:
    input:
        unpack(mdcr_files),
        # A built benchmark reuses the model's embedding store (its papers' texts are the
        # corpus texts the store was encoded from); an imported one is encoded from its data.
        shards=lambda wildcards: [] if PLAN.mdcr.imported else embedding_shards(wildcards),
        model=trained_model_folder,
    output:
        LAYOUT.mdcr_scores("{mdcr_split}", "{dense_model}"),
    log:
        LAYOUT.log("mdcr_score", "{mdcr_split}", "{dense_model}"),
    benchmark:
        LAYOUT.timing("mdcr_score", "{mdcr_split}", "{dense_model}")
    wildcard_constraints:
        dense_model=ENCODERS,
    conda:
        "../envs/dense.yaml"
    threads: JOBS.threads(ENCODER.mdcr_job)
    resources:
        **JOBS.resources(ENCODER.mdcr_job),
    params:
        spec=model_spec_json,
        embeddings=lambda wildcards, input: (
            f"--embeddings {shlex.quote(LAYOUT.embeddings(wildcards.dense_model))}"
            if input.shards
            else ""
        ),
        settings=settings(stages.MDCR_SCORE_DENSE),
    shell:
        "python -m citeval.mdcr score --benchmark {input.benchmark:q} --data {input.data:q} "
        "--model {wildcards.dense_model:q} --kind dense --model-json {params.spec} "
        "{params.embeddings} {params.settings} --threads {threads} "
        "--output {output:q} 2> {log:q}"


rule mdcr_score_fusion:
    input:
        unpack(mdcr_files),
        scores=lambda wildcards: [
            LAYOUT.mdcr_scores(wildcards.mdcr_split, name)
            for name in PLAN.systems.members(wildcards.fusion)
        ],
    output:
        LAYOUT.mdcr_scores("{mdcr_split}", "{fusion}"),
    log:
        LAYOUT.log("mdcr_score", "{mdcr_split}", "{fusion}"),
    benchmark:
        LAYOUT.timing("mdcr_score", "{mdcr_split}", "{fusion}")
    conda:
        "../envs/core.yaml"
    resources:
        **JOBS.resources(FUSION.mdcr_job),
    params:
        settings=lambda wildcards: settings(
            stages.MDCR_SCORE_FUSION, k=PLAN.systems.fusions[wildcards.fusion].k
        ),
    shell:
        "python -m citeval.mdcr score --benchmark {input.benchmark:q} --data {input.data:q} "
        "--model {wildcards.fusion:q} --kind rrf --inputs {input.scores:q} "
        "{params.settings} "
        "--output {output:q} 2> {log:q}"


rule mdcr_evaluate:
    input:
        unpack(mdcr_files),
        scores=LAYOUT.mdcr_scores("{mdcr_split}", "{model}"),
    output:
        means=LAYOUT.mdcr_eval("{mdcr_split}", "{model}"),
        per_query=LAYOUT.mdcr_eval("{mdcr_split}", "{model}", per_query=True),
    log:
        LAYOUT.log("mdcr_evaluate", "{mdcr_split}", "{model}"),
    benchmark:
        LAYOUT.timing("mdcr_evaluate", "{mdcr_split}", "{model}")
    conda:
        "../envs/core.yaml"
    resources:
        **JOBS.resources("mdcr_evaluate"),
    shell:
        "python -m citeval.mdcr evaluate --benchmark {input.benchmark:q} "
        "--scores {input.scores:q} --output {output.means:q} "
        "--per-query-output {output.per_query:q} > {log:q} 2>&1"


rule mdcr_tables:
    input:
        evaluations=[LAYOUT.mdcr_eval("test", model) for model in PLAN.mdcr.models],
        per_query=[LAYOUT.mdcr_eval("test", model, True) for model in PLAN.mdcr.models],
        trained=list(PLAN.outputs.trained_models.values()),
    output:
        report_item(LAYOUT.table("table3_mdcr"), "table3", "Tables"),
        LAYOUT.table("table3_mdcr", "md"),
        report_item(LAYOUT.table("table4_mdcr_types"), "table4", "Tables"),
        LAYOUT.table("table4_mdcr_types", "md"),
    log:
        LAYOUT.log("mdcr_tables"),
    benchmark:
        LAYOUT.timing("mdcr_tables")
    conda:
        "../envs/core.yaml"
    resources:
        **JOBS.resources("mdcr_tables"),
    params:
        evaluations=lambda wildcards, input: shell_words(
            f"{model}={path}" for model, path in zip(PLAN.mdcr.models, input.evaluations)
        ),
        per_query=lambda wildcards, input: shell_words(
            f"{model}={path}" for model, path in zip(PLAN.mdcr.models, input.per_query)
        ),
        settings=settings(stages.MDCR_TABLES),
        trained=trained_arguments(PLAN.outputs.trained_models),
        output_dir=output_folder(),
    shell:
        "python -m citeval.mdcr tables --evaluations {params.evaluations} "
        "--per-query {params.per_query} {params.settings} {params.trained} "
        "--output-dir {params.output_dir:q} 2> {log:q}"
