# Reranking (docs/rerank.md): training queries from the years before the query year, the
# training first stage's runs on their pool, a cross-encoder trained on those runs' top
# results, every configured first stage's test runs reranked at each K, MDCR scored by the
# reranker, and the speed/accuracy trade-off.


rule sample_train:
    input:
        filtered=rules.prefilter.output.papers,
        corpus=rules.ingest_merge.output,
        exclude=SAMPLING["exclude_query_ids"] or [],
    output:
        split=directory(f"{RESULTS}/samples/dataset-train"),
        report=f"{RESULTS}/samples/train-report.json",
    params:
        arguments=train_sample_arguments,
        output_dir=lambda wildcards, output: Path(output.report).parent,
        memory_limit=config["ingest"]["memory_limit"],
    conda:
        "../envs/core.yaml"
    log:
        f"{LOGS}/sample_train.log",
    benchmark:
        f"{BENCHMARKS}/sample_train.tsv"
    threads: 2
    resources:
        mem_mb=4000,
        runtime=60,
    shell:
        "python -m citeval.sample train --filtered {input.filtered:q} --corpus {input.corpus:q} "
        "--output-dir {params.output_dir:q} {params.arguments} "
        "--memory-limit {params.memory_limit:q} --threads {threads} 2> {log:q}"


rule rerank_train:
    input:
        run=f"{RESULTS}/runs/dataset-train/{RERANK_TRAIN_COLLECTION}/{RERANK_TRAIN['first_stage']}.trec",
        samples=rules.sample_train.output.split,
        corpus=rules.ingest_merge.output,
    output:
        directory(f"{RERANK_DIR}/model"),
    params:
        arguments=rerank_train_arguments,
        qrels=lambda wildcards, input: f"{input.samples}/qrels/{RERANK_TRAIN_COLLECTION}.qrels",
        output_dir=lambda wildcards, output: Path(output[0]).parent,
    conda:
        "../envs/dense.yaml"
    log:
        f"{LOGS}/rerank_train.log",
    benchmark:
        f"{BENCHMARKS}/rerank_train.tsv"
    threads: 2
    resources:
        mem_mb=8000,
        runtime=720,
    shell:
        "python -m citeval.rerank train --run {input.run:q} --qrels {params.qrels:q} "
        "--papers {input.corpus:q}/papers --output-dir {params.output_dir:q} "
        "{params.arguments} --threads {threads} 2> {log:q}"


rule rerank:
    input:
        model=rules.rerank_train.output,
        run=f"{RESULTS}/runs/{{setup}}-{{split}}/{{group}}.rep{{rep}}/{{first_stage}}.trec",
        corpus=rules.ingest_merge.output,
    output:
        runs=[
            f"{RESULTS}/runs/{{setup}}-{{split}}/{{group}}.rep{{rep}}/{{first_stage}}.{RERANKER}@{k}.trec"
            for k in RERANK_KS
        ],
        timing=f"{RERANK_DIR}/timing/{{setup}}-{{split}}/{{group}}.rep{{rep}}/{{first_stage}}.json",
    params:
        arguments=RERANK_SCORING_ARGUMENTS,
        ks=shell_words(*RERANK_KS),
        tag_prefix=f"{{first_stage}}>{RERANKER}@",
    conda:
        "../envs/dense.yaml"
    log:
        f"{LOGS}/rerank/{{setup}}-{{split}}/{{group}}.rep{{rep}}/{{first_stage}}.log",
    benchmark:
        f"{BENCHMARKS}/rerank/{{setup}}-{{split}}/{{group}}.rep{{rep}}/{{first_stage}}.tsv"
    threads: config["retrieval"]["threads"]
    resources:
        mem_mb=8000,
        runtime=240,
    shell:
        "python -m citeval.rerank rerank --model {input.model:q} --papers {input.corpus:q}/papers "
        "--run {input.run:q} --ks {params.ks} --outputs {output.runs:q} "
        "--timing {output.timing:q} {params.arguments} --tag-prefix {params.tag_prefix:q} "
        "--threads {threads} 2> {log:q}"


rule mdcr_score_rerank:
    input:
        unpack(mdcr_benchmark_files),
        model=rules.rerank_train.output,
    output:
        f"{MDCR_DIR}/scores/{{mdcr_split}}/{RERANKER}.json",
    params:
        name=RERANKER,
        arguments=RERANK_SCORING_ARGUMENTS,
    conda:
        "../envs/dense.yaml"
    log:
        f"{LOGS}/mdcr_score/{{mdcr_split}}/{RERANKER}.log",
    benchmark:
        f"{BENCHMARKS}/mdcr_score/{{mdcr_split}}/{RERANKER}.tsv"
    threads: 2
    resources:
        mem_mb=8000,
        runtime=240,
    shell:
        "python -m citeval.mdcr score --benchmark {input.benchmark:q} --data {input.data:q} "
        "--model {params.name:q} --kind cross-encoder --model-dir {input.model:q} "
        "{params.arguments} --threads {threads} --output {output:q} 2> {log:q}"


rule rerank_tradeoff:
    input:
        unpack(tradeoff_inputs),
    output:
        f"{RESULTS}/tables/tradeoff.tsv",
        f"{RESULTS}/tables/tradeoff.md",
        report_item(f"{RESULTS}/tables/tradeoff.png", "tradeoff", "Figures"),
    params:
        arguments=tradeoff_arguments,
        title=f"Reranking trade-off, dataset-level {RERANK_TRADEOFF_COLLECTION}",
        output_dir=lambda wildcards, output: Path(output[0]).parent,
    conda:
        "../envs/core.yaml"
    log:
        f"{LOGS}/rerank_tradeoff.log",
    benchmark:
        f"{BENCHMARKS}/rerank_tradeoff.tsv"
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "python -m citeval.rerank tradeoff {params.arguments} --title {params.title:q} "
        "--output-dir {params.output_dir:q} 2> {log:q}"
