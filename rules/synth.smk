# The embedded default corpus: synthetic S2ORC v2020 shards written into resources/, and
# their full text (pdf_parses shards) when the local task reads it.
if CONFIG.corpus.synthetic is not None:

    rule synth:
        output:
            [path for _, path in PLAN.shards.values()],
            PLAN.local.inputs.values(),
        log:
            LAYOUT.log("synth"),
        benchmark:
            LAYOUT.timing("synth")
        conda:
            "../envs/core.yaml"
        resources:
            **JOBS.resources("synth"),
        params:
            settings=settings(stages.SYNTH),
            pattern=lambda wildcards: CONFIG.corpus.paths[0],  # {shard} is no wildcard
            fulltext=lambda wildcards: shell_words(
                ["--fulltext-pattern", CONFIG.local.input.paths[0]] if PLAN.local.inputs else []
            ),
        shell:
            "python -m citeval.synth {params.settings} --output-pattern {params.pattern:q} "
            "{params.fulltext} 2> {log:q}"
