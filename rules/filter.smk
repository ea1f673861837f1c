# Prefilter: year, title, abstract length and citation count (thresholds in config).


rule prefilter:
    input:
        LAYOUT.corpus,
    output:
        papers=LAYOUT.filtered.papers,
        report=LAYOUT.filtered.report,
    log:
        LAYOUT.log("prefilter"),
    benchmark:
        LAYOUT.timing("prefilter")
    conda:
        "../envs/core.yaml"
    threads: JOBS.threads("prefilter")
    resources:
        **JOBS.resources("prefilter"),
    params:
        settings=settings(stages.PREFILTER),
    shell:
        "python -m citeval.filter --papers {input:q}/papers --output {output.papers:q} "
        "--report {output.report:q} {params.settings} --threads {threads} 2> {log:q}"
