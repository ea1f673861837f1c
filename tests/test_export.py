"""``citeval export beir``: collections and MDCR's pairs as BEIR folders.

Small sample folders, qrels, runs and an MDCR benchmark are written here in the pipeline's
formats (docs/contracts.md), so no pipeline runs. Each export is read back with BEIR's own
``GenericDataLoader`` where BEIR is installed (requirements-test.txt pins it) and checked
against BEIR's documented layout in any case, and its qrels, scored with pytrec_eval
against the project's runs, give the project's metrics files, Table 1 and MDCR's
evaluation.
"""

from __future__ import annotations

import csv
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import pytrec_eval
from corpus_builder import write_corpus

from citeval.collection_list import CollectionInfo, write_collections
from citeval.export import CORPUS_FILE, MANIFEST_FILE, QRELS_FILE, QUERIES_FILE
from citeval.export.cli import main as export_main
from citeval.io import write_parquet
from citeval.layout import Layout
from citeval.mdcr.cli import main as mdcr_main
from citeval.mdcr.formats import Paper, write_benchmark, write_data, write_scores
from citeval.measures import table1_measures
from citeval.metrics import ALL_QUERIES, read_per_query_tsv
from citeval.metrics.cli import main as metrics_main
from citeval.tables import dataset_level_table, provenance
from citeval.trec import read_qrels, read_run, write_qrels, write_run

REPO = Path(__file__).resolve().parents[1]
WORDS = ["citation", "graph", "neural", "retrieval", "protein", "cell", "galaxy", "market"]
CUTOFFS = ["5", "10"]
POOL = "pool-20.rep0"
CONFIG = {"dataset": "tiny", "seed": 13, "retrieval": {"k": 100}}


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def write_sample(
    folder: Path,
    setup: str,
    split: str,
    group: str,
    queries: list[str],
    pool: list[str],
    qrels: dict[str, dict[str, int]],
    n_queries: int | None = None,
) -> None:
    """One collection's sample folder, as the sample stage writes it (rep 0)."""
    write_parquet(
        pa.table({"group": [group] * len(queries), "query_id": sorted(queries)}),
        folder / "queries.parquet",
    )
    write_parquet(
        pa.table(
            {
                "group": pa.array([group] * len(pool), pa.string()),
                "rep": pa.array(np.zeros(len(pool), dtype=np.int16)),
                "paper_id": pa.array(sorted(pool), pa.string()),
            }
        ),
        folder / "pools.parquet",
    )
    write_qrels(qrels, folder / "qrels" / f"{group}.rep0.qrels")
    count = len(queries) if n_queries is None else n_queries
    write_collections([CollectionInfo(setup, split, group, 0, count, len(pool), len(pool))], folder)


def ranking(rng: random.Random, query: str, pool: list[str]) -> dict[str, float]:
    # Four decimals keep every score distinct as a float32 (trec_eval's precision).
    return {doc: round(rng.random(), 4) for doc in pool if doc != query}


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """A results folder: a corpus of 40 papers, a dataset-level collection (queries p00-p05,
    pool p03-p22, p05 and p22 textless) with a run, and a local collection with its run."""
    root = tmp_path_factory.mktemp("export") / "results"
    rng = random.Random(0)
    papers = [
        {"paper_id": f"p{i:02d}", "title": sentence(rng, 4), "abstract": sentence(rng, 12)}
        for i in range(40)
    ]
    papers[5].update(title=None, abstract=None)  # a query paper without text
    papers[22].update(title=None, abstract=None)  # a pool paper without text
    papers[7].update(title='Ünïcode "quoted" title\twith a tab')
    write_corpus(root / "corpus", papers, [])
    layout = Layout(str(root))

    queries = [f"p{i:02d}" for i in range(6)]
    pool = [f"p{i:02d}" for i in range(3, 23)]
    qrels = {
        q: {doc: 1 for doc in rng.sample([p for p in pool if p != q], rng.randint(1, 4))}
        for q in queries
    }
    write_sample(Path(layout.sample_dir("dataset", "test")), "dataset", "test", "pool-20",
                 queries, pool, qrels)  # fmt: skip
    run = {q: ranking(rng, q, pool) for q in queries if q != "p05"}  # p05: no text, no hits
    tied = sorted(run["p00"])[:2]
    run["p00"][tied[0]] = run["p00"][tied[1]]  # a tie, broken by document id
    write_run(run, layout.run("dataset", "test", POOL, "bm25"), "bm25")

    contexts = [f"p{i:02d}:{n}" for i in range(30, 34) for n in range(2)]
    local_pool = [f"p{i:02d}" for i in range(0, 30)]
    local_qrels = {c: {doc: 1 for doc in rng.sample(local_pool, 2)} for c in contexts}
    local = Path(layout.sample_dir("local", "test"))
    write_sample(local, "local", "test", "contexts", contexts, local_pool, local_qrels)
    write_parquet(
        pa.table(
            {
                "paper_id": contexts,
                "title": [f"the context {c} cites [CIT] here" for c in contexts],
                "abstract": [f"citing paper {c.split(':')[0]} text" for c in contexts],
                "granularity": ["sentences-1", "chars-200"] * (len(contexts) // 2),
                "citing_id": [c.split(":")[0] for c in contexts],
            }
        ),
        Path(layout.query_papers("test")) / "part-00000.parquet",
    )
    local_run = {c: ranking(rng, c, local_pool) for c in contexts}
    write_run(local_run, layout.run("local", "test", "contexts.rep0", "bm25"), "bm25")
    for setup, collection in (("dataset", POOL), ("local", "contexts.rep0")):
        assert metrics_main([
            "--run", layout.run(setup, "test", collection, "bm25"),
            "--qrels", layout.qrels(setup, "test", collection),
            "--cutoffs", *CUTOFFS, "--missing-as-zero",
            "--output", layout.metrics(setup, "test", collection, "bm25"),
        ]) == 0  # fmt: skip
    return root


def export(results: Path, setup: str, collection: str, output: Path, *extra: str) -> int:
    layout = Layout(str(results))
    return export_main([
        "beir", "--samples", layout.sample_dir(setup, "test"), "--collection", collection,
        "--papers", layout.papers, "--config-json", json.dumps(CONFIG), "--output", str(output),
        *extra,
    ])  # fmt: skip


@pytest.fixture(scope="module")
def dataset_export(results, tmp_path_factory) -> Path:
    output = tmp_path_factory.mktemp("beir") / "dataset"
    assert export(results, "dataset", POOL, output) == 0
    return output


@pytest.fixture(scope="module")
def local_export(results, tmp_path_factory) -> Path:
    output = tmp_path_factory.mktemp("beir") / "local"
    assert export(results, "local", "contexts.rep0", output) == 0
    return output


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def read_beir_qrels(folder: Path) -> dict[str, dict[str, int]]:
    """qrels/test.tsv as BEIR's loader reads it: csv, the header skipped, int scores."""
    with open(folder / QRELS_FILE, encoding="utf-8") as handle:
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_MINIMAL)
        assert next(reader) == ["query-id", "corpus-id", "score"]
        qrels: dict[str, dict[str, int]] = {}
        for query_id, doc_id, score in reader:
            qrels.setdefault(query_id, {})[doc_id] = int(score)
    return qrels


def load_by_layout(folder: Path) -> tuple[dict, dict, dict]:
    """(corpus, queries, qrels) as BEIR's documented layout defines them: the dicts
    GenericDataLoader returns, its queries those the qrels judge."""
    corpus = {d["_id"]: {"text": d["text"], "title": d["title"]}
              for d in read_jsonl(folder / CORPUS_FILE)}  # fmt: skip
    qrels = read_beir_qrels(folder)
    queries = {q["_id"]: q["text"] for q in read_jsonl(folder / QUERIES_FILE)}
    return corpus, {qid: queries[qid] for qid in qrels}, qrels


def load(folder: Path) -> tuple[dict, dict, dict]:
    """(corpus, queries, qrels) as BEIR loads them: with BEIR's GenericDataLoader where
    BEIR is installed, else by its documented layout."""
    try:
        from beir.datasets.data_loader import GenericDataLoader
    except ImportError:
        return load_by_layout(folder)
    return GenericDataLoader(data_folder=str(folder)).load(split="test")


def test_beirs_own_loader_reads_every_export(dataset_export, local_export, mdcr, tmp_path):
    loader = pytest.importorskip("beir.datasets.data_loader").GenericDataLoader
    mdcr_export = tmp_path / "mdcr"
    assert export_mdcr(mdcr, mdcr_export) == 0
    for folder in (dataset_export, local_export, mdcr_export):
        loaded = loader(data_folder=str(folder)).load(split="test")
        assert loaded == load_by_layout(folder), folder
        assert all(loaded), folder


def check_layout(folder: Path) -> None:
    """BEIR's documented layout (beir-cellar/beir README, "custom dataset"), line by line."""
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) == [
        CORPUS_FILE, MANIFEST_FILE, "qrels", QRELS_FILE, QUERIES_FILE,
    ]  # fmt: skip
    documents = read_jsonl(folder / CORPUS_FILE)
    assert all(list(d) == ["_id", "title", "text"] for d in documents)
    assert all(isinstance(d["title"], str) and isinstance(d["text"], str) for d in documents)
    ids = [d["_id"] for d in documents]
    assert ids == sorted(set(ids))
    queries = read_jsonl(folder / QUERIES_FILE)
    assert all(list(q)[:2] == ["_id", "text"] and set(q) <= {"_id", "text", "metadata"}
               for q in queries)  # fmt: skip
    lines = (folder / QRELS_FILE).read_text(encoding="utf-8").splitlines()
    assert lines[0] == "query-id\tcorpus-id\tscore"
    rows = [line.split("\t") for line in lines[1:]]
    assert all(len(row) == 3 and row[2].isdigit() for row in rows)
    assert rows == sorted(rows, key=lambda row: (row[0], row[1]))


def corpus_text(title: str | None, abstract: str | None) -> str:
    return " ".join(part.strip() for part in (title, abstract) if part and part.strip())


def test_a_collection_loads_with_beirs_loader_holding_the_pool_queries_and_qrels(
    results, dataset_export
):
    check_layout(dataset_export)
    corpus, queries, qrels = load(dataset_export)
    layout = Layout(str(results))
    assert qrels == read_qrels(layout.qrels("dataset", "test", POOL))
    assert sorted(corpus) == [f"p{i:02d}" for i in range(3, 23)]
    table = pq.read_table(Path(layout.papers) / "part-00000.parquet").to_pylist()
    papers = {row["paper_id"]: row for row in table}
    assert corpus["p07"] == {"title": papers["p07"]["title"], "text": papers["p07"]["abstract"]}
    assert corpus["p22"] == {"title": "", "text": ""}
    assert sorted(queries) == [f"p{i:02d}" for i in range(6)]
    assert queries["p01"] == corpus_text(papers["p01"]["title"], papers["p01"]["abstract"])
    assert queries["p05"] == ""


def test_a_local_collection_takes_its_queries_from_the_contexts(local_export):
    check_layout(local_export)
    corpus, queries, qrels = load(local_export)
    assert len(corpus) == 30 and len(queries) == len(qrels) == 8
    assert queries["p30:1"] == "the context p30:1 cites [CIT] here citing paper p30 text"
    lines = {q["_id"]: q for q in read_jsonl(local_export / QUERIES_FILE)}
    assert lines["p31:0"]["metadata"] == {"citing_id": "p31", "granularity": "sentences-1"}
    manifest = json.loads((local_export / MANIFEST_FILE).read_text())
    assert manifest["task"] == "local"
    assert manifest["collection"]["setup"] == "local"


def pytrec_means(
    qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]], measures: set[str]
) -> dict[str, float]:
    """Means over the qrels' queries, a query missing from the run scoring 0 (the
    pipeline's --missing-as-zero, trec_eval -c)."""
    per_query = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    names = next(iter(per_query.values())).keys()
    return {m: sum(per_query.get(q, {}).get(m, 0.0) for q in qrels) / len(qrels) for m in names}


@pytest.mark.parametrize(("setup", "collection"), [("dataset", POOL), ("local", "contexts.rep0")])
def test_exported_qrels_and_the_projects_run_give_its_metrics(
    results, dataset_export, local_export, setup, collection
):
    folder = dataset_export if setup == "dataset" else local_export
    layout = Layout(str(results))
    _, _, qrels = load(folder)
    run = read_run(layout.run(setup, "test", collection, "bm25"))
    measures = {"map", "ndcg", "recip_rank", *(f"{m}.{k}" for m in ("recall", "P", "ndcg_cut")
                                                for k in CUTOFFS)}  # fmt: skip
    means = pytrec_means(qrels, run, measures)
    expected = read_per_query_tsv(layout.metrics(setup, "test", collection, "bm25"))[ALL_QUERIES]
    assert {m: pytest.approx(v, abs=1e-9) for m, v in means.items()} == {
        m: expected[m] for m in means
    }


def test_exported_qrels_and_the_projects_run_give_table_1(results, dataset_export, tmp_path):
    layout = Layout(str(results))
    _, _, qrels = load(dataset_export)
    run = read_run(layout.run("dataset", "test", POOL, "bm25"))
    means = pytrec_means(qrels, run, {"map", "ndcg", "recall.10"})
    [row] = dataset_level_table(results, ["bm25"], table1_measures(10), tmp_path)
    assert row[0] == "bm25"
    ours = [100 * means[m] for m in ("map", "ndcg", "recall_10")]
    # The metrics files hold ten decimals; the table is 100 times their mean.
    assert row[1:] == pytest.approx(ours, abs=1e-7)
    table = (tmp_path / "table1_dataset_level.tsv").read_text().splitlines()
    assert [float(v) for v in table[1].split("\t")[1:]] == pytest.approx(ours, abs=1e-6)


def test_the_manifest_names_the_config_collection_inputs_and_counts(results, dataset_export):
    manifest = json.loads((dataset_export / MANIFEST_FILE).read_text())
    assert manifest["config_sha256"] == provenance(CONFIG, [])["config_sha256"]
    assert (manifest["seed"], manifest["dataset"]) == (13, "tiny")
    assert manifest["task"] == "global"
    assert manifest["collection"] == {
        "setup": "dataset", "split": "test", "group": "pool-20", "rep": 0, "name": POOL,
        "pool_size": 20, "requested_pool_size": 20,
    }  # fmt: skip
    layout = Layout(str(results))
    assert manifest["inputs"]["qrels"]["path"] == layout.qrels("dataset", "test", POOL)
    assert manifest["inputs"]["papers"]["sha256"] is None
    assert len(manifest["inputs"]["pools"]["sha256"]) == 64
    counts = manifest["counts"]
    qrels = read_qrels(layout.qrels("dataset", "test", POOL))
    assert counts["documents"] == 20 and counts["documents_without_text"] == 2
    assert counts["queries"] == 6 and counts["queries_without_text"] == 1
    assert counts["relevant"] == counts["qrels"] == sum(map(len, qrels.values()))
    assert manifest["split"] == "test" and manifest["format"] == "beir"


def test_an_export_is_byte_identical_and_replaces_an_earlier_one(results, dataset_export, tmp_path):
    output = tmp_path / "again"
    output.mkdir()
    (output / "stale.txt").write_text("from an earlier export")
    assert export(results, "dataset", POOL, output, "--threads", "2") == 0
    names = sorted(p.relative_to(output).as_posix() for p in output.rglob("*") if p.is_file())
    assert names == [CORPUS_FILE, MANIFEST_FILE, QRELS_FILE, QUERIES_FILE]
    for name in names:
        assert (output / name).read_bytes() == (dataset_export / name).read_bytes(), name
    assert os.listdir(tmp_path) == ["again"]  # no temporary left behind


# --- MDCR -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mdcr(tmp_path_factory) -> dict[str, Path]:
    """A two-field benchmark (one query lists a candidate under two negative types), its
    data file, a model's scores (with a tie) and the project's evaluation of them."""
    folder = tmp_path_factory.mktemp("mdcr")
    rng = random.Random(1)
    benchmark: dict = {}
    for field_name, prefix in (("Biology", "b"), ("Computer Science", "c")):
        benchmark[field_name] = {}
        for n in range(3):
            ids = [f"{prefix}{n}x{i}" for i in range(7)]
            benchmark[field_name][f"{prefix}q{n}"] = {
                "true": ids[:2], "bm25": ids[2:5], "random": ids[4:7],
            }  # fmt: skip
    benchmark["Biology"]["bq0"]["graph"] = ["c0x3"]  # a candidate shared across queries
    ids = {q for f in benchmark.values() for q in f} | {
        c for f in benchmark.values() for cands in f.values() for ids in cands.values()
        for c in ids
    }  # fmt: skip
    write_benchmark(benchmark, folder / "mdcr_test.json")
    write_data([Paper(p, sentence(rng, 3), sentence(rng, 8)) for p in ids],
               folder / "mdcr_test_data.jsonl")  # fmt: skip
    scores = {
        f"{q}_{c}": round(rng.random(), 4)
        for f in benchmark.values() for q, cands in f.items()
        for ids in cands.values() for c in ids
    }  # fmt: skip
    scores["bq1_b1x0"] = scores["bq1_b1x1"]  # a tie
    write_scores(scores, folder / "scores.json")
    assert mdcr_main([
        "evaluate", "--benchmark", str(folder / "mdcr_test.json"),
        "--scores", str(folder / "scores.json"), "--output", str(folder / "eval.tsv"),
    ]) == 0  # fmt: skip
    return {"folder": folder, "benchmark": folder / "mdcr_test.json",
            "data": folder / "mdcr_test_data.jsonl", "scores": folder / "scores.json",
            "eval": folder / "eval.tsv"}  # fmt: skip


def export_mdcr(mdcr: dict[str, Path], output: Path, *extra: str) -> int:
    return export_main([
        "beir", "--mdcr-benchmark", str(mdcr["benchmark"]), "--mdcr-data", str(mdcr["data"]),
        "--output", str(output), *extra,
    ])  # fmt: skip


def test_mdcr_pairs_export_as_one_corpus_with_every_pair_judged(mdcr, tmp_path):
    output = tmp_path / "mdcr-test"
    assert export_mdcr(mdcr, output) == 0
    check_layout(output)
    corpus, queries, qrels = load(output)
    benchmark = json.loads(mdcr["benchmark"].read_text())
    listed = {q: {c for ids in cands.values() for c in ids}
              for f in benchmark.values() for q, cands in f.items()}  # fmt: skip
    assert {q: set(docs) for q, docs in qrels.items()} == listed
    assert set(corpus) == set().union(*listed.values())
    assert qrels["bq0"]["b0x0"] == 1 and qrels["bq0"]["b0x4"] == 0 and qrels["bq0"]["c0x3"] == 0
    assert sorted(queries) == sorted(listed)
    data = {p["paper_id"]: p for p in read_jsonl(mdcr["data"])}
    assert queries["cq2"] == f"{data['cq2']['title']} {data['cq2']['abstract']}"
    fields = {q["_id"]: q["metadata"]["field"] for q in read_jsonl(output / QUERIES_FILE)}
    assert fields["cq1"] == "Computer Science"
    manifest = json.loads((output / MANIFEST_FILE).read_text())
    assert manifest["task"] == "mdcr" and manifest["collection"]["split"] == "test"
    assert manifest["collection"]["fields"]["Biology"]["queries"] == 3
    assert manifest["config_sha256"] is None


def test_mdcr_exported_qrels_and_the_projects_scores_give_its_evaluation(mdcr, tmp_path):
    output = tmp_path / "mdcr-test"
    assert export_mdcr(mdcr, output) == 0
    _, _, qrels = load(output)
    fields = {q["_id"]: q["metadata"]["field"] for q in read_jsonl(output / QUERIES_FILE)}
    scores = json.loads(mdcr["scores"].read_text())
    # MDCR ranks each query's own candidates: the judged documents are exactly those.
    run = {q: {doc: scores[f"{q}_{doc}"] for doc in docs} for q, docs in qrels.items()}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg", "recall.5"}).evaluate(run)
    with open(mdcr["eval"], encoding="utf-8") as handle:
        rows = [r for r in csv.DictReader(handle, delimiter="\t") if r["candidates"] == "all"]
    expected = {r["field"]: {m: float(r[m]) for m in ("map", "ndcg", "recall_5")} for r in rows}
    ours = {}
    for field_name in sorted(set(fields.values())):
        queries = [q for q, f in fields.items() if f == field_name]
        ours[field_name] = {
            m: 100 * sum(per_query[q][m] for q in queries) / len(queries)
            for m in ("map", "ndcg", "recall_5")
        }
    measures = ("map", "ndcg", "recall_5")
    ours["AVG"] = {m: sum(v[m] for v in ours.values()) / len(ours) for m in measures}
    assert ours.keys() == expected.keys()
    for field_name, values in ours.items():
        assert values == pytest.approx(expected[field_name], abs=1e-8), field_name


def test_one_mdcr_field_exports_alone(mdcr, tmp_path):
    output = tmp_path / "biology"
    assert export_mdcr(mdcr, output, "--field", "Biology") == 0
    _, queries, _ = load(output)
    assert sorted(queries) == ["bq0", "bq1", "bq2"]


# --- bad input: one line, exit status 2 -----------------------------------------------


def bad_cases(results: Path, mdcr: dict[str, Path], tmp: Path) -> dict[str, tuple[list, str]]:
    layout = Layout(str(results))
    samples = layout.sample_dir("dataset", "test")
    empty = tmp / "empty-sample"
    write_sample(empty, "field", "test", "art", [], ["p10"], {}, n_queries=0)
    outside = tmp / "outside"
    write_sample(outside, "field", "test", "art", ["p00"], ["p10", "p11"], {"p00": {"p12": 1}})
    no_papers = tmp / "no-papers"
    no_papers.mkdir()
    a_file = tmp / "a-file.txt"
    a_file.write_text("not an export")
    common = ["--papers", layout.papers, "--output", str(tmp / "out")]
    mdcr_flags = ["--mdcr-benchmark", str(mdcr["benchmark"]), "--mdcr-data", str(mdcr["data"])]
    return {
        "unknown collection": (["--samples", samples, "--collection", "pool-80.rep0", *common],
                               "no collection 'pool-80.rep0' (collections present: pool-20.rep0)"),
        "not a collection name": (["--samples", samples, "--collection", "pool-20", *common],
                                  "collection 'pool-20' is not <group>.rep<rep>"),
        "missing sample folder": (["--samples", str(tmp / "nope"), "--collection", POOL, *common],
                                  "cannot read the collection list"),
        "collection without queries": (["--samples", str(empty), "--collection", "art.rep0",
                                        *common], "has no queries"),
        "missing papers": (["--samples", samples, "--collection", POOL, "--papers",
                            str(no_papers), "--output", str(tmp / "out")],
                           "no parquet parts in the papers folder"),
        "local queries without their texts": (
            ["--samples", layout.sample_dir("local", "test"), "--collection", "contexts.rep0",
             "--query-papers", layout.papers, "--output", str(tmp / "out"), "--papers",
             layout.papers], "have no row in"),
        "judged paper outside the pool": (["--samples", str(outside), "--collection", "art.rep0",
                                           *common], "not in the corpus"),
        "bad config json": (["--samples", samples, "--collection", POOL, "--config-json", "{",
                             *common], "--config-json is not JSON"),
        "nothing to export": (["--output", str(tmp / "out")], "nothing to export"),
        "two sources": ([*mdcr_flags, "--samples", samples, *common[2:]],
                        "export one thing at a time"),
        "half an MDCR source": (["--mdcr-benchmark", str(mdcr["benchmark"]), *common[2:]],
                                "needs --mdcr-data too"),
        "missing MDCR data file": (["--mdcr-benchmark", str(mdcr["benchmark"]), "--mdcr-data",
                                    str(tmp / "none.jsonl"), *common[2:]], "none.jsonl"),
        "output is a file": ([*mdcr_flags, "--output", str(a_file)],
                             "the output is a file, not a folder"),
        "unknown MDCR field": ([*mdcr_flags, "--field", "Art", *common[2:]],
                               "no field 'Art' in the benchmark"),
    }  # fmt: skip


BAD = [
    "unknown collection", "not a collection name", "missing sample folder",
    "collection without queries", "missing papers", "local queries without their texts",
    "judged paper outside the pool", "bad config json", "nothing to export", "two sources",
    "half an MDCR source", "missing MDCR data file", "output is a file", "unknown MDCR field",
]  # fmt: skip


@pytest.mark.parametrize("case", BAD)
def test_bad_input_ends_in_one_line_and_status_2(results, mdcr, tmp_path, capsys, case):
    argv, message = bad_cases(results, mdcr, tmp_path)[case]
    assert export_main(["beir", *argv]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(err) == 1 and message in err[0], err
    assert not (tmp_path / "out").exists()
    assert (tmp_path / "a-file.txt").read_text() == "not an export"


# --- the command and the rules -----------------------------------------------------------


def test_citeval_export_runs_the_stage(results, tmp_path):
    layout = Layout(str(results))
    env = {**os.environ, "PYTHONPATH": str(REPO / "workflow")}
    result = subprocess.run(
        [sys.executable, "-m", "citeval", "export", "beir",
         "--samples", layout.sample_dir("dataset", "test"), "--collection", POOL,
         "--papers", layout.papers, "--output", str(tmp_path / "out")],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "wrote" in result.stderr and (tmp_path / "out" / QRELS_FILE).is_file()


def test_the_export_rules_run_on_demand_only(tmp_path):
    (tmp_path / "config").symlink_to(REPO / "config")
    targets = ["results/demo/export/beir/field-test/biology.rep0",
               "results/demo/export/beir/mdcr-test"]  # fmt: skip
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"),
               "--directory", str(tmp_path), "-n", "-p", "--cores", "1"]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    on_demand = subprocess.run([*command, *targets], capture_output=True, text=True, env=env)
    assert on_demand.returncode == 0, on_demand.stderr
    assert "export_beir " in on_demand.stdout.replace("\n", " ")
    assert "--collection biology.rep0" in on_demand.stdout
    assert "--mdcr-benchmark results/demo/mdcr/mdcr_test.json" in on_demand.stdout
    default = subprocess.run(command, capture_output=True, text=True, env=env)
    assert default.returncode == 0, default.stderr
    assert "export_beir" not in default.stdout + default.stderr
