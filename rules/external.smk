# Users' own systems (config systems, docs/contracts.md): their commands, where they have
# one, then the checks that import their vectors, runs and MDCR scores into the layout,
# where every later rule reads them as it reads a built-in system's.


rule external_store:
    input:
        corpus=rules.ingest_merge.output,
        samples=lambda wildcards: [
            LAYOUT.sample_dir(LOCAL_SETUP, split)
            for split in PLAN.local.context_vector_splits(wildcards.store)
        ],
    output:
        directory(LAYOUT.external("{store}")),
    log:
        LAYOUT.log("external_store", "{store}"),
    benchmark:
        LAYOUT.timing("external_store", "{store}")
    wildcard_constraints:
        store=alternatives(PLAN.systems.commands("embeddings")),
    conda:
        "../envs/external.yaml"
    resources:
        **JOBS.resources("external_store"),
    params:
        command=lambda wildcards, input, output: fill_command(
            PLAN.systems.commands("embeddings")[wildcards.store],
            papers=f"{input.corpus}/papers",
            contexts=[f"{folder}/{QUERY_PAPERS}" for folder in input.samples],
            store=PLAN.systems.store_source(wildcards.store),
            contexts_store=PLAN.systems.store_source(wildcards.store, contexts=True),
        ),
    shell:
        "{params.command} > {log:q} 2>&1"


rule import_embeddings:
    input:
        store=lambda wildcards: PLAN.systems.store_input(wildcards.store),
        # The papers the collections need (none when only MDCR is evaluated).
        ids=lambda wildcards: LAYOUT.embed_ids if PLAN.encoders.sample_dirs else [],
    output:
        vectors=LAYOUT.embedding_shard("{store}", 0),
        report=LAYOUT.import_report("{store}", "papers"),
    log:
        LAYOUT.log("import_embeddings", "{store}"),
    benchmark:
        LAYOUT.timing("import_embeddings", "{store}")
    conda:
        "../envs/core.yaml"
    resources:
        **JOBS.resources("import_embeddings"),
    params:
        source=lambda wildcards: PLAN.systems.store_source(wildcards.store),
        similarity=lambda wildcards: PLAN.systems.similarity(wildcards.store),
        ids=lambda wildcards, input: shell_words(["--ids", input.ids] if input.ids else []),
    shell:
        "python -m citeval.external embeddings --input {params.source:q} {params.ids} "
        "--similarity {params.similarity:q} --report {output.report:q} "
        "--output {output.vectors:q} 2> {log:q}"


rule import_context_embeddings:
    input:
        store=lambda wildcards: PLAN.systems.store_input(wildcards.store, contexts=True),
        samples=lambda wildcards: LAYOUT.sample_dir(LOCAL_SETUP, wildcards.split),
    output:
        vectors=LAYOUT.query_embedding_shard("{store}", "{split}"),
        report=LAYOUT.import_report("{store}", "contexts-{split}"),
    log:
        LAYOUT.log("import_context_embeddings", "{store}", "{split}"),
    benchmark:
        LAYOUT.timing("import_context_embeddings", "{store}", "{split}")
    conda:
        "../envs/core.yaml"
    resources:
        **JOBS.resources("import_context_embeddings"),
    params:
        source=lambda wildcards: PLAN.systems.store_source(wildcards.store, contexts=True),
        similarity=lambda wildcards: PLAN.systems.similarity(wildcards.store),
    shell:
        "python -m citeval.external embeddings --input {params.source:q} "
        "--ids {input.samples:q}/query_ids.parquet --what contexts "
        "--similarity {params.similarity:q} --report {output.report:q} "
        "--output {output.vectors:q} 2> {log:q}"


rule external_run:
    input:
        samples=split_sample_dir,
        corpus=rules.ingest_merge.output,
    output:
        LAYOUT.external_run("{imported_run}", "{setup}", "{split}", COLLECTION["collection"]),
    log:
        LAYOUT.log("external_run", *PER_COLLECTION, "{imported_run}"),
    benchmark:
        LAYOUT.timing("external_run", *PER_COLLECTION, "{imported_run}")
    wildcard_constraints:
        imported_run=alternatives(PLAN.systems.commands("runs")),
    conda:
        "../envs/external.yaml"
    resources:
        **JOBS.resources("external_run"),
    params:
        command=lambda wildcards, input, output: fill_command(
            PLAN.systems.commands("runs")[wildcards.imported_run],
            queries=f"{input.samples}/queries.parquet",
            pools=f"{input.samples}/pools.parquet",
            group=wildcards.group,
            rep=wildcards.rep,
            query_papers=query_papers(wildcards, input),
            papers=f"{input.corpus}/papers",
            k=PLAN.setups.retrieval_k(wildcards.setup),
            output=output[0],
        ),
    shell:
        "{params.command} > {log:q} 2>&1"


rule import_run:
    input:
        run=lambda wildcards: PLAN.systems.run_source(
            wildcards.imported_run, wildcards.setup, wildcards.split, collection_of(wildcards)
        ),
        samples=split_sample_dir,
    output:
        run=LAYOUT.run(**COLLECTION, model="{imported_run}"),
        report=LAYOUT.import_report("{imported_run}", *PER_COLLECTION),
    log:
        LAYOUT.log("import_run", *PER_COLLECTION, "{imported_run}"),
    benchmark:
        LAYOUT.timing("import_run", *PER_COLLECTION, "{imported_run}")
    conda:
        "../envs/core.yaml"
    resources:
        **JOBS.resources("import_run"),
    params:
        k=lambda wildcards: PLAN.setups.retrieval_k(wildcards.setup),
        missing=lambda wildcards: PLAN.systems.missing_queries(wildcards.imported_run),
    shell:
        "python -m citeval.external run --input {input.run:q} "
        "--queries {input.samples:q}/queries.parquet --pools {input.samples:q}/pools.parquet "
        "--group {wildcards.group:q} --rep {wildcards.rep:q} --k {params.k} "
        "--missing-queries {params.missing:q} --tag {wildcards.imported_run:q} "
        "--report {output.report:q} --output {output.run:q} 2> {log:q}"


rule external_mdcr:
    input:
        unpack(mdcr_files),
    output:
        LAYOUT.external_mdcr_scores("{imported_run}", "{mdcr_split}"),
    log:
        LAYOUT.log("external_mdcr", "{mdcr_split}", "{imported_run}"),
    benchmark:
        LAYOUT.timing("external_mdcr", "{mdcr_split}", "{imported_run}")
    wildcard_constraints:
        imported_run=alternatives(PLAN.systems.commands("runs", "mdcr_command")),
    conda:
        "../envs/external.yaml"
    resources:
        **JOBS.resources("external_mdcr"),
    params:
        command=lambda wildcards, input, output: fill_command(
            PLAN.systems.commands("runs", "mdcr_command")[wildcards.imported_run],
            benchmark=input.benchmark,
            data=input.data,
            output=output[0],
        ),
    shell:
        "{params.command} > {log:q} 2>&1"


rule mdcr_import_scores:
    input:
        unpack(mdcr_files),
        scores=lambda wildcards: PLAN.systems.mdcr_scores_source(
            wildcards.imported_run, wildcards.mdcr_split
        ),
    output:
        LAYOUT.mdcr_scores("{mdcr_split}", "{imported_run}"),
    log:
        LAYOUT.log("mdcr_score", "{mdcr_split}", "{imported_run}"),
    benchmark:
        LAYOUT.timing("mdcr_score", "{mdcr_split}", "{imported_run}")
    conda:
        "../envs/core.yaml"
    resources:
        **JOBS.resources(RUN.mdcr_job),
    shell:
        "python -m citeval.external mdcr-scores --input {input.scores:q} "
        "--benchmark {input.benchmark:q} --output {output:q} 2> {log:q}"


rule mdcr_score_embeddings:
    input:
        unpack(mdcr_files),
        shards=lambda wildcards: PLAN.encoders.shards(wildcards.store),
    output:
        LAYOUT.mdcr_scores("{mdcr_split}", "{store}"),
    log:
        LAYOUT.log("mdcr_score", "{mdcr_split}", "{store}"),
    benchmark:
        LAYOUT.timing("mdcr_score", "{mdcr_split}", "{store}")
    conda:
        "../envs/dense.yaml"
    resources:
        **JOBS.resources(EMBEDDINGS.mdcr_job),
    params:
        embeddings=lambda wildcards: LAYOUT.embeddings(wildcards.store),
        similarity=lambda wildcards: PLAN.systems.similarity(wildcards.store),
    shell:
        "python -m citeval.mdcr score --benchmark {input.benchmark:q} --data {input.data:q} "
        "--model {wildcards.store:q} --kind embeddings --similarity {params.similarity:q} "
        "--embeddings {params.embeddings:q} --output {output:q} 2> {log:q}"
