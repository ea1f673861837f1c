# BM25 with Lucene (Anserini through pyserini): the prefiltered corpus analyzed once, one
# index per pool cut from it (the pool's impact matrix; Lucene's own index too when the
# Lucene searcher is chosen), k1/b tuned on the validation split, top-k runs for every
# test collection. The tuning job builds its validation indexes itself and deletes them
# when done. Anserini logs to stdout, so both streams of these jobs go to the rule's log.


rule bm25_analyze:
    input:
        corpus=rules.ingest_merge.output,
        filtered=rules.prefilter.output.papers,
    output:
        directory(LAYOUT.bm25_analyzed),
    log:
        LAYOUT.log("bm25_analyze"),
    benchmark:
        LAYOUT.timing("bm25_analyze")
    conda:
        "../envs/bm25.yaml"
    threads: JOBS.threads("bm25_analyze")
    resources:
        **JOBS.resources("bm25_analyze"),
    params:
        settings=settings(stages.BM25_ANALYZE),
    shell:
        "python -m citeval.bm25 analyze --papers {input.corpus:q}/papers "
        "--ids {input.filtered:q} --output {output:q} {params.settings} --threads {threads} "
        "> {log:q} 2>&1"


rule bm25_index:
    input:
        analyzed=rules.bm25_analyze.output,
        corpus=rules.ingest_merge.output,
        samples=split_sample_dir,
    output:
        directory(LAYOUT.bm25_index(**COLLECTION)),
    log:
        LAYOUT.log("bm25_index", *PER_COLLECTION),
    benchmark:
        LAYOUT.timing("bm25_index", *PER_COLLECTION)
    group:
        BM25.chain
    conda:
        "../envs/bm25.yaml"
    # One thread (citeval.jobs): these jobs are many and run side by side. Any thread count
    # gives the same index, as Lucene writes it with one (citeval.lucene.WRITER_THREADS;
    # tests/test_bm25.py builds with 1 and 3).
    resources:
        **JOBS.resources("bm25_index"),
    params:
        lucene=lambda wildcards, input: (
            shell_words(["--lucene-papers", f"{input.corpus}/papers"])
            if CONFIG.bm25.searcher == "lucene"
            else ""
        ),
    shell:
        "python -m citeval.bm25 index --analyzed {input.analyzed:q} {params.lucene} "
        "--pools {input.samples:q}/pools.parquet --group {wildcards.group:q} "
        "--rep {wildcards.rep:q} --index-dir {output:q} --threads {threads} > {log:q} 2>&1"


rule bm25_tune:
    input:
        analyzed=rules.bm25_analyze.output,
        corpus=rules.ingest_merge.output,
        samples=lambda wildcards: LAYOUT.sample_dir(wildcards.setup, "valid"),
    output:
        LAYOUT.bm25_tuning("{setup}"),
    log:
        LAYOUT.log("bm25_tune", "{setup}"),
    benchmark:
        LAYOUT.timing("bm25_tune", "{setup}")
    conda:
        "../envs/bm25.yaml"
    threads: JOBS.threads("bm25_tune")
    resources:
        **JOBS.resources("bm25_tune"),
    params:
        collections=bm25_tuning_collections,
        settings=settings(stages.BM25_TUNE),
    shell:
        "python -m citeval.bm25 tune --papers {input.corpus:q}/papers --analyzed {input.analyzed:q} "
        "--sample-dir {input.samples:q} {params.collections} {params.settings} "
        "--threads {threads} --output {output:q} > {log:q} 2>&1"


rule bm25_search:
    input:
        index=LAYOUT.bm25_index(**COLLECTION),
        corpus=rules.ingest_merge.output,
        samples=split_sample_dir,
        parameters=bm25_parameters,
    output:
        LAYOUT.run(**COLLECTION, model="bm25"),
    log:
        LAYOUT.log("bm25_search", *PER_COLLECTION),
    benchmark:
        LAYOUT.timing("bm25_search", *PER_COLLECTION)
    group:
        BM25.chain
    conda:
        "../envs/bm25.yaml"
    threads: JOBS.threads("bm25_search")
    resources:
        **JOBS.resources("bm25_search"),
    params:
        settings=lambda wildcards: settings(
            stages.BM25_SEARCH, k=PLAN.setups.retrieval_k(wildcards.setup)
        ),
        tuned=params_json,
        queries=query_papers,
    shell:
        "python -m citeval.bm25 search --index-dir {input.index:q} "
        "--papers {params.queries:q} --queries {input.samples:q}/queries.parquet "
        "--group {wildcards.group:q} {params.settings} {params.tuned} --threads {threads} "
        "--output {output:q} --tag bm25 > {log:q} 2>&1"
