# Exports on demand (docs/export.md), outside the default target: a collection of the
# global or the local task, or MDCR's pairs of a split, as a BEIR folder with a manifest.
# snakemake results/<dataset>/export/beir/dataset-test/pool-800.rep0
# snakemake results/<dataset>/export/beir/mdcr-test
# The manifest's config hash is tables/provenance.json's: both hash the provenance config
# (a function: the config holds braces that are no wildcards).


rule export_beir:
    input:
        samples=split_sample_dir,
        corpus=rules.ingest_merge.output,
    output:
        directory(LAYOUT.export_beir(**COLLECTION)),
    log:
        LAYOUT.log("export_beir", *PER_COLLECTION),
    benchmark:
        LAYOUT.timing("export_beir", *PER_COLLECTION)
    conda:
        "../envs/core.yaml"
    threads: JOBS.threads("export_beir")
    resources:
        **JOBS.resources("export_beir"),
    params:
        collection=collection_of,
        queries=query_papers,
        settings=settings(stages.EXPORT_BEIR),
        config_json=lambda wildcards: shlex.quote(
            json.dumps(PLAN.outputs.provenance_config, sort_keys=True)
        ),
    shell:
        "python -m citeval.export beir --samples {input.samples:q} "
        "--collection {params.collection:q} --papers {input.corpus:q}/papers "
        "--query-papers {params.queries:q} {params.settings} "
        "--config-json {params.config_json} --threads {threads} --output {output:q} "
        "2> {log:q}"


rule export_beir_mdcr:
    input:
        unpack(mdcr_files),
    output:
        directory(LAYOUT.export_beir_mdcr("{mdcr_split}")),
    log:
        LAYOUT.log("export_beir", "mdcr-{mdcr_split}"),
    benchmark:
        LAYOUT.timing("export_beir", "mdcr-{mdcr_split}")
    conda:
        "../envs/core.yaml"
    resources:
        **JOBS.resources("export_beir_mdcr"),
    params:
        config_json=lambda wildcards: shlex.quote(
            json.dumps(PLAN.outputs.provenance_config, sort_keys=True)
        ),
    shell:
        "python -m citeval.export beir --mdcr-benchmark {input.benchmark:q} "
        "--mdcr-data {input.data:q} --config-json {params.config_json} --output {output:q} "
        "2> {log:q}"
