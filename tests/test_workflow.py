"""The Snakemake workflow itself: schema validation, lint, and the SLURM profile."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from citeval.jobs import NEEDS

REPO = Path(__file__).resolve().parents[1]


def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    command = [
        sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"),
        "--directory", str(workdir), *args,
    ]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run(command, capture_output=True, text=True, env=env, check=False)


@pytest.fixture
def workdir(tmp_path):
    (tmp_path / "config").symlink_to(REPO / "config")
    (tmp_path / "profiles").symlink_to(REPO / "profiles")
    return tmp_path


@pytest.mark.parametrize(
    ("section", "key", "value"),
    [
        ("prefilter", "min_abstract_chars", -1),
        ("sampling", "on_too_small", "shrug"),
        ("corpus", "format", "csv"),
        ("retrieval", "k", "many"),
    ],
)
def test_invalid_config_value_fails_before_any_job_naming_the_key(workdir, section, key, value):
    (workdir / "bad.yaml").write_text(yaml.safe_dump({section: {key: value}}))
    result = snakemake(workdir, "-n", "--cores", "2", "--configfile", str(workdir / "bad.yaml"))
    assert result.returncode != 0
    output = result.stdout + result.stderr
    # jsonschema's message names the bad value, and the full key path it sits at.
    assert f"ValidationError: {value!r} " in output
    assert f"On instance['{section}']['{key}']:" in output
    assert "rule synth" not in result.stdout


def test_snakemake_lint_is_clean(workdir):
    result = snakemake(workdir, "--lint")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Congratulations" in result.stdout + result.stderr


def test_every_rule_that_declares_threads_passes_them_to_its_command():
    """A rule's threads (citeval.jobs; --set-threads may change them) reach its command."""
    header = r"(?:use rule (\w+) as (\w+) with|rule (\w+)|checkpoint (\w+)):"
    rules = {}  # name -> (file, its block, the rule it derives from)
    for path in sorted((REPO / "rules").glob("*.smk")):
        starts = r"(?:use rule \w+ as \w+ with|rule \w+|checkpoint \w+):"
        parts = re.split(rf"^(?=[ \t]*{starts})", path.read_text(), flags=re.M)
        for block in parts[1:]:
            base, derived, *plain = re.search(header, block).groups()
            rules[derived or next(n for n in plain if n)] = (path.name, block, base)
    checked = []
    for name, (file, block, base) in rules.items():
        # A `use rule` runs its base rule's command with its own threads.
        command = block
        while base:
            _, command, base = rules[base]
        if re.search(r"^\s+threads:", block, re.M):
            assert "--threads {threads}" in command, f"{file}: rule {name}"
            checked.append(name)
    assert set(checked) == {rule for rule, need in NEEDS.items() if need.threaded}


def test_commands_quote_paths_and_names_that_need_it(workdir):
    """Every word of a rule's command is shell-quoted: quotes and spaces in a field name, a
    corpus path or the exclusion list reach the stage as one argument each."""
    fields = ["Computer Science", "Women's Studies"]
    pattern = "resources/synthetic/o'brien corpus/s2orc-{shard}.jsonl.gz"
    exclude = "it's excluded; $(false).txt"
    (workdir / exclude).write_text("")
    config = {
        "corpus": {"paths": [pattern]},
        "sampling": {"exclude_query_ids": exclude, "field_level": {"fields": fields}},
    }
    (workdir / "quoting.yaml").write_text(yaml.safe_dump(config))
    targets = [f"results/demo/samples/{setup}-report.json" for setup in ("dataset", "field")]
    # Targets before --configfile, which takes every word after it.
    result = snakemake(
        workdir, *targets, "-n", "-p", "--cores", "2", "--configfile", str(workdir / "quoting.yaml")
    )
    assert result.returncode == 0, result.stderr
    commands = {}
    for line in result.stdout.splitlines():
        if line.startswith("Shell command: "):
            words = shlex.split(line.removeprefix("Shell command: "))
            stage = words[words.index("-m") + 1]
            if stage == "citeval.sample":
                stage += "." + words[words.index("-m") + 2]
            commands.setdefault(stage, []).append(words)

    def after(words, option, count=1):
        start = words.index(option) + 1
        return words[start : start + count]

    (synth,) = commands["citeval.synth"]
    assert after(synth, "--output-pattern") == [pattern]
    parse_inputs = sorted(after(words, "--input")[0] for words in commands["citeval.ingest"][:2])
    assert parse_inputs == [pattern.format(shard=f"{i:05d}") for i in range(2)]
    (field,) = commands["citeval.sample.field"]
    assert after(field, "--fields", 2) == fields
    (dataset,) = commands["citeval.sample.dataset"]
    for words in (field, dataset):
        assert after(words, "--exclude-query-ids") == [exclude]


class _UniqueKeyLoader(yaml.SafeLoader):
    """A YAML loader that refuses a mapping with a repeated key, which plain YAML loading
    resolves silently by keeping the last value."""


def _unique_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False):
    keys = [loader.construct_object(key, deep=deep) for key, _ in node.value]
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:
        raise yaml.constructor.ConstructorError(
            None, None, f"repeated keys {repeated}", node.start_mark
        )
    return loader.construct_mapping(node, deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)


@pytest.mark.parametrize(
    "path",
    sorted(
        p.relative_to(REPO) for p in [*REPO.glob("config/*.yaml"), *REPO.glob("profiles/*/*.yaml")]
    ),
)
def test_config_files_repeat_no_key(path):
    yaml.load((REPO / path).read_text(), Loader=_UniqueKeyLoader)


MDCR_RULES = (
    "mdcr_build", "mdcr_score_bm25", "mdcr_score_dense", "mdcr_score_fusion",
    "mdcr_evaluate", "mdcr_tables",
)  # fmt: skip
TRAIN_RULES = ("train_graph", "train_graph_embedding", "train_triplets", "train_encoder", "encode")
RERANK_RULES = ("sample_train", "rerank_train", "rerank", "mdcr_score_rerank", "rerank_tradeoff")
LTR_RULES = ("ltr_train", "ltr_rank", "mdcr_score_ltr", "ltr_importance")


def _jobs(stdout: str) -> dict[str, int]:
    """Snakemake's dry-run job table: rule -> job count."""
    counts = {}
    for line in stdout.splitlines():
        words = line.split()
        if len(words) == 2 and words[1].isdigit():
            counts[words[0]] = int(words[1])
    return counts


def test_fresh_dry_run_plans_every_job_of_the_default_run(workdir):
    """Before anything has run, the dry run lists the whole default run (the collections
    follow from the config): MDCR's builds of the test and validation splits (the
    validation build taking the test split's model types), one score and one evaluation
    per model and split, the reranker, and the two encoders trained from minilm."""
    result = snakemake(workdir, "-n", "-p", "--cores", "2")
    assert result.returncode == 0, result.stderr
    jobs = _jobs(result.stdout)
    # 2 repetitions × 2 pool sizes + 4 fields (test), 2 + 4 (validation), 1 training pool,
    # and the local task's test, validation and training splits.
    rules = ("sample", "bm25_analyze", "bm25_index", "bm25_search")
    assert {rule: jobs[rule] for rule in rules} == {
        "sample": 2,
        "bm25_analyze": 1,
        "bm25_index": 16,
        "bm25_search": 16,
    }
    # 4 encoders × 12 collections (8 test, 4 field validation for MDCR's validation split,
    # which user systems do not shape), the LSA store × 8, the ltr system's features on the
    # training pool (4 encoders, LSA), and on the local test, validation and training
    # splits (4 encoders and LSA: 15; the local task's ltr row reads them all); fusions: 12
    # collections, the training pool and the 3 local splits; metrics: 8 test collections ×
    # 11 rows, and 2 local splits × 9 rows; BM25Okapi's runs of the 8 test collections, the
    # training pool and the 3 local splits are imported.
    assert (jobs["dense_retrieve"], jobs["fuse"], jobs["metrics"]) == (76, 16, 106)
    assert (jobs["external_run"], jobs["import_run"], jobs["import_embeddings"]) == (12, 12, 1)
    assert (jobs["ltr_train"], jobs["ltr_train_local"], jobs["ltr_rank"]) == (1, 1, 10)
    assert jobs["mdcr_score_ltr"] == 2
    # No encoder has prompts: each paper is embedded once, for queries and candidates.
    assert "encode_query_papers" not in jobs and "--role" not in result.stdout
    assert {rule: jobs.get(rule) for rule in MDCR_RULES} == {
        "mdcr_build": 2,
        "mdcr_score_bm25": 2,
        "mdcr_score_dense": 8,  # minilm and the three encoders trained from it
        "mdcr_score_fusion": 2,
        "mdcr_evaluate": 20,  # bm25, 4 encoders, 2 user systems, rrf, ltr, the reranker, per split
        "mdcr_tables": 1,
    }
    commands = [
        shlex.split(line.removeprefix("Shell command: "))
        for line in result.stdout.splitlines()
        if line.startswith("Shell command: ")
    ]
    builds = [words for words in commands if words[2:4] == ["citeval.mdcr", "build"]]
    by_split = {words[words.index("--split") + 1]: words for words in builds}
    assert "--model-types-from" not in by_split["test"]
    # The analysis sorts every prefiltered paper's text in DuckDB: within ingest's budget.
    [analyze] = [words for words in commands if words[2:4] == ["citeval.bm25", "analyze"]]
    assert analyze[analyze.index("--memory-limit") + 1] == "2GB"
    types_from = by_split["valid"][by_split["valid"].index("--model-types-from") + 1]
    assert types_from.endswith("mdcr/mdcr_test_report.json")

    # The reranker: one training split and model, every test collection's BM25 run
    # reranked (4 dataset-level + 4 field-level), both MDCR splits scored, one trade-off;
    # reranked runs are stored as bm25.ce@K and shown as bm25>ce@K.
    assert {rule: jobs.get(rule) for rule in RERANK_RULES} == {
        "sample_train": 1,
        "rerank_train": 1,
        "rerank": 8,
        "mdcr_score_rerank": 2,
        "rerank_tradeoff": 1,
    }
    # Encoders trained on the citation graph: one graph and embedding, triplets and a model
    # per sampler, then each trained model is embedded (one shard) like minilm; the local
    # prefetcher's triplets come from the local training split (local_triplets).
    assert {rule: jobs.get(rule) for rule in TRAIN_RULES} == {
        "train_graph": 1,
        "train_graph_embedding": 1,
        "train_triplets": 2,
        "train_encoder": 3,
        "encode": 4,
    }
    (graph,) = [line for line in result.stdout.splitlines() if "citeval.train graph" in line]
    words = shlex.split(graph.removeprefix("Shell command: "))
    held_out = [
        words[i + 1].rsplit("/", 1)[-1] for i, w in enumerate(words) if w == "--held-out-split"
    ]
    assert sorted(held_out) == [
        "dataset-test", "dataset-valid", "field-test", "field-valid", "local-test", "local-valid"
    ]  # fmt: skip
    metrics = [line for line in result.stdout.splitlines() if "citeval.metrics" in line]
    local = [line for line in metrics if "local-" in line]
    metrics = [line for line in metrics if "local-" not in line]
    assert sum("bm25.ce@10.trec" in line for line in metrics) == 8
    assert sum("bm25.ce@20.trec" in line for line in metrics) == 8
    assert all("--cutoffs 30 10 20" in line for line in metrics)
    assert len(local) == 18  # 2 splits x 9 rows (the two users' systems and ltr among them)
    assert all("--cutoffs 1 5 10 20 50 100 200 500 1000" in line for line in local)
    (report,) = [line for line in result.stdout.splitlines() if "citeval.tables" in line]
    words = shlex.split(report.removeprefix("Shell command: "))
    assert words[words.index("--rerank-models") + 1 : words.index("--rerank-models") + 5] == [
        "bm25", "ltr", "bm25>ce@10", "bm25>ce@20",
    ]  # fmt: skip
    assert "bm25>ce@20" in words[words.index("--models") + 1 : words.index("--rerank-models")]
    disabled = workdir / "no-mdcr.yaml"
    disabled.write_text(
        yaml.safe_dump(
            {
                "mdcr": {"enabled": False},
                "rerank": {"enabled": False},
                "encode": {"models": ["minilm"]},
                "local": {"enabled": False},
                "ltr": [],
            }
        )
    )
    result = snakemake(workdir, "-n", "--cores", "2", "--configfile", str(disabled))
    assert result.returncode == 0, result.stderr
    assert not set(_jobs(result.stdout)) & {
        *MDCR_RULES, *RERANK_RULES, *TRAIN_RULES[:-1], *LTR_RULES
    }  # fmt: skip


ACM_CR = REPO.parent / "shared" / "data" / "acm-cr"


@pytest.mark.skipif(not ACM_CR.is_dir(), reason="needs ../shared/data/acm-cr")
def test_acm_cr_config_plans_its_global_and_local_jobs(tmp_path):
    """config/acm-cr.yaml (the README's real-data run) builds a DAG: its curated contexts
    are a test split only, so it has no local training jobs."""
    workdir = tmp_path / "run"
    workdir.mkdir()
    (workdir / "config").symlink_to(REPO / "config")
    # The config names its data as ../shared/data/acm-cr, relative to the working directory.
    (tmp_path / "shared").symlink_to(REPO.parent / "shared")
    result = snakemake(
        workdir, "-n", "--cores", "2", "--configfile", str(workdir / "config" / "acm-cr.yaml")
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    jobs = _jobs(result.stdout)
    assert jobs["local_sample"] == 1 and jobs["contexts_extract"] == 1
    assert not {"local_triplets", "local_rerank_train", "rerank_train"} & set(jobs)


def test_import_mode_scores_the_given_files_without_building(workdir):
    """mdcr.source: import reads the named benchmark and data file: no construction, and
    the encoder scores them without the embedding store (their papers are not the corpus')."""
    benchmark, data = workdir / "mdcr test.json", workdir / "mdcr_test_data.jsonl"
    benchmark.write_text("{}")
    data.write_text("")
    config = {
        "bm25": {"tune": {"enabled": False}},
        "rerank": {"enabled": False},  # its training needs the corpus, not just the files
        "encode": {"models": ["minilm"]},  # so does training an encoder
        "local": {"enabled": False},
        "ltr": [],  # and the ltr features (citation counts, years)
        "mdcr": {"source": "import", "import": {"test": {"benchmark": str(benchmark),
                                                        "data": str(data)}}},
    }  # fmt: skip
    (workdir / "import.yaml").write_text(yaml.safe_dump(config))
    tables = ["results/demo/tables/table3_mdcr.tsv", "results/demo/tables/table4_mdcr_types.tsv"]
    result = snakemake(
        workdir, *tables, "-n", "-p", "--cores", "2", "--configfile", str(workdir / "import.yaml")
    )
    assert result.returncode == 0, result.stderr
    jobs = _jobs(result.stdout)
    assert {rule: jobs.get(rule) for rule in MDCR_RULES} == {
        "mdcr_build": None,
        "mdcr_score_bm25": 1,
        "mdcr_score_dense": 1,
        "mdcr_score_fusion": 1,
        "mdcr_evaluate": 5,  # and the demo's LSA store and BM25Okapi scores
        "mdcr_tables": 1,
    }
    # The users' scores are their command's, imported; their vectors come from their store.
    assert (jobs["external_mdcr"], jobs["mdcr_import_scores"]) == (1, 1)
    assert (jobs["mdcr_score_embeddings"], jobs["import_embeddings"]) == (1, 1)
    assert "encode" not in jobs
    commands = [
        shlex.split(line.removeprefix("Shell command: "))
        for line in result.stdout.splitlines()
        if line.startswith("Shell command: ") and "citeval.mdcr score" in line
        and "--kind embeddings" not in line
    ]  # fmt: skip
    assert len(commands) == 3
    for words in commands:
        assert words[words.index("--benchmark") + 1] == str(benchmark)
        assert words[words.index("--data") + 1] == str(data)
        assert "--embeddings" not in words
    (bm25,) = [words for words in commands if "bm25" in words[words.index("--kind") + 1]]
    assert bm25[bm25.index("--k1") + 1 : bm25.index("--k1") + 4] == ["0.9", "--b", "0.4"]


def test_differing_prompts_embed_the_query_papers_apart(workdir):
    """A query prompt unlike the document prompt: the candidates' store is embedded with
    the document prompt, each split's query papers (and the local contexts) with the
    query prompt, and dense retrieval reads the queries from their store."""
    entry = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["models"]["minilm"]
    prompts = {"models": {"minilm": {**entry, "query_prompt": "query: "}}}
    (workdir / "prompts.yaml").write_text(yaml.safe_dump(prompts))
    extra = ["--configfile", "config/config.yaml", str(workdir / "prompts.yaml")]
    result = snakemake(workdir, "-n", "-p", "--cores", "2", *extra)
    assert result.returncode == 0, result.stderr
    # minilm and the three encoders trained from it (they inherit its entry) x the
    # dataset and field test splits, the field validation split (MDCR's) and the training
    # split (the ltr system's features).
    assert _jobs(result.stdout)["encode_query_papers"] == 16
    commands = [
        words
        for line in result.stdout.splitlines()
        if line.startswith("Shell command: ")
        for words in [shlex.split(line.removeprefix("Shell command: "))]
        if len(words) > 2
    ]

    def role(words):
        return words[words.index("--role") + 1] if "--role" in words else None

    encode = [w for w in commands if w[2] == "citeval.encode"]
    stores = [w for w in encode if w[w.index("--ids") + 1].endswith("embed_ids.parquet")]
    assert len(stores) == 4 and {role(w) for w in stores} == {"document"}
    assert {role(w) for w in encode if w not in stores} == {"query"}
    encoders = {"minilm", "minilm_scincl", "minilm_specter", "minilm_local"}
    retrieve = [
        w for w in commands if w[2] == "citeval.retrieve" and w[w.index("--tag") + 1] in encoders
    ]
    assert len(retrieve) == 64  # with the ltr features on the training pool and local splits
    for words in retrieve:
        queries = words[words.index("--query-embeddings") + 1]
        local = "samples/local-" in words[words.index("--queries") + 1]
        assert ("/local/embeddings/" if local else "/query_embeddings/") in queries


def test_the_lucene_searcher_gets_lucene_indexes(workdir):
    """bm25.searcher: lucene makes every pool's index a Lucene index too, which its searcher
    needs; by default bm25_index cuts the impact matrix alone from the analyzed corpus."""
    (workdir / "lucene.yaml").write_text(yaml.safe_dump({"bm25": {"searcher": "lucene"}}))
    lucene = ["--configfile", str(workdir / "lucene.yaml")]
    for extra, searcher in (([], "impacts"), (lucene, "lucene")):
        result = snakemake(workdir, "-n", "-p", "--cores", "2", *extra)
        assert result.returncode == 0, result.stderr
        commands = [
            shlex.split(line.removeprefix("Shell command: "))
            for line in result.stdout.splitlines()
            if line.startswith("Shell command: ") and "citeval.bm25" in line
        ]
        index = [words for words in commands if words[3] == "index"]
        search = [words for words in commands if words[3] in ("search", "tune")]
        assert len(index) == 16 and len(search) == 18
        assert all(("--lucene-papers" in words) == (searcher == "lucene") for words in index)
        assert all(
            words[words.index("--analyzed") + 1].endswith("bm25-analyzed") for words in index
        )
        assert all(words[words.index("--searcher") + 1] == searcher for words in search)
