"""``python -m citeval.mdcr build`` over small pipeline tables: files, invariants, bytes."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow as pa
import pytest
from corpus_builder import write_corpus

from citeval.config import load_config, schema_default
from citeval.io import write_parquet
from citeval.mdcr.cli import build_parser, main
from citeval.mdcr.evaluate import evaluate_benchmark
from citeval.mdcr.formats import load_benchmark, score_key, write_scores
from citeval.stages import MDCR_BUILD
from citeval.trec import write_run

FIELDS = {"Art": "art", "Computer Science": "computer-science"}
MODELS = ("bm25", "minilm", "rrf", "scincl")


def make_pipeline_outputs(root: Path) -> dict[str, set]:
    rnd = random.Random(4)
    ids = [f"p{i:03d}" for i in range(160)]
    queries = {"Art": ids[:4], "Computer Science": ids[4:8]}
    papers, edges = [], set()
    for i, pid in enumerate(ids):
        paper = {"paper_id": pid, "year": 2019 if i < 8 else rnd.randint(2000, 2021)}
        paper["fields"] = ["Art"] if i % 2 else ["Computer Science", "Art"]
        if i >= 8 and rnd.random() < 0.1:
            paper["abstract"] = None
        papers.append(paper)
        for other in rnd.sample(ids, 10):
            if other != pid:
                edges.add((pid, other))
    write_corpus(root / "corpus", papers, edges)
    cited_by: dict[str, int] = {}
    for _, cited in edges:
        cited_by[cited] = cited_by.get(cited, 0) + 1
    kept = [p for p in papers if p.get("abstract", "x") is not None]
    write_parquet(
        pa.table(
            {
                "paper_id": [p["paper_id"] for p in kept],
                "year": pa.array([p["year"] for p in kept], pa.int32()),
                "fields": [p["fields"] for p in kept],
                "n_cited_by": pa.array([cited_by.get(p["paper_id"], 0) for p in kept], pa.int32()),
                "n_references": pa.array([0] * len(kept), pa.int32()),
            }
        ),
        root / "filtered" / "papers.parquet",
    )
    rows = sorted((FIELDS[name], q) for name, qs in queries.items() for q in qs)
    write_parquet(
        pa.table({"group": [g for g, _ in rows], "query_id": [q for _, q in rows]}),
        root / "samples" / "field-test" / "queries.parquet",
    )
    pool = [p["paper_id"] for p in kept if p["year"] <= 2019]
    for name, qs in queries.items():
        for model in MODELS:
            run = {q: {d: rnd.random() for d in rnd.sample(pool, 60)} for q in qs}
            write_run(
                run, root / "runs" / "field-test" / f"{FIELDS[name]}.rep0" / f"{model}.trec", model
            )
    return {
        "cited": edges,
        "no_text": {p["paper_id"] for p in papers if p.get("abstract", "x") is None},
        "years": {p["paper_id"]: p["year"] for p in papers},
    }


def build_args(root: Path, out: Path, *extra: str) -> list[str]:
    return [
        "build",
        "--split",
        "test",
        "--seed",
        "13",
        "--samples",
        str(root / "samples" / "field-test"),
        "--runs",
        str(root / "runs" / "field-test"),
        "--corpus",
        str(root / "corpus"),
        "--filtered",
        str(root / "filtered" / "papers.parquet"),
        "--fields",
        *FIELDS,
        "--models",
        *MODELS,
        "--output-dir",
        str(out),
        "--threads",
        "1",
        *extra,
    ]


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("pipeline")
    facts = make_pipeline_outputs(root)
    assert main(build_args(root, root / "mdcr")) == 0
    return root, facts


def test_files_and_invariants(pipeline: tuple[Path, dict]) -> None:
    root, facts = pipeline
    out = root / "mdcr"
    assert sorted(p.name for p in out.iterdir()) == [
        "mdcr_test.json",
        "mdcr_test_data.jsonl",
        "mdcr_test_jaccard.tsv",
        "mdcr_test_report.json",
    ]
    benchmark, papers = load_benchmark(out / "mdcr_test.json", out / "mdcr_test_data.jsonl")
    report = json.loads((out / "mdcr_test_report.json").read_text())
    model_types = report["model_types"]
    assert len(model_types) == 3 and set(model_types) <= set(MODELS)
    assert sorted(benchmark) == sorted(FIELDS)
    for queries in benchmark.values():
        for query_id, entry in queries.items():
            assert set(entry) == {"true", "graph", "most_cited", "random", *model_types}
            cited = {d for c, d in facts["cited"] if c == query_id}
            everything = [c for ids in entry.values() for c in ids]
            assert len(everything) == len(set(everything))
            assert query_id not in everything
            assert set(entry["true"]) <= cited and entry["true"]
            for kind, ids in entry.items():
                if kind != "true":
                    assert not set(ids) & cited
            for c in everything:
                assert c not in facts["no_text"] and papers[c].abstract
                assert facts["years"][c] <= 2019
    assert set(papers) == {q for qs in benchmark.values() for q in qs} | {
        c for qs in benchmark.values() for e in qs.values() for ids in e.values() for c in ids
    }
    lines = (out / "mdcr_test_jaccard.tsv").read_text().splitlines()
    assert lines[0].split("\t") == ["model", *sorted(MODELS), "mean_with_others", "selected"]
    selected = [line.split("\t")[0] for line in lines[1:] if line.endswith("\tyes")]
    assert selected == model_types
    means = report["jaccard"]["mean_with_others"]
    unselected = set(MODELS) - set(model_types)
    assert max(means[m] for m in model_types) <= min(means[m] for m in unselected)


def test_same_seed_same_bytes_and_import_matches(pipeline: tuple[Path, dict]) -> None:
    root, _ = pipeline
    again = root / "again"
    assert main(build_args(root, again)) == 0
    for path in (root / "mdcr").iterdir():
        assert (again / path.name).read_bytes() == path.read_bytes(), path.name
    other = root / "other-seed"
    args = build_args(root, other)
    args[args.index("13")] = "14"
    assert main(args) == 0
    assert (other / "mdcr_test.json").read_bytes() != (
        root / "mdcr" / "mdcr_test.json"
    ).read_bytes()

    benchmark, _ = load_benchmark(again / "mdcr_test.json", again / "mdcr_test_data.jsonl")
    rnd = random.Random(0)
    scores = {
        score_key(q, c): rnd.random()
        for qs in benchmark.values()
        for q, entry in qs.items()
        for ids in entry.values()
        for c in ids
    }
    write_scores(scores, root / "scores.json")
    rows = evaluate_benchmark(benchmark, scores)
    report = json.loads((again / "mdcr_test_report.json").read_text())
    assert {r.candidates for r in rows} == {"all", *report["candidate_types"]}
    assert [r.field for r in rows[:3]] == ["Art", "Computer Science", "AVG"]
    assert rows[0].n_queries == len(benchmark["Art"])


def test_named_models_and_missing_run(
    pipeline: tuple[Path, dict], capsys: pytest.CaptureFixture[str]
) -> None:
    root, _ = pipeline
    out = root / "named"
    assert main(build_args(root, out, "--model-selection", "rrf", "bm25")) == 0
    report = json.loads((out / "mdcr_test_report.json").read_text())
    assert report["model_types"] == ["bm25", "rrf"]
    assert main(build_args(root, root / "bad", "--model-selection", "specter")) == 2
    assert "specter" in capsys.readouterr().err
    args = build_args(root, root / "bad")
    args[args.index("scincl")] = "scibert"
    assert main(args) == 2
    assert "no scibert run for field" in capsys.readouterr().err


def build_subparser():
    return build_parser()._subparsers._group_actions[0].choices["build"]


def config_with(**mdcr: object):
    corpus = {"format": "s2orc_v2020", "paths": ["s2orc-*.jsonl.gz"]}
    return load_config({"dataset": "t", "seed": 13, "corpus": corpus, "mdcr": mdcr})


def test_the_build_defaults_are_the_schemas() -> None:
    """A setting left out takes the schema's default (the parser's, and so the pipeline's)."""
    args = build_subparser().parse_args(build_args(Path("r"), Path("o"))[1:])
    values = MDCR_BUILD.values(args)
    for key in MDCR_BUILD.keys:
        if key not in ("seed", "sampling.field_level.fields", "mdcr.models"):
            assert values[key] == schema_default(key), key
    assert values["mdcr.model_selection"] == "auto"


@pytest.mark.parametrize(
    "mdcr",
    [{}, {"model_selection": ["bm25"], "shortfall": "keep_fewer", "positives": 3}],
)
def test_the_configs_flags_parse(mdcr: dict) -> None:
    """The pipeline's command line: the entry's flags from a config, ``--models`` explicit."""
    config = config_with(**mdcr)
    wiring = build_args(Path("r"), Path("o"))[1:]
    wiring = wiring[: wiring.index("--seed")] + wiring[wiring.index("--samples") :]
    wiring = wiring[: wiring.index("--fields")] + wiring[wiring.index("--output-dir") :]
    argv = MDCR_BUILD.argv(config, models=list(MODELS))
    args = build_subparser().parse_args([*wiring, *argv])
    values = MDCR_BUILD.values(args)
    assert values["mdcr.models"] == list(MODELS)
    assert values["sampling.field_level.fields"] == config.sampling.field_level.fields
    assert values["mdcr.model_selection"] == config.mdcr.model_selection
    for key in ("positives", "negatives_per_type", "model_depth", "shortfall"):
        assert getattr(args, key) == getattr(config.mdcr, key), key
    assert (args.seed, args.max_candidate_year) == (13, "query_year")


def test_a_null_max_candidate_year_parses() -> None:
    config = config_with(max_candidate_year=None)
    argv = MDCR_BUILD.argv(config, models=list(MODELS))
    assert argv[argv.index("--max-candidate-year") + 1] == "none"
    args = build_subparser().parse_args([*build_args(Path("r"), Path("o"))[1:], *argv])
    assert args.max_candidate_year is None


def test_an_empty_model_list_is_a_clear_error(
    pipeline: tuple[Path, dict], capsys: pytest.CaptureFixture[str]
) -> None:
    root, _ = pipeline
    args = build_args(root, root / "none")
    args = args[: args.index("--models")] + args[args.index("--output-dir") :]
    assert main([*args, "--models"]) == 2
    assert "no models to compare" in capsys.readouterr().err


def test_validation_split_file_names_and_types_from_the_test_split(
    pipeline: tuple[Path, dict], tmp_path: Path
) -> None:
    """``--split valid`` writes the published ``mdcr_val.*`` names, and
    ``--model-types-from`` takes the test split's model types over a different ``auto``
    choice; a report without types is a clear error."""
    root, _ = pipeline
    test_report = json.loads((root / "mdcr" / "mdcr_test_report.json").read_text())
    forced = {**test_report, "model_types": ["scincl"]}
    (tmp_path / "forced.json").write_text(json.dumps(forced))
    args = build_args(root, tmp_path / "val", "--model-types-from", str(tmp_path / "forced.json"))
    args[args.index("test")] = "valid"
    assert main(args) == 0
    names = sorted(path.name for path in (tmp_path / "val").iterdir())
    assert names == [
        "mdcr_val.json",
        "mdcr_val_data.jsonl",
        "mdcr_val_jaccard.tsv",
        "mdcr_val_report.json",
    ]
    report = json.loads((tmp_path / "val" / "mdcr_val_report.json").read_text())
    assert report["model_types"] == ["scincl"] != test_report["model_types"]
    benchmark = json.loads((tmp_path / "val" / "mdcr_val.json").read_text())
    types = {kind for queries in benchmark.values() for entry in queries.values() for kind in entry}
    assert "scincl" in types and not {"bm25", "minilm", "rrf"} & types

    (tmp_path / "broken.json").write_text("{}")
    args = build_args(root, tmp_path / "x", "--model-types-from", str(tmp_path / "broken.json"))
    assert main(args) == 2
