# BM25 with Lucene (Anserini through pyserini): the prefiltered corpus analyzed once, one
# index per pool cut from it (the pool's impact matrix; Lucene's own index too when the
# Lucene searcher is chosen), k1/b tuned on the validation split, top-k runs for every
# test collection. The tuning job builds its validation indexes itself and deletes them
# when done. Anserini logs to stdout, so both streams of these jobs go to the rule's log.

LUCENE_INDEX = BM25["searcher"] == "lucene"


rule bm25_analyze:
    input:
        corpus=rules.ingest_merge.output,
        filtered=rules.prefilter.output.papers,
    output:
        directory(f"{RESULTS}/indexes/bm25-analyzed"),
    params:
        memory_limit=config["ingest"]["memory_limit"],
    conda:
        "../envs/bm25.yaml"
    log:
        f"{LOGS}/bm25_analyze.log",
    benchmark:
        f"{BENCHMARKS}/bm25_analyze.tsv"
    threads: config["retrieval"]["threads"]
    resources:
        # DuckDB sorts the papers' texts within the limit and spills beyond it; the JVM and
        # the analyzer's batches come on top (about 1 GB on 2.25M papers).
        mem_mb=int(memory_bytes(config["ingest"]["memory_limit"]) / 1e6) + 2000,
        runtime=480,
    shell:
        "python -m citeval.bm25 analyze --papers {input.corpus:q}/papers "
        "--ids {input.filtered:q} --output {output:q} --threads {threads} "
        "--duckdb-memory {params.memory_limit:q} > {log:q} 2>&1"


rule bm25_index:
    input:
        analyzed=rules.bm25_analyze.output,
        corpus=rules.ingest_merge.output,
        samples=split_sample_dir,
    output:
        directory(f"{RESULTS}/indexes/bm25/{{setup}}-{{split}}/{{group}}.rep{{rep}}"),
    conda:
        "../envs/bm25.yaml"
    log:
        f"{LOGS}/bm25_index/{{setup}}-{{split}}/{{group}}.rep{{rep}}.log",
    benchmark:
        f"{BENCHMARKS}/bm25_index/{{setup}}-{{split}}/{{group}}.rep{{rep}}.tsv"
    params:
        lucene=lambda wildcards, input: (
            shell_words("--lucene-papers", f"{input.corpus}/papers") if LUCENE_INDEX else ""
        ),
    # Any thread count gives the same index: Lucene writes it with one thread
    # (citeval.lucene.WRITER_THREADS); threads speed up the corpus scan, so a profile may
    # raise them (tests/test_bm25.py builds with 1 and 3).
    threads: 1
    resources:
        mem_mb=4000,
        runtime=120,
    shell:
        "python -m citeval.bm25 index --analyzed {input.analyzed:q} {params.lucene} "
        "--pools {input.samples:q}/pools.parquet --group {wildcards.group:q} "
        "--rep {wildcards.rep:q} --index-dir {output:q} --threads {threads} > {log:q} 2>&1"


rule bm25_tune:
    input:
        analyzed=rules.bm25_analyze.output,
        corpus=rules.ingest_merge.output,
        samples=lambda wildcards: sample_dir(wildcards.setup, "valid"),
    output:
        f"{RESULTS}/tuning/bm25-{{setup}}.json",
    params:
        collections=lambda wildcards: " ".join(
            f"--collection {shlex.quote(collection.name)}"
            for collection in bm25_tuning_collections(wildcards)
        ),
        k1_grid=shell_words(*BM25["tune"]["k1_grid"]),
        b_grid=shell_words(*BM25["tune"]["b_grid"]),
        metric=BM25["tune"]["metric"],
        k=config["retrieval"]["k"],
        searcher=BM25["searcher"],
    conda:
        "../envs/bm25.yaml"
    log:
        f"{LOGS}/bm25_tune/{{setup}}.log",
    benchmark:
        f"{BENCHMARKS}/bm25_tune/{{setup}}.tsv"
    threads: config["retrieval"]["threads"]
    resources:
        mem_mb=4000,
        runtime=240,
    shell:
        "python -m citeval.bm25 tune --papers {input.corpus:q}/papers --analyzed {input.analyzed:q} "
        "--sample-dir {input.samples:q} {params.collections} "
        "--k1-grid {params.k1_grid} --b-grid {params.b_grid} --metric {params.metric:q} "
        "--k {params.k:q} --searcher {params.searcher:q} --threads {threads} "
        "--output {output:q} > {log:q} 2>&1"


rule bm25_search:
    input:
        index=f"{RESULTS}/indexes/bm25/{{setup}}-{{split}}/{{group}}.rep{{rep}}",
        corpus=rules.ingest_merge.output,
        samples=split_sample_dir,
        parameters=bm25_parameters,
    output:
        f"{RESULTS}/runs/{{setup}}-{{split}}/{{group}}.rep{{rep}}/bm25.trec",
    params:
        bm25=lambda wildcards, input: (
            shell_words("--params-json", input.parameters)
            if input.parameters
            else shell_words("--k1", BM25["k1"], "--b", BM25["b"])
        ),
        k=config["retrieval"]["k"],
        searcher=BM25["searcher"],
    conda:
        "../envs/bm25.yaml"
    log:
        f"{LOGS}/bm25_search/{{setup}}-{{split}}/{{group}}.rep{{rep}}.log",
    benchmark:
        f"{BENCHMARKS}/bm25_search/{{setup}}-{{split}}/{{group}}.rep{{rep}}.tsv"
    threads: config["retrieval"]["threads"]
    resources:
        mem_mb=4000,
        runtime=120,
    shell:
        "python -m citeval.bm25 search --index-dir {input.index:q} "
        "--papers {input.corpus:q}/papers --queries {input.samples:q}/queries.parquet "
        "--group {wildcards.group:q} --k {params.k:q} {params.bm25} "
        "--searcher {params.searcher:q} --threads {threads} --output {output:q} --tag bm25 "
        "> {log:q} 2>&1"
