# The embedded default corpus: synthetic S2ORC v2020 shards written into resources/.
if config["corpus"].get("synthetic"):

    rule synth:
        output:
            [path for _, path in INPUT_SHARDS.values()],
        params:
            num_papers=config["corpus"]["synthetic"]["num_papers"],
            num_shards=config["corpus"]["synthetic"]["num_shards"],
            first_year=config["corpus"]["synthetic"]["first_year"],
            last_year=config["corpus"]["synthetic"]["last_year"],
            pattern=lambda wildcards: config["corpus"]["paths"][0],
            seed=config["seed"],
        conda:
            "../envs/core.yaml"
        log:
            f"{LOGS}/synth.log",
        benchmark:
            f"{BENCHMARKS}/synth.tsv"
        resources:
            mem_mb=2000,
            runtime=60,
        shell:
            "python -m citeval.synth --num-papers {params.num_papers:q} "
            "--num-shards {params.num_shards:q} --seed {params.seed:q} "
            "--first-year {params.first_year:q} --last-year {params.last_year:q} "
            "--output-pattern {params.pattern:q} 2> {log:q}"
