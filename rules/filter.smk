# Prefilter: year, title, abstract length and citation count (thresholds in config).


rule prefilter:
    input:
        f"{RESULTS}/corpus",
    output:
        papers=f"{RESULTS}/filtered/papers.parquet",
        report=f"{RESULTS}/filtered/filter_report.json",
    params:
        rules=prefilter_arguments,
        memory_limit=config["ingest"]["memory_limit"],
    conda:
        "../envs/core.yaml"
    log:
        f"{LOGS}/prefilter.log",
    benchmark:
        f"{BENCHMARKS}/prefilter.tsv"
    threads: 2
    resources:
        # --memory-limit bounds DuckDB (3/4 of it) and the process; headroom as for merge.
        mem_mb=max(3000, int(1.5 * memory_bytes(config["ingest"]["memory_limit"]) / 1e6)),
        runtime=60,
    shell:
        "python -m citeval.filter --papers {input:q}/papers --output {output.papers:q} "
        "--report {output.report:q} {params.rules} --memory-limit {params.memory_limit:q} "
        "--threads {threads} 2> {log:q}"
