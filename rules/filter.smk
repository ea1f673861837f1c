# Prefilter: year, title, abstract length and citation count (thresholds in config).


rule prefilter:
    input:
        LAYOUT.corpus,
    output:
        papers=LAYOUT.filtered.papers,
        report=LAYOUT.filtered.report,
    params:
        settings=settings(stages.PREFILTER),
    conda:
        "../envs/core.yaml"
    log:
        LAYOUT.log("prefilter"),
    benchmark:
        LAYOUT.timing("prefilter")
    threads: 2
    resources:
        # The memory limit bounds DuckDB (3/4 of it) and the process; headroom as for merge.
        mem_mb=max(3000, int(1.5 * MEMORY_MB)),
        runtime=60,
    shell:
        "python -m citeval.filter --papers {input:q}/papers --output {output.papers:q} "
        "--report {output.report:q} {params.settings} --threads {threads} 2> {log:q}"
