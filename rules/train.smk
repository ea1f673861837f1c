# Encoders trained on the corpus's own citation graph (docs/train.md): the graph without
# any evaluation query, its citation embedding, triplets per configured model (SciNCL's or
# SPECTER's sampler), and the fine-tuned encoder, which the plan registers as a model.


rule train_graph:
    input:
        corpus=rules.ingest_merge.output,
        splits=PLAN.held_out_sample_dirs,
        mdcr=PLAN.mdcr.held_out_files,
    output:
        nodes=f"{LAYOUT.train_graph}/nodes.parquet",
        edges=f"{LAYOUT.train_graph}/edges.parquet",
        report=f"{LAYOUT.train_graph}/report.json",
    log:
        LAYOUT.log("train_graph"),
    benchmark:
        LAYOUT.timing("train_graph")
    conda:
        "../envs/core.yaml"
    threads: JOBS.threads("train_graph")
    resources:
        **JOBS.resources("train_graph"),
    params:
        held_out=lambda wildcards, input: shell_words(
            [*(w for d in input.splits for w in ("--held-out-split", d))]
            + [*(w for f in input.mdcr for w in ("--held-out-mdcr", f))]
        ),
        settings=settings(stages.TRAIN_GRAPH),
        output_dir=output_folder("report"),
    shell:
        "python -m citeval.train graph --citations {input.corpus:q}/citations "
        "{params.held_out} --output-dir {params.output_dir:q} {params.settings} "
        "--threads {threads} 2> {log:q}"


rule train_graph_embedding:
    input:
        rules.train_graph.output.nodes,
        rules.train_graph.output.edges,
    output:
        embedding=f"{LAYOUT.train_graph}/embedding.npy",
        meta=f"{LAYOUT.train_graph}/embedding.json",
    log:
        LAYOUT.log("train_graph_embedding"),
    benchmark:
        LAYOUT.timing("train_graph_embedding")
    conda:
        "../envs/train.yaml"
    threads: JOBS.threads("train_graph_embedding")
    resources:
        **JOBS.resources("train_graph_embedding"),
    params:
        graph=output_folder("meta"),
        settings=settings(stages.TRAIN_EMBED_GRAPH),
    shell:
        "python -m citeval.train embed-graph --graph {params.graph:q} {params.settings} "
        "--threads {threads} 2> {log:q}"


rule train_triplets:
    input:
        graph=lambda wildcards: [
            rules.train_graph.output.nodes,
            rules.train_graph.output.edges,
            *(
                [rules.train_graph_embedding.output.embedding]
                if PLAN.training.models[wildcards.trained].sampler == "scincl"
                else []
            ),
        ],
        filtered=rules.prefilter.output.papers,
    output:
        triplets=LAYOUT.trained("{trained}", "triplets.parquet"),
        report=LAYOUT.trained("{trained}", "triplets_report.json"),
    log:
        LAYOUT.log("train_triplets", "{trained}"),
    benchmark:
        LAYOUT.timing("train_triplets", "{trained}")
    wildcard_constraints:
        trained=alternatives(PLAN.training.graph_trained),
    conda:
        "../envs/train.yaml"
    threads: JOBS.threads("train_triplets")
    resources:
        **JOBS.resources("train_triplets"),
    params:
        graph=LAYOUT.train_graph,
        sampler=lambda wildcards: PLAN.training.models[wildcards.trained].sampler,
        settings=settings(stages.TRAIN_TRIPLETS),
        output_dir=lambda wildcards, output: Path(output.report).parent,
    shell:
        "python -m citeval.train triplets --graph {params.graph:q} "
        "--filtered {input.filtered:q} --output-dir {params.output_dir:q} "
        "--sampler {params.sampler:q} {params.settings} --threads {threads} 2> {log:q}"


rule train_encoder:
    input:
        triplets=LAYOUT.trained("{trained}", "triplets.parquet"),
        corpus=rules.ingest_merge.output,
        anchors=lambda wildcards: PLAN.training.anchor_sample_dirs(wildcards.trained),
    output:
        directory(LAYOUT.trained("{trained}", "model")),
    log:
        LAYOUT.log("train_encoder", "{trained}"),
    benchmark:
        LAYOUT.timing("train_encoder", "{trained}")
    conda:
        "../envs/train.yaml"
    threads: JOBS.threads("train_encoder")
    resources:
        **JOBS.resources("train_encoder"),
    params:
        base=lambda wildcards: shlex.quote(
            json.dumps(
                PLAN.systems.model_specs[PLAN.training.models[wildcards.trained].base],
                sort_keys=True,
            )
        ),
        settings=settings(stages.TRAIN_FIT),
        sampler=lambda wildcards: shell_words(
            fit_sampler_arguments(
                PLAN.training.is_prefetcher(wildcards.trained), PLAN.training.anchor_papers()
            )
        ),
        output_dir=lambda wildcards, output: Path(output[0]).parent,
    shell:
        "python -m citeval.train fit --triplets {input.triplets:q} "
        "--papers {input.corpus:q}/papers --output-dir {params.output_dir:q} "
        "--name {wildcards.trained:q} --model-json {params.base} {params.settings} "
        "{params.sampler} "
        "--threads {threads} 2> {log:q}"
