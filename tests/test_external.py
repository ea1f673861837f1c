"""Users' own systems: each bad run, vector store or MDCR scores file ends in one line that
names the file, its line or row and the query or paper, with status 2; good ones import
exactly."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from citeval.external.cli import main
from citeval.trec import read_run

POOL = ["p1", "p2", "p3", "p4"]
QUERIES = ["q1", "q2"]


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    """A split with one collection: group g, rep 0, queries q1 and q2, pool p1-p4."""
    folder = tmp_path / "sample"
    folder.mkdir()
    pq.write_table(pa.table({"group": ["g", "g"], "query_id": QUERIES}), folder / "queries.parquet")
    pq.write_table(
        pa.table({"group": ["g"] * 4, "rep": [0] * 4, "paper_id": POOL}), folder / "pools.parquet"
    )
    return folder


def assert_one_error(capsys: pytest.CaptureFixture[str], message: str) -> None:
    """Exactly one line says what is wrong, said once, and no traceback."""
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and message in errors[0], err
    assert sum(message in line for line in err.splitlines()) == 1, err
    assert "Traceback" not in err


def import_run(sample: Path, text: str | bytes, *extra: str) -> tuple[int, Path]:
    source = sample.parent / "theirs.trec"
    source.write_bytes(text if isinstance(text, bytes) else text.encode())
    output = sample.parent / "out" / "mine.trec"
    argv = ["run", "--input", str(source), "--queries", str(sample / "queries.parquet")]
    argv += ["--pools", str(sample / "pools.parquet"), "--group", "g", "--rep", "0", "--k", "3"]
    argv += ["--tag", "mine", "--output", str(output), *extra]
    return main(argv), output


GOOD = "q1 Q0 p1 1 3.0 x\nq1 Q0 p2 2 2.0 x\nq1 Q0 p3 3 1.5 x\nq1 Q0 p4 4 1.0 x\nq2 Q0 p4 1 9 x\n"


def test_a_good_run_is_imported_cut_at_k_in_trec_eval_order(sample: Path) -> None:
    status, output = import_run(sample, GOOD, "--report", str(sample.parent / "report.json"))
    assert status == 0
    assert read_run(output) == {"q1": {"p1": 3.0, "p2": 2.0, "p3": 1.5}, "q2": {"p4": 9.0}}
    report = json.loads((sample.parent / "report.json").read_text())
    assert (report["queries"], report["lines"], report["queries_cut_at_k"]) == (2, 5, 1)


BAD_RUNS = {
    "five fields": ("q1 Q0 p1 1 3.0\n", "theirs.trec:1: expected 6 fields"),
    "rank not an integer": ("q1 Q0 p1 one 3.0 x\n", "theirs.trec:1 (field 'rank')"),
    "score not a number": ("q1 Q0 p1 1 high x\n", "theirs.trec:1 (field 'score')"),
    "NaN score": ("q1 Q0 p1 1 nan x\n", "theirs.trec:1 (field 'score')"),
    "infinite score": (GOOD + "q2 Q0 p1 2 inf x\n", "theirs.trec:6 (field 'score')"),
    "duplicate line": (GOOD + "q2 Q0 p4 2 1 x\n", "theirs.trec:6: duplicate document 'p4'"),
    "query outside the collection": (GOOD + "q9 Q0 p1 1 1 x\n", "theirs.trec:6: query 'q9'"),
    "paper outside the pool": (GOOD + "q2 Q0 p9 2 1 x\n", "theirs.trec:6: paper 'p9'"),
    "a query missing": ("q1 Q0 p1 1 3.0 x\n", "1 of 2 queries of collection g.rep0 have no"),
    "empty run": ("", "2 of 2 queries of collection g.rep0 have no line"),
    "not text": (b"q1 Q0 \xff 1 1 x\n", "theirs.trec: not UTF-8 text"),
}


@pytest.mark.parametrize("case", BAD_RUNS)
def test_a_bad_run_is_one_line_and_status_2(
    case: str, sample: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, message = BAD_RUNS[case]
    status, output = import_run(sample, text)
    assert status == 2
    assert_one_error(capsys, message)
    assert not output.exists()


def test_a_missing_run_file_is_named(sample: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = sample / "nope.trec"
    argv = ["run", "--input", str(source), "--queries", str(sample / "queries.parquet")]
    argv += ["--pools", str(sample / "pools.parquet"), "--group", "g", "--rep", "0"]
    argv += ["--k", "3", "--tag", "t", "--output", str(sample / "o.trec")]
    assert main(argv) == 2
    assert_one_error(capsys, f"{sample / 'nope.trec'}: cannot read")


def test_missing_queries_may_count_as_misses(sample: Path) -> None:
    report = sample.parent / "report.json"
    status, output = import_run(
        sample, "q1 Q0 p1 1 3.0 x\n", "--missing-queries", "zero", "--report", str(report)
    )
    assert status == 0 and read_run(output) == {"q1": {"p1": 3.0}}
    counted = json.loads(report.read_text())
    assert (counted["queries_missing"], counted["queries_missing_examples"]) == (1, ["q2"])


# --- vector stores -----------------------------------------------------------------------


def shard_folder(folder: Path, ids: list[str], vectors: np.ndarray, number: int = 0) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"paper_id": ids}), folder / f"shard-{number:05d}.ids.parquet")
    np.save(folder / f"shard-{number:05d}.npy", vectors)
    return folder


def vectors_parquet(path: Path, ids: list, vectors: list) -> Path:
    pq.write_table(pa.table({"paper_id": ids, "vector": vectors}), path)
    return path


def needed(tmp_path: Path, ids: list[str]) -> Path:
    path = tmp_path / "needed.parquet"
    pq.write_table(pa.table({"paper_id": ids}), path)
    return path


def import_store(tmp_path: Path, source: Path, *extra: str) -> tuple[int, Path]:
    output = tmp_path / "out" / "shard-00000.npy"
    argv = ["embeddings", "--input", str(source), "--similarity", "cosine"]
    argv += ["--ids", str(needed(tmp_path, ["a", "b"])), "--output", str(output), *extra]
    return main(argv), output


def test_a_shard_folder_and_a_parquet_file_import_alike(tmp_path: Path) -> None:
    vectors = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 2.0]], dtype=np.float32)
    folder = shard_folder(tmp_path / "folder", ["a", "b"], vectors[:2])
    shard_folder(folder, ["c"], vectors[2:], number=1)
    status, output = import_store(tmp_path, folder)
    assert status == 0
    from citeval.embeddings import EmbeddingStore

    store = EmbeddingStore(output.parent)
    assert store.dtypes == ["float32"] and store.n_rows == 3
    assert np.array_equal(np.load(output), vectors)
    parquet = vectors_parquet(tmp_path / "v.parquet", ["a", "b", "c"], vectors.tolist())
    assert import_store(tmp_path, parquet)[0] == 0
    assert np.array_equal(np.load(output), vectors)
    half = shard_folder(tmp_path / "half", ["a", "b"], vectors[:2].astype(np.float16))
    assert import_store(tmp_path, half)[0] == 0
    assert np.load(output).dtype == np.float16


def bad_stores(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    good = np.ones((2, 3), dtype=np.float32)
    nan = good.copy()
    nan[1, 2] = np.nan
    ragged = vectors_parquet(tmp_path / "ragged.parquet", ["a", "b"], [[1.0, 2.0], [1.0]])
    no_ids = tmp_path / "no-ids"
    no_ids.mkdir()
    np.save(no_ids / "shard-00000.npy", good)
    two_dims = shard_folder(tmp_path / "two-dims", ["a"], good[:1])
    shard_folder(two_dims, ["b"], np.ones((1, 4), dtype=np.float32), number=1)
    multi = tmp_path / "multi"
    multi.mkdir()
    pq.write_table(pa.table({"paper_id": ["a", "a"], "sentence": pa.array([0, 1], pa.int32())}),
                   multi / "shard-00000.ids.parquet")  # fmt: skip
    np.save(multi / "shard-00000.npy", good)
    empty = tmp_path / "empty"
    empty.mkdir()
    text = tmp_path / "vectors.txt"
    text.write_text("a 1 2 3\n")
    return {
        "no such path": (tmp_path / "nope", "nope: no such file or folder"),
        "not a store": (text, "a folder of shard-NNNNN.npy files or one .parquet file"),
        "no shards": (empty, "no shard-NNNNN.npy files"),
        "shard without ids": (no_ids, "shard has no id table"),
        "shards of two dimensions": (two_dims, "shards disagree on the dimension"),
        "multi-vector": (multi, "one vector a paper"),
        "NaN vector": (shard_folder(tmp_path / "nan", ["a", "b"], nan), "row 2 (paper 'b'): NaN"),
        "infinite vector": (
            vectors_parquet(tmp_path / "inf.parquet", ["a", "b"], [[1.0], [float("inf")]]),
            "row 2 (paper 'b'): NaN or infinite",
        ),
        "zero vector under cosine": (
            vectors_parquet(tmp_path / "zero.parquet", ["a", "b"], [[1.0, 0.0], [0.0, 0.0]]),
            "row 2 (paper 'b'): a zero vector",
        ),
        "ragged vectors": (ragged, "row 2 (paper 'b'): a vector of 1 values where row 1 has 2"),
        "null vector": (
            vectors_parquet(tmp_path / "null.parquet", ["a", "b"], [[1.0], None]),
            "row 2: vector is null",
        ),
        "null id": (
            vectors_parquet(tmp_path / "null-id.parquet", ["a", None], [[1.0], [2.0]]),
            "row 2: paper_id is null",
        ),
        "no vector column": (needed(tmp_path, ["a"]), "no vector column"),
        "vector of strings": (
            vectors_parquet(tmp_path / "str.parquet", ["a"], [["x"]]),
            "vector must be a list of numbers",
        ),
        "repeated id": (
            shard_folder(tmp_path / "dup", ["a", "b", "a"], np.ones((3, 2), np.float32)),
            "paper 'a' has 2 vectors (rows 1, 3",
        ),
        "a needed paper missing": (
            shard_folder(tmp_path / "short", ["a", "c"], good),
            "1 of the 2 papers the collections need have no vector, e.g. ['b']",
        ),
        "an empty store": (
            vectors_parquet(
                tmp_path / "none.parquet",
                pa.array([], pa.string()),
                pa.array([], pa.list_(pa.float32())),
            ),
            "the store holds no vector",
        ),
    }


def test_each_bad_store_is_one_line_and_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for case, (source, message) in bad_stores(tmp_path).items():
        status, output = import_store(tmp_path, source)
        assert status == 2, case
        assert_one_error(capsys, message)
        assert not output.exists() and not output.with_suffix(".ids.parquet").exists(), case


# --- MDCR scores -------------------------------------------------------------------------


@pytest.fixture
def benchmark(tmp_path: Path) -> Path:
    path = tmp_path / "mdcr_test.json"
    path.write_text(json.dumps({"Art": {"q": {"true": ["a"], "random": ["b"]}}}))
    return path


BAD_SCORES = {
    "not JSON": ('{"q_a": 1,', "is not valid JSON"),
    "not an object": ("[1, 2]", "must be a JSON object"),
    "a pair missing": ('{"q_a": 1}', "no score for 1 query–candidate pairs, first: 'q_b'"),
    "a score not finite": ('{"q_a": 1, "q_b": NaN}', "(field 'q_b'): score is not a finite"),
    "a score not a number": ('{"q_a": 1, "q_b": "high"}', "(field 'q_b')"),
    "another benchmark's pair": ('{"q_a": 1, "q_b": 0, "x_y": 2}', "1 keys are no query"),
}


@pytest.mark.parametrize("case", BAD_SCORES)
def test_bad_mdcr_scores_are_one_line_and_status_2(
    case: str, benchmark: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, message = BAD_SCORES[case]
    source = benchmark.parent / "theirs.json"
    source.write_text(text)
    output = benchmark.parent / "scores.json"
    argv = ["mdcr-scores", "--input", str(source), "--benchmark", str(benchmark)]
    assert main([*argv, "--output", str(output)]) == 2
    assert_one_error(capsys, message)
    assert not output.exists()


def test_good_mdcr_scores_are_imported(benchmark: Path) -> None:
    source = benchmark.parent / "theirs.json"
    source.write_text('{"q_b": 0.5, "q_a": 2}')
    output = benchmark.parent / "scores.json"
    argv = ["mdcr-scores", "--input", str(source), "--benchmark", str(benchmark)]
    assert main([*argv, "--output", str(output)]) == 0
    assert json.loads(output.read_text()) == {"q_a": 2.0, "q_b": 0.5}


def test_a_users_command_gets_its_paths_shell_quoted() -> None:
    from citeval.commands import fill_command

    command = fill_command(
        "embed --papers {papers} --contexts {contexts} --out {store} --k {k}",
        papers="results/my corpus/papers",
        contexts=["a/query_papers", "b c/query_papers"],
        store="out",
        k=100,
    )
    assert command == (
        "embed --papers 'results/my corpus/papers' --contexts a/query_papers "
        "'b c/query_papers' --out out --k 100"
    )
