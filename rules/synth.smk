# The embedded default corpus: synthetic S2ORC v2020 shards written into resources/.
if CONFIG.corpus.synthetic is not None:

    rule synth:
        output:
            [path for _, path in PLAN.shards.values()],
        params:
            settings=settings(stages.SYNTH),
            pattern=lambda wildcards: CONFIG.corpus.paths[0],  # {shard} is no wildcard
        conda:
            "../envs/core.yaml"
        log:
            LAYOUT.log("synth"),
        benchmark:
            LAYOUT.timing("synth")
        resources:
            mem_mb=2000,
            runtime=60,
        shell:
            "python -m citeval.synth {params.settings} --output-pattern {params.pattern:q} "
            "2> {log:q}"
