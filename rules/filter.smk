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
    threads: JOBS.threads("prefilter")
    resources:
        **JOBS.resources("prefilter"),
    shell:
        "python -m citeval.filter --papers {input:q}/papers --output {output.papers:q} "
        "--report {output.report:q} {params.settings} --threads {threads} 2> {log:q}"
