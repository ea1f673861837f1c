# Query and pool sampling. A checkpoint: the collections it writes (one per group and
# repetition) decide which retrieval jobs exist downstream.

SAMPLING = config["sampling"]


def sample_arguments(wildcards):
    common = [
        f"--seed {config['seed']}",
        f"--query-year {SAMPLING['query_year']}",
        f"--min-query-references {SAMPLING['min_query_references']}",
        f"--on-too-small {SAMPLING['on_too_small']}",
    ]
    if SAMPLING["exclude_query_ids"]:
        common.append(f"--exclude-query-ids '{SAMPLING['exclude_query_ids']}'")
    if wildcards.setup == "dataset":
        level = SAMPLING["dataset_level"]
        specific = [
            f"--num-queries {level['num_queries']}",
            f"--num-valid-queries {SAMPLING['validation']['num_queries']}",
            "--pool-sizes " + " ".join(str(size) for size in level["pool_sizes"]),
        ]
    else:
        level = SAMPLING["field_level"]
        specific = [
            f"--num-queries {level['queries_per_field']}",
            f"--num-valid-queries {SAMPLING['validation']['queries_per_field']}",
            f"--pool-size {level['pool_size']}",
            "--fields " + " ".join(f"'{name}'" for name in level["fields"]),
        ]
    return " ".join([*common, *specific, f"--repetitions {level['repetitions']}"])


checkpoint sample:
    input:
        filtered=rules.prefilter.output.papers,
        corpus=rules.ingest_merge.output,
        exclude=SAMPLING["exclude_query_ids"] or [],
    output:
        test=directory(f"{RESULTS}/samples/{{setup}}-test"),
        valid=directory(f"{RESULTS}/samples/{{setup}}-valid"),
        report=f"{RESULTS}/samples/{{setup}}-report.json",
    params:
        arguments=sample_arguments,
        output_dir=f"{RESULTS}/samples",
        memory_limit=config["ingest"]["memory_limit"],
    log:
        f"{LOGS}/sample/{{setup}}.log",
    benchmark:
        f"{BENCHMARKS}/sample/{{setup}}.tsv"
    threads: 2
    resources:
        mem_mb=4000,
        runtime=120,
    shell:
        "python -m citeval.sample {wildcards.setup} --filtered {input.filtered} "
        "--corpus {input.corpus} --output-dir {params.output_dir} {params.arguments} "
        "--memory-limit {params.memory_limit} --threads {threads} 2> {log}"


rule embed_ids:
    input:
        [sample_dir(setup, "test") for setup in SETUPS],
    output:
        f"{RESULTS}/samples/embed_ids.parquet",
    log:
        f"{LOGS}/embed_ids.log",
    resources:
        mem_mb=2000,
        runtime=30,
    shell:
        "python -m citeval.sample embed-ids --samples {input} --output {output} 2> {log}"
