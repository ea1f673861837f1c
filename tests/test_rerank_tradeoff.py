"""The trade-off table and figure from hand-made metrics, benchmark and timing files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from citeval.errors import InputDataError
from citeval.metrics import write_per_query_tsv
from citeval.rerank.cli import main
from citeval.rerank.tradeoff import benchmark_seconds

BENCH_HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def _metrics(path: Path, values: dict[str, tuple[float, float]]) -> Path:
    per_query = {q: {"recall_10": r, "map": m} for q, (r, m) in values.items()}
    mean = {"recall_10": 0.0, "map": 0.0}  # the 'all' rows are not what the table reads
    write_per_query_tsv(per_query, mean, path)
    return path


def _bench(path: Path, *seconds: float) -> Path:
    rows = "".join(f"{s}\t0:00:01\t1\t1\t1\t1\t0\t0\t0\t0\n" for s in seconds)
    path.write_text(BENCH_HEADER + rows)
    return path


def _timing(path: Path, per_k: dict[int, float], pairs_per_second: float) -> Path:
    path.write_text(json.dumps({
        "pairs_per_second": pairs_per_second,
        "per_k": {str(k): {"pairs": 1, "seconds": 1.0, "seconds_per_query": v}
                  for k, v in per_k.items()},
    }))  # fmt: skip
    return path


def test_table_values_come_from_the_files(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="matplotlib is in pyproject.toml; install it")
    two = {"a": (0.5, 0.2), "b": (1.0, 0.4)}
    bm25 = _bench(tmp_path / "bm25.bench", 2.0, 4.0)  # repeats: mean 3 s
    dense = _bench(tmp_path / "dense.bench", 1.0)
    fuse = _bench(tmp_path / "fuse.bench", 0.5)
    timing = _timing(tmp_path / "bm25.json", {10: 0.25, 100: 2.5}, 40.0)
    rrf_timing = _timing(tmp_path / "rrf.json", {10: 0.5}, 20.0)
    argv = ["tradeoff",
            "--first-stage", "bm25", str(bm25),
            "--first-stage", "rrf", str(bm25), str(dense), str(fuse),
            "--entry", "bm25", "100", str(_metrics(tmp_path / "m100.tsv", two)), str(timing),
            "--entry", "bm25", "0", str(_metrics(tmp_path / "m0.tsv",
                                                 {"a": (0.0, 0.1), "b": (0.5, 0.3)})),
            "--entry", "bm25", "10", str(_metrics(tmp_path / "m10.tsv", two)), str(timing),
            "--entry", "rrf", "10", str(_metrics(tmp_path / "r10.tsv", two)), str(rrf_timing),
            "--output-dir", str(tmp_path / "out")]  # fmt: skip
    assert main(argv) == 0
    lines = (tmp_path / "out" / "tradeoff.tsv").read_text().splitlines()
    assert lines[0].split("\t") == [
        "first_stage", "k", "queries", "R@10", "MAP", "first_stage_s_per_query",
        "rerank_s_per_query", "total_s_per_query", "pairs_per_second",
    ]  # fmt: skip
    rows = [line.split("\t") for line in lines[1:]]
    assert rows == [
        ["bm25", "0", "2", "25.00", "20.00", "1.500000", "0.000000", "1.500000", ""],
        ["bm25", "10", "2", "75.00", "30.00", "1.500000", "0.250000", "1.750000", "40.0"],
        ["bm25", "100", "2", "75.00", "30.00", "1.500000", "2.500000", "4.000000", "40.0"],
        # A fusion's first stage is every job it needs: (3 + 1 + 0.5) s over 2 queries.
        ["rrf", "10", "2", "75.00", "30.00", "2.250000", "0.500000", "2.750000", "20.0"],
    ]
    markdown = (tmp_path / "out" / "tradeoff.md").read_text()
    assert "| bm25 | 0 (no rerank) | 2 | 25.00 |" in markdown
    png = (tmp_path / "out" / "tradeoff.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000


def test_a_k_missing_from_the_timing_file_is_named(tmp_path: Path) -> None:
    from citeval.rerank.tradeoff import Entry, build_rows

    timing = _timing(tmp_path / "t.json", {10: 0.1}, 5.0)
    metrics = _metrics(tmp_path / "m.tsv", {"a": (1.0, 1.0)})
    with pytest.raises(InputDataError, match=r"no timing for K=20") as error:
        build_rows({"bm25": [_bench(tmp_path / "b", 1.0)]}, [Entry("bm25", 20, metrics, timing)])
    assert error.value.path == str(timing)


def test_benchmark_files_without_seconds_are_refused(tmp_path: Path) -> None:
    (tmp_path / "b.tsv").write_text("h:m:s\n0:00:01\n")
    with pytest.raises(InputDataError, match="no column 's'"):
        benchmark_seconds(tmp_path / "b.tsv")
