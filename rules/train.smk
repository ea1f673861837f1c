# Encoders trained on the corpus's own citation graph (docs/train.md): the graph without
# any evaluation query, its citation embedding, triplets per configured model (SciNCL's or
# SPECTER's sampler), and the fine-tuned encoder, which common.smk registers as a model.


rule train_graph:
    input:
        corpus=rules.ingest_merge.output,
        splits=held_out_sample_dirs(),
        mdcr=held_out_mdcr_files(),
    output:
        nodes=f"{TRAIN_DIR}/graph/nodes.parquet",
        edges=f"{TRAIN_DIR}/graph/edges.parquet",
        report=f"{TRAIN_DIR}/graph/report.json",
    params:
        held_out=lambda wildcards, input: " ".join(
            [f"--held-out-split {shlex.quote(d)}" for d in input.splits]
            + [f"--held-out-mdcr {shlex.quote(f)}" for f in input.mdcr]
        ),
        output_dir=lambda wildcards, output: Path(output.report).parent,
        memory_limit=config["ingest"]["memory_limit"],
    conda:
        "../envs/core.yaml"
    log:
        f"{LOGS}/train_graph.log",
    benchmark:
        f"{BENCHMARKS}/train_graph.tsv"
    threads: 2
    resources:
        mem_mb=4000,
        runtime=60,
    shell:
        "python -m citeval.train graph --citations {input.corpus:q}/citations "
        "{params.held_out} --output-dir {params.output_dir:q} "
        "--memory-limit {params.memory_limit:q} --threads {threads} 2> {log:q}"


rule train_graph_embedding:
    input:
        rules.train_graph.output.nodes,
        rules.train_graph.output.edges,
    output:
        embedding=f"{TRAIN_DIR}/graph/embedding.npy",
        meta=f"{TRAIN_DIR}/graph/embedding.json",
    params:
        graph=lambda wildcards, output: Path(output.meta).parent,
        arguments=shell_words(
            "--dim", TRAIN["graph_embedding"]["dim"],
            "--iterations", TRAIN["graph_embedding"]["iterations"],
            "--alpha", TRAIN["graph_embedding"]["alpha"],
            "--seed", config["seed"],
        ),
    conda:
        "../envs/train.yaml"
    log:
        f"{LOGS}/train_graph_embedding.log",
    benchmark:
        f"{BENCHMARKS}/train_graph_embedding.tsv"
    resources:
        mem_mb=8000,
        runtime=120,
    shell:
        "python -m citeval.train embed-graph --graph {params.graph:q} {params.arguments} "
        "2> {log:q}"


rule train_triplets:
    input:
        graph=triplet_graph_inputs,
        filtered=rules.prefilter.output.papers,
    output:
        triplets=f"{TRAIN_DIR}/{{trained}}/triplets.parquet",
        report=f"{TRAIN_DIR}/{{trained}}/triplets_report.json",
    params:
        graph=f"{TRAIN_DIR}/graph",
        arguments=triplet_arguments,
        output_dir=lambda wildcards, output: Path(output.report).parent,
    conda:
        "../envs/train.yaml"
    log:
        f"{LOGS}/train_triplets/{{trained}}.log",
    benchmark:
        f"{BENCHMARKS}/train_triplets/{{trained}}.tsv"
    resources:
        mem_mb=8000,
        runtime=60,
    shell:
        "python -m citeval.train triplets --graph {params.graph:q} "
        "--filtered {input.filtered:q} --output-dir {params.output_dir:q} {params.arguments} "
        "2> {log:q}"


rule train_encoder:
    input:
        triplets=rules.train_triplets.output.triplets,
        corpus=rules.ingest_merge.output,
    output:
        directory(f"{TRAIN_DIR}/{{trained}}/model"),
    params:
        arguments=fit_arguments,
        output_dir=lambda wildcards, output: Path(output[0]).parent,
    conda:
        "../envs/train.yaml"
    log:
        f"{LOGS}/train_encoder/{{trained}}.log",
    benchmark:
        f"{BENCHMARKS}/train_encoder/{{trained}}.tsv"
    threads: 2
    resources:
        mem_mb=8000,
        runtime=720,
    shell:
        "python -m citeval.train fit --triplets {input.triplets:q} "
        "--papers {input.corpus:q}/papers --output-dir {params.output_dir:q} "
        "{params.arguments} --threads {threads} 2> {log:q}"
