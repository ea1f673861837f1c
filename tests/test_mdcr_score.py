"""MDCR scoring: BM25 against Lucene, encoders against the stored vectors, RRF against the
fusion module, the scores files through the command line, import mode and Tables 3 and 4."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import embedding_store_builder as store_builder
import numpy as np
import pytest

from citeval import lucene
from citeval.config import load_config, schema_default
from citeval.errors import InputDataError
from citeval.fusion import reciprocal_rank_fusion
from citeval.mdcr import score
from citeval.mdcr.cli import build_parser, main
from citeval.mdcr.evaluate import evaluate_benchmark, format_summary
from citeval.mdcr.formats import (
    Paper,
    iter_pairs,
    read_scores,
    score_key,
    write_benchmark,
    write_data,
)
from citeval.mdcr.tables import read_rows_tsv
from citeval.stages import MDCR_SCORE_BM25, MDCR_SCORE_DENSE, MDCR_SCORE_FUSION, MDCR_SCORE_RERANK

BENCHMARK = {
    "Biology": {
        "q1": {"true": ["c1", "c2"], "bm25": ["c3"], "graph": ["c4", "c9"], "random": ["c5"]},
        "q2": {"true": ["c6"], "bm25": ["c7", "c1"], "graph": ["c8"], "random": []},
    },
    "Computer Science": {
        "q3": {"true": ["c10", "c11"], "bm25": ["c12"], "graph": ["c13"], "random": ["c2"]},
    },
}
TEXTS = {
    "q1": ("Protein folding kinetics", "We study folding of small proteins in water."),
    "q2": ("Gene regulation networks", "Regulatory networks of genes in yeast cells."),
    "q3": ("Graph neural networks", "Message passing neural networks on large graphs."),
    "c1": ("Folding of proteins", "Kinetics of protein folding measured in water."),
    "c2": ("Small proteins", "Small proteins fold fast; we measure kinetics."),
    "c3": ("Water structure", "The structure of liquid water near surfaces."),
    "c4": ("Yeast cells", "Cell division in yeast under stress."),
    "c5": ("Medieval poetry", "Rhyme schemes of medieval poetry."),
    "c6": ("Gene networks in yeast", "Gene regulatory networks and their motifs."),
    "c7": ("Networks everywhere", "Scale-free networks in nature."),
    "c8": ("Cell biology", "Cells and their organelles."),
    "c9": ("", ""),  # no text: never retrieved by BM25
    "c10": ("Neural message passing", "Message passing on graphs for chemistry."),
    "c11": ("Graph attention networks", "Attention over graph neighbours."),
    "c12": ("Large graphs", "Partitioning large graphs quickly."),
    "c13": ("Convolutional networks", "Convolutional neural networks for images."),
}
PAPERS = {pid: Paper(pid, title, abstract) for pid, (title, abstract) in TEXTS.items()}
PAIRS = {(q, c) for q, c in iter_pairs(BENCHMARK)}


def test_query_candidates_are_each_querys_distinct_candidates_sorted() -> None:
    pairs = score.query_candidates(BENCHMARK)
    assert pairs["q2"] == ["c1", "c6", "c7", "c8"]
    assert {(q, c) for q, cs in pairs.items() for c in cs} == PAIRS


# --- BM25 --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bm25_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    lucene.start_jvm(heap="1g", processors=2)
    lucene.set_java_log_level("WARN")
    index_dir = tmp_path_factory.mktemp("mdcr-bm25") / "index"
    n_docs = score.build_bm25_index(PAPERS.values(), index_dir)
    assert n_docs == len(PAPERS) - 1  # c9 has no text
    return index_dir


@pytest.mark.parametrize(("k1", "b"), [(0.9, 0.4), (1.2, 0.75)])
def test_bm25_scores_equal_lucenes_own_searcher(bm25_index: Path, k1: float, b: float) -> None:
    fast = score.bm25_scores(BENCHMARK, PAPERS, bm25_index, k1, b, "impacts")
    reference = score.bm25_scores(BENCHMARK, PAPERS, bm25_index, k1, b, "lucene")
    assert set(fast) == {score_key(q, c) for q, c in PAIRS}
    assert fast == reference  # bit for bit
    assert fast[score_key("q1", "c1")] > fast[score_key("q1", "c3")] > 0
    # No shared term, or no text at all: not retrieved, score 0.
    assert fast[score_key("q1", "c5")] == 0.0
    assert fast[score_key("q1", "c9")] == 0.0


def test_bm25_scores_equal_the_searchers_hit_scores(bm25_index: Path) -> None:
    from citeval import impacts

    scores = score.bm25_scores(BENCHMARK, PAPERS, bm25_index, 0.9, 0.4, "impacts")
    with impacts.open_searcher(bm25_index, k1=0.9, b=0.4, searcher="lucene") as searcher:
        text = "Protein folding kinetics We study folding of small proteins in water."
        hits = dict(searcher.search(text, searcher.num_docs))
    for candidate in score.query_candidates(BENCHMARK)["q1"]:
        assert scores[score_key("q1", candidate)] == hits.get(candidate, 0.0)


def test_score_bm25_builds_the_same_index_in_a_temporary_folder(
    bm25_index: Path, tmp_path: Path
) -> None:
    scores = score.score_bm25(BENCHMARK, PAPERS, 0.9, 0.4, "impacts", tmp_dir=tmp_path)
    assert scores == score.bm25_scores(BENCHMARK, PAPERS, bm25_index, 0.9, 0.4, "impacts")
    assert list(tmp_path.iterdir()) == []  # the index is deleted


# --- dense -------------------------------------------------------------------------------


def _stored(tmp_path: Path, ids: list[str], vectors: np.ndarray, sentences=None) -> np.ndarray:
    """Write a store at ``tmp_path/store``; return the float32 values it holds."""
    return store_builder.write_store(
        tmp_path / "store", ids, vectors, sentences=sentences, num_shards=2
    )


@pytest.mark.parametrize("similarity", ["ip", "cosine", "l2"])
def test_dense_scores_are_the_similarity_of_the_stored_vectors(
    tmp_path: Path, similarity: str
) -> None:
    ids = sorted(PAPERS)
    raw = store_builder.random_vectors(len(ids), seed=3)
    held = _stored(tmp_path, ids, raw)  # float32 values of the float16 store
    vectors = score.stored_vectors(tmp_path / "store", ids, similarity == "cosine")
    scores = score.dense_scores(BENCHMARK, vectors, similarity)
    row = {pid: held[i].astype(np.float64) for i, pid in enumerate(ids)}
    for q, c in PAIRS:
        a, b = row[q], row[c]
        if similarity == "cosine":
            expected = a @ b / (np.linalg.norm(a) * np.linalg.norm(b))
        elif similarity == "l2":
            expected = -((a - b) ** 2).sum()
        else:
            expected = a @ b
        assert scores[score_key(q, c)] == pytest.approx(expected, rel=1e-6, abs=1e-6)


def test_multi_vector_pairs_score_their_best_sentence_pair(tmp_path: Path) -> None:
    ids = sorted(PAPERS)
    rows, sentences = [], []
    for pid in ids:
        rows += [pid] * 2
        sentences += [0, 1]
    raw = store_builder.random_vectors(len(rows), seed=5)
    held = _stored(tmp_path, rows, raw, sentences=sentences)
    vectors = score.stored_vectors(tmp_path / "store", ids, normalize=False)
    scores = score.dense_scores(BENCHMARK, vectors, "ip")
    by_paper = {pid: held[2 * i : 2 * i + 2].astype(np.float64) for i, pid in enumerate(ids)}
    for q, c in PAIRS:
        expected = max(float(a @ b) for a in by_paper[q] for b in by_paper[c])
        assert scores[score_key(q, c)] == pytest.approx(expected, rel=1e-9)


def test_stored_vectors_leave_out_papers_the_store_lacks(tmp_path: Path) -> None:
    ids = sorted(PAPERS)
    _stored(tmp_path, ids[:5], store_builder.random_vectors(5, seed=1))
    vectors = score.stored_vectors(tmp_path / "store", ids, normalize=False)
    assert sorted(vectors) == ids[:5]
    with pytest.raises(InputDataError, match="have no vector"):
        score.dense_scores(BENCHMARK, vectors, "ip")


def test_encoded_papers_score_as_the_same_vectors_read_from_a_store(
    tmp_path: Path, tiny_bert_dir: Path
) -> None:
    from citeval.models import ModelSpec

    spec = ModelSpec.from_config(
        "tiny", {"path": str(tiny_bert_dir), "pooling": "cls", "similarity": "l2"}
    )
    encoded = score.score_dense(BENCHMARK, PAPERS, spec, device="cpu")
    ids = sorted(PAPERS)
    vectors = score.encoded_vectors([PAPERS[p] for p in ids], spec, device="cpu")
    _stored(tmp_path, ids[:7], np.stack([vectors[p][0] for p in ids[:7]]))
    # Half from the store, half encoded: the same scores, as both hold float16 values.
    mixed = score.score_dense(BENCHMARK, PAPERS, spec, tmp_path / "store", device="cpu")
    assert mixed == pytest.approx(encoded, rel=1e-6)


def test_query_papers_get_the_query_prompt_when_the_prompts_differ(
    tmp_path: Path, tiny_bert_dir: Path
) -> None:
    from citeval.models import ModelSpec

    entry = {"path": str(tiny_bert_dir), "pooling": "cls", "similarity": "ip"}
    spec = ModelSpec.from_config("tiny", {**entry, "query_prompt": "Query: "})
    scores = score.score_dense(BENCHMARK, PAPERS, spec, device="cpu")
    ids = sorted(PAPERS)
    documents = score.encoded_vectors([PAPERS[p] for p in ids], spec, "cpu", role="document")
    queries = score.encoded_vectors(
        [PAPERS[q] for q in ("q1", "q2", "q3")], spec, "cpu", role="query"
    )
    assert scores == pytest.approx(score.dense_scores(BENCHMARK, documents, "ip", queries))
    # The store holds every paper with the document prompt: the queries' rows are not read.
    _stored(tmp_path, ids, np.stack([documents[p][0] for p in ids]))
    stored = score.score_dense(BENCHMARK, PAPERS, spec, tmp_path / "store", device="cpu")
    assert stored == pytest.approx(scores, rel=1e-6)
    plain = score.score_dense(BENCHMARK, PAPERS, ModelSpec.from_config("tiny", entry), device="cpu")
    assert plain != pytest.approx(scores, rel=1e-6)


# --- fusion ------------------------------------------------------------------------------


def test_rrf_scores_are_the_fusion_modules_over_each_candidate_list() -> None:
    rng = np.random.default_rng(0)
    inputs = [{score_key(q, c): float(rng.normal()) for q, c in PAIRS} for _ in range(2)]
    inputs[0][score_key("q1", "c1")] = inputs[0][score_key("q1", "c2")]  # a tie
    fused = score.rrf_scores(BENCHMARK, inputs, k=60)
    pairs = score.query_candidates(BENCHMARK)
    runs = [{q: {c: s[score_key(q, c)] for c in cs} for q, cs in pairs.items()} for s in inputs]
    expected = reciprocal_rank_fusion(runs, k=60)
    assert fused == {score_key(q, c): expected[q][c] for q, c in PAIRS}
    # By hand: a candidate ranked first by both inputs scores 2 / 61.
    assert max(fused.values()) <= 2 / 61


def test_rrf_refuses_an_input_missing_a_pair() -> None:
    inputs = [{score_key(q, c): 1.0 for q, c in PAIRS} for _ in range(2)]
    del inputs[1][score_key("q3", "c13")]
    with pytest.raises(InputDataError, match="q3_c13"):
        score.rrf_scores(BENCHMARK, inputs, k=60)


# --- command line, import mode, tables ---------------------------------------------------


def test_every_kinds_settings_flags_parse() -> None:
    """``mdcr score`` takes each kind's entry as the pipeline writes it from a config."""
    corpus = {"format": "s2orc_v2020", "paths": ["s2orc-*.jsonl.gz"]}
    config = load_config(
        {"dataset": "t", "seed": 1, "corpus": corpus, "bm25": {"k1": 1.1, "searcher": "lucene"},
         "encode": {"device": "cpu"}, "rerank": {"device": "cuda:1", "batch_size": 7}}
    )  # fmt: skip
    parser = build_parser()._subparsers._group_actions[0].choices["score"]
    wiring = ["--benchmark", "b", "--data", "d", "--model", "m", "--output", "o"]

    def parse(kind: str, argv: list[str]) -> argparse.Namespace:
        return parser.parse_args([*wiring, "--kind", kind, *argv])

    args = parse("bm25", MDCR_SCORE_BM25.argv(config))
    assert (args.k1, args.b, args.searcher) == (1.1, config.bm25.b, "lucene")
    assert parse("dense", MDCR_SCORE_DENSE.argv(config)).device == "cpu"
    args = parse("cross-encoder", MDCR_SCORE_RERANK.argv(config))
    assert (args.device, args.batch_size) == ("cuda:1", 7)
    # The token budgets are the trained model's own (its training.json), not settings.
    assert args.query_tokens is None and args.candidate_tokens is None
    assert parse("rrf", MDCR_SCORE_FUSION.argv(config, k=30)).k == 30
    assert parse("rrf", []).k == schema_default("fusion.*.k")


def _write_import(tmp_path: Path) -> tuple[Path, Path]:
    """A hand-built benchmark and data file, as a downloaded MDCR would come."""
    benchmark, data = tmp_path / "mdcr_test.json", tmp_path / "mdcr_test_data.jsonl"
    write_benchmark(BENCHMARK, benchmark)
    write_data(PAPERS.values(), data)
    return benchmark, data


def test_import_mode_scores_and_evaluates_a_published_benchmark(
    tmp_path: Path, bm25_index: Path, capsys: pytest.CaptureFixture
) -> None:
    benchmark, data = _write_import(tmp_path)
    files = {"benchmark": str(benchmark), "data": str(data)}
    common = ["score", "--benchmark", files["benchmark"], "--data", files["data"]]
    assert main([*common, "--model", "bm25", "--kind", "bm25", "--output",
                 str(tmp_path / "bm25.json"), "--k1", "1.2", "--b", "0.75"]) == 0  # fmt: skip
    bm25_scores = read_scores(tmp_path / "bm25.json")
    # The scores file round-trips exactly: the same floats as scored in memory.
    assert bm25_scores == score.bm25_scores(BENCHMARK, PAPERS, bm25_index, 1.2, 0.75, "impacts")
    # A tuning JSON's k1 and b take precedence over --k1 and --b.
    (tmp_path / "tuned.json").write_text(json.dumps({"k1": 1.2, "b": 0.75}))
    assert main([*common, "--model", "bm25", "--kind", "bm25", "--output",
                 str(tmp_path / "tuned.json.scores"), "--k1", "0.5", "--b", "0.3",
                 "--params-json", str(tmp_path / "tuned.json")]) == 0  # fmt: skip
    assert read_scores(tmp_path / "tuned.json.scores") == bm25_scores
    # A second model's scores written by hand (BM25's reversed), then RRF of both.
    other = {key: -value for key, value in bm25_scores.items()}
    (tmp_path / "other.json").write_text(json.dumps(other))
    assert main([*common, "--model", "rrf", "--kind", "rrf", "--inputs",
                 str(tmp_path / "bm25.json"), str(tmp_path / "other.json"),
                 "--output", str(tmp_path / "rrf.json")]) == 0  # fmt: skip
    assert read_scores(tmp_path / "rrf.json") == score.rrf_scores(
        BENCHMARK, [bm25_scores, other], k=60
    )
    capsys.readouterr()
    for model in ("bm25", "rrf"):
        assert main(["evaluate", "--benchmark", files["benchmark"], "--scores",
                     str(tmp_path / f"{model}.json"), "--output",
                     str(tmp_path / f"{model}.tsv")]) == 0  # fmt: skip
        printed = capsys.readouterr().out
        rows = evaluate_benchmark(BENCHMARK, read_scores(tmp_path / f"{model}.json"))
        assert printed == format_summary(rows)
        assert read_rows_tsv(tmp_path / f"{model}.tsv") == [
            type(r)(r.candidates, r.field, r.n_queries,
                    {m: float(f"{v:.10f}") for m, v in r.values.items()})
            for r in rows
        ]  # fmt: skip
    # Tables 3 and 4 from the two evaluations.
    evaluations = [f"bm25={tmp_path / 'bm25.tsv'}", f"rrf={tmp_path / 'rrf.tsv'}"]
    assert main(["tables", "--evaluations", *evaluations, "--output-dir",
                 str(tmp_path / "tables"), "--baseline", "none", "--seed", "1"]) == 0  # fmt: skip
    table3 = (tmp_path / "tables" / "table3_mdcr.tsv").read_text().splitlines()
    assert table3[0].split("\t") == [
        "model",
        *[f"{f} {m}" for f in ("Biology", "Computer Science", "AVG")
          for m in ("MAP", "NDCG", "R@5")],
    ]  # fmt: skip
    assert [line.split("\t")[0] for line in table3[1:]] == ["bm25", "rrf"]
    bm25_rows = {(r.candidates, r.field): r for r in read_rows_tsv(tmp_path / "bm25.tsv")}
    assert float(table3[1].split("\t")[-3]) == pytest.approx(
        bm25_rows[("all", "AVG")].values["map"], abs=1e-6
    )
    table4 = (tmp_path / "tables" / "table4_mdcr_types.tsv").read_text().splitlines()
    assert table4[0].split("\t")[1:4] == ["bm25 MAP", "bm25 NDCG", "bm25 R@5"]
    assert [c.split(" ")[0] for c in table4[0].split("\t")[1::3]] == ["bm25", "graph", "random"]
    assert float(table4[1].split("\t")[4]) == pytest.approx(
        bm25_rows[("graph", "AVG")].values["map"], abs=1e-6
    )
    assert (tmp_path / "tables" / "table3_mdcr.md").read_text().startswith("### Table 3")


def test_score_refuses_a_candidate_missing_from_the_data_file(tmp_path: Path) -> None:
    benchmark, data = _write_import(tmp_path)
    lines = [line for line in data.read_text().splitlines() if '"c13"' not in line]
    data.write_text("\n".join(lines) + "\n")
    code = main(["score", "--benchmark", str(benchmark), "--data", str(data), "--model",
                 "bm25", "--kind", "bm25", "--output", str(tmp_path / "s.json")])  # fmt: skip
    assert code == 2
    assert not (tmp_path / "s.json").exists()


def test_rrf_needs_two_inputs(tmp_path: Path) -> None:
    benchmark, data = _write_import(tmp_path)
    code = main(["score", "--benchmark", str(benchmark), "--data", str(data), "--model",
                 "rrf", "--kind", "rrf", "--inputs", str(tmp_path / "a.json"),
                 "--output", str(tmp_path / "s.json")])  # fmt: skip
    assert code == 2


def test_tables_refuse_an_evaluation_missing_a_field(tmp_path: Path) -> None:
    from citeval.mdcr.evaluate import write_rows_tsv

    scores = {score_key(q, c): 1.0 for q, c in PAIRS}
    rows = evaluate_benchmark(BENCHMARK, scores)
    write_rows_tsv(rows, tmp_path / "a.tsv")
    write_rows_tsv([r for r in rows if r.field != "Biology"], tmp_path / "b.tsv")
    code = main(["tables", "--evaluations", f"a={tmp_path / 'a.tsv'}",
                 f"b={tmp_path / 'b.tsv'}", "--output-dir", str(tmp_path),
                 "--seed", "1"])  # fmt: skip
    assert code == 2
    assert math.isfinite(rows[0].values["map"])


def test_dense_command_reuses_the_store_and_encodes_the_rest(
    tmp_path: Path, tiny_bert_dir: Path
) -> None:
    from citeval.models import ModelSpec

    entry = {"path": str(tiny_bert_dir), "pooling": "cls", "similarity": "cosine"}
    spec = ModelSpec.from_config("tiny", entry)
    ids = sorted(PAPERS)
    vectors = score.encoded_vectors([PAPERS[p] for p in ids], spec, device="cpu")
    _stored(tmp_path, ids[::2], np.stack([vectors[p][0] for p in ids[::2]]))
    benchmark, data = _write_import(tmp_path)
    output = tmp_path / "scores" / "tiny.json"
    store = str(tmp_path / "store")
    assert main(["score", "--benchmark", str(benchmark), "--data", str(data), "--model", "tiny",
                 "--kind", "dense", "--model-json", json.dumps(entry), "--embeddings", store,
                 "--device", "cpu", "--output", str(output)]) == 0  # fmt: skip
    scores = read_scores(output)
    # Stored or encoded, every vector is the float16 value normalised again in float32.
    normalized = score.encoded_vectors([PAPERS[p] for p in ids], spec, "cpu", normalize=True)
    assert scores == score.dense_scores(BENCHMARK, normalized, "cosine")
    assert all(-1.0 - 1e-6 <= value <= 1.0 + 1e-6 for value in scores.values())
