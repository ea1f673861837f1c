"""Measure the CPU floor of ingestion: the work every S2ORC v2020 paper needs at minimum.

Times, on one thread and per paper, the steps no design of ``citeval.ingest`` can skip:

- ``gunzip``: decompressing the shard (isal, as ``ingest parse`` does);
- ``json_decode``: decoding its lines into the fields ingest reads, as ``ingest parse``
  does: msgspec, whole chunks at once into records (their conversion to Arrow is not
  timed);
- ``encode_papers``: writing the papers table's columns to parquet with the corpus
  options (zstd, dictionaries, statistics), rows sorted by paper_id as in the corpus;
- ``encode_citations``: writing the citations table (outbound lists, sorted) likewise.

Their sum is what a paper costs before any staging, deduplication, id resolution or
sorting (the cyclic GC is off, as in ``ingest parse``); ``floor_papers_per_s`` is what
two cores would reach if that were all. Compare
with ``papers_per_cpu_s`` of ``bench_ingest.py`` on the same corpus (read from its JSON
when present). Sorting is not timed, nor is building the Arrow arrays from msgspec's
records.

    python benchmarks/bench_ingest_floor.py --num-papers 2000000 --num-shards 8

Writes ``benchmarks/out/ingest-floor-<papers>[-<density>].json``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import msgspec
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from bench_ingest import OUT, synthetic_inputs
from isal import igzip

from citeval.ingest.formats import V2020Paper
from citeval.ingest.lines import CHUNK_BYTES
from citeval.ingest.schemas import (
    CITATIONS_ROW_GROUP,
    CITATIONS_SCHEMA,
    CORPUS_PARQUET_OPTIONS,
    PAPERS_ROW_GROUP,
    PAPERS_SCHEMA,
    STAGE_PAPERS_SCHEMA,
)
from citeval.synth import DENSITIES

# The staged columns, without _line.
DECODED_SCHEMA = pa.schema(list(STAGE_PAPERS_SCHEMA)[:-1])


class Timer:
    """Accumulates this thread's CPU seconds per step."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def add(self, step: str, started: float) -> None:
        self.seconds[step] = self.seconds.get(step, 0.0) + time.thread_time() - started


def decode(data: bytes, decoder: msgspec.json.Decoder, timer: Timer) -> pa.Table:
    """One chunk of complete lines as the staged columns; only the decoding is timed."""
    started = time.thread_time()
    records = decoder.decode_lines(data)
    timer.add("json_decode", started)
    fields = [r.mag_field_of_study or [] for r in records]
    return pa.Table.from_pylist(
        [
            {
                "paper_id": r.paper_id,
                "title": r.title,
                "abstract": r.abstract,
                "year": r.year,
                "fields": f,
                "outbound_citations": r.outbound_citations,
                "inbound_citations": r.inbound_citations,
            }
            for r, f in zip(records, fields, strict=True)
        ],
        schema=DECODED_SCHEMA,
    )


def decoded_chunks(path: Path, timer: Timer) -> list[pa.Table]:
    """Every record of one shard, timing decompression and decoding apart."""
    decoder = msgspec.json.Decoder(V2020Paper)
    chunks, rest = [], b""
    with igzip.open(path, "rb") as stream:
        while True:
            started = time.thread_time()
            data = stream.read(CHUNK_BYTES)
            timer.add("gunzip", started)
            if not data:
                break
            data = rest + data
            cut = data.rfind(b"\n") + 1
            data, rest = data[:cut], data[cut:]
            chunks.append(decode(data, decoder, timer))
    if rest.strip():
        chunks.append(decode(rest, decoder, timer))
    return chunks


def tables(chunks: list[pa.Table]) -> tuple[pa.Table, pa.Table]:
    """(papers, citations) of one shard as the corpus holds them, sorted (not timed)."""
    decoded = pa.concat_tables(chunks).combine_chunks()
    zeros = pa.array([0] * decoded.num_rows, pa.int32())
    papers = pa.table(
        [*(decoded.column(name) for name in PAPERS_SCHEMA.names[:5]), zeros, zeros],
        schema=PAPERS_SCHEMA,
    )
    outbound = decoded.column("outbound_citations").combine_chunks()
    citing = decoded.column("paper_id").take(pc.list_parent_indices(outbound))
    citations = pa.table([citing, pc.list_flatten(outbound)], schema=CITATIONS_SCHEMA)
    papers = papers.take(pc.sort_indices(papers, [("paper_id", "ascending")]))
    order = pc.sort_indices(citations, [("citing_id", "ascending"), ("cited_id", "ascending")])
    return papers, citations.take(order)


def encode(table: pa.Table, what: str, row_group: int, directory: Path, timer: Timer) -> int:
    path = directory / f"{what}.parquet"
    started = time.thread_time()
    with pq.ParquetWriter(path, table.schema, **CORPUS_PARQUET_OPTIONS[what]) as writer:
        writer.write_table(table, row_group_size=row_group)
    timer.add(f"encode_{what}", started)
    size = path.stat().st_size
    path.unlink()
    return size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-papers", type=int, default=2_000_000)
    parser.add_argument("--num-shards", type=int, default=8)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--density", choices=sorted(DENSITIES), default="default")
    parser.add_argument("--shards", type=int, default=2, help="shards measured (of the corpus)")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)

    inputs = synthetic_inputs(args.num_papers, args.num_shards, args.seed, args.density)
    inputs = inputs[: args.shards]
    label = args.num_papers if args.density == "default" else f"{args.num_papers}-{args.density}"
    gc.disable()  # as ingest parse does: the records hold no cycles
    timer = Timer()
    papers = citations = 0
    with tempfile.TemporaryDirectory(dir=OUT) as scratch:
        for path in inputs:
            chunks = decoded_chunks(path, timer)
            papers_table, citations_table = tables(chunks)
            del chunks
            encode(papers_table, "papers", PAPERS_ROW_GROUP, Path(scratch), timer)
            encode(citations_table, "citations", CITATIONS_ROW_GROUP, Path(scratch), timer)
            papers += papers_table.num_rows
            citations += citations_table.num_rows
    per_paper = {step: round(s / papers * 1e6, 2) for step, s in timer.seconds.items()}
    floor = sum(timer.seconds.values()) / papers
    result = {
        "papers": papers,
        "citations": citations,
        "inputs": [str(p) for p in inputs],
        "cpu_us_per_paper": per_paper,
        "floor_cpu_us_per_paper": round(floor * 1e6, 2),
        "floor_papers_per_s": {"1_core": round(1 / floor), "2_cores": round(2 / floor)},
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "unix_time": int(time.time()),
    }
    pipeline = OUT / f"ingest-{label}.json"
    if pipeline.is_file():
        measured = json.loads(pipeline.read_text())
        result["pipeline"] = {
            "source": str(pipeline.relative_to(OUT.parent.parent)),
            "papers_per_s": measured["papers_per_s"],
            "papers_per_cpu_s": measured["papers_per_cpu_s"],
            "cpu_us_per_paper": round(1e6 / measured["papers_per_cpu_s"], 2),
        }
    output = args.output or OUT / f"ingest-floor-{label}.json"
    output.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
