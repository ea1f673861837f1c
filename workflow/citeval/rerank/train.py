"""Train the cross-encoder reranker on first-stage runs of the training split (paper §4.2).

    python -m citeval.rerank train --run RUN.trec --qrels QRELS.qrels [--run ... --qrels ...] \
        --papers corpus/papers --output-dir OUT --seed SEED [settings] \
        [--save-steps N] [--logging-steps N] [--keep-checkpoints]

The settings (``--base-model``, ``--top``, ``--learning-rate``, ...) are the config keys
of :data:`citeval.stages.RERANK_TRAIN`, with the schema's defaults (:mod:`citeval.rerank.cli`).

Pairs. For each query of each run, its top ``--top`` documents (trec_eval's order); a
document the query's qrels judge ``rel > 0`` is a positive (label 1), every other one a
negative (0). Classes are not rebalanced (the paper's §5.2: adding positives or random
negatives ruined the model). A (query, candidate) pair found in several runs is taken
once, positive if any of its qrels says so. Pairs are sorted by (query, candidate).

Optimisation. Binary cross-entropy on the logit
(``sentence_transformers.cross_encoder.losses.BinaryCrossEntropyLoss``); AdamW (β 0.9,
0.999, decoupled weight decay on every weight but biases and LayerNorm), linear warm-up
then linear decay to 0 (``transformers.get_linear_schedule_with_warmup``), gradient norm
clipped at 1.0; dropout set in the model config (hidden, attention, classifier). The
paper's values are the schema's defaults: learning rate 3e-6, weight decay 0.01, dropout
0.1, 10,000 warm-up steps, batch 128, about one epoch. ``--max-steps`` N >= 1 overrides
``--epochs``; -1 lets the epochs decide.

Why not ``CrossEncoderTrainer``. It runs on transformers' ``Trainer``, which needs the
``accelerate`` and ``datasets`` packages; neither is in the pinned environment (and
nothing may be downloaded here). The loop below is the same recipe on the same
CrossEncoder and loss, written out: every step's batch comes from a seeded permutation
per epoch (``numpy.random.default_rng([seed, epoch])``), the classifier head is drawn
after ``torch.manual_seed(seed)``, so the same seed gives the same weights on CPU.

Output folder (``--output-dir OUT``):

* ``OUT/checkpoint-<step>/state.pt`` every ``--save-steps`` steps (model, optimizer,
  scheduler, torch generator state, losses so far), written atomically; only the latest
  is kept. A restarted job resumes from the latest checkpoint; its settings and pair
  count must match the checkpoint's.
* ``OUT/model/``: the final CrossEncoder folder (loadable by ``CrossEncoder(path)`` and by
  ``citeval.rerank rerank --model``) with ``training.json`` (pairs, positives, queries,
  steps, losses per logging step, seconds, settings). It is written to a temporary folder
  and renamed, so its presence means the run finished: a finished run is never redone.
  Checkpoints are deleted afterwards unless ``--keep-checkpoints``.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from citeval.errors import CitevalError, InputDataError
from citeval.io import atomic_path, write_json
from citeval.rerank.data import check_in_corpus, read_papers, read_ranked_run, run_ids
from citeval.trec import read_qrels

LOG = logging.getLogger(__name__)

FINAL_DIR = "model"
# Not config settings: the command's defaults for these are these constants.
SAVE_STEPS = 500
LOGGING_STEPS = 50
TRAINING_JSON = "training.json"
CHECKPOINT_PREFIX = "checkpoint-"
STATE_FILE = "state.pt"


@dataclass(frozen=True, kw_only=True)
class TrainSettings:
    """Everything that decides the trained weights (recorded in ``training.json``).

    The fields but ``max_grad_norm`` are config settings (``rerank.model``,
    ``rerank.base_layers`` (None: all layers), ``rerank.train.*``, ``rerank.query_tokens``,
    ``rerank.candidate_tokens``, ``seed``) and have no default here: the schema's are the
    only ones. ``max_steps`` -1 lets ``epochs`` decide.
    """

    base_model: str
    base_layers: int | None
    top: int
    learning_rate: float
    weight_decay: float
    dropout: float
    warmup_steps: int
    batch_size: int
    epochs: int
    max_steps: int
    seed: int
    query_tokens: int
    candidate_tokens: int
    max_grad_norm: float = 1.0

    def __post_init__(self) -> None:
        if self.max_steps != -1 and self.max_steps < 1:
            raise CitevalError(
                f"max_steps must be -1 (the epochs decide) or at least 1, got {self.max_steps}"
            )


@dataclass(frozen=True)
class Pair:
    query_id: str
    candidate_id: str
    label: int


def build_pairs(
    runs: Sequence[tuple[str | os.PathLike, dict[str, list[tuple[str, float]]]]],
    qrels: Sequence[dict[str, dict[str, int]]],
    top: int,
) -> list[Pair]:
    """Distinct (query, candidate) pairs of the top ``top`` of each run, labelled by qrels."""
    labels: dict[tuple[str, str], int] = {}
    for (path, run), judged in zip(runs, qrels, strict=True):
        if not run:
            raise InputDataError("the run has no queries", path=str(path))
        for qid, ranked in run.items():
            relevant = judged.get(qid, {})
            for doc_id, _ in ranked[:top]:
                label = int(relevant.get(doc_id, 0) > 0)
                labels[(qid, doc_id)] = max(labels.get((qid, doc_id), 0), label)
    pairs = [Pair(q, c, label) for (q, c), label in sorted(labels.items())]
    if not any(p.label for p in pairs):
        raise InputDataError(
            f"no positive pair among the top {top} of the runs: no cited paper was retrieved "
            f"({', '.join(str(p) for p, _ in runs)})"
        )
    return pairs


def total_steps(n_pairs: int, settings: TrainSettings) -> tuple[int, int]:
    """``(steps per epoch, total steps)``; ``max_steps`` overrides ``epochs`` unless -1."""
    per_epoch = math.ceil(n_pairs / settings.batch_size)
    total = per_epoch * settings.epochs if settings.max_steps == -1 else settings.max_steps
    return per_epoch, total


def batch_indices(step: int, n_pairs: int, per_epoch: int, settings: TrainSettings) -> np.ndarray:
    """The pair indices of (0-based) ``step``: a seeded permutation per epoch, cut in batches."""
    epoch, position = divmod(step, per_epoch)
    order = np.random.default_rng([settings.seed, epoch]).permutation(n_pairs)
    return order[position * settings.batch_size : (position + 1) * settings.batch_size]


def latest_checkpoint(output_dir: str | os.PathLike) -> Path | None:
    """The checkpoint folder with the highest step in ``output_dir`` (or None)."""
    found = []
    for path in Path(output_dir).glob(f"{CHECKPOINT_PREFIX}*"):
        suffix = path.name[len(CHECKPOINT_PREFIX) :]
        if suffix.isdigit() and (path / STATE_FILE).is_file():
            found.append((int(suffix), path))
    return max(found)[1] if found else None


def _optimizer(model: Any, settings: TrainSettings) -> Any:
    import torch

    decay, no_decay = [], []
    for name, parameter in model.named_parameters():
        if not parameter.requires_grad:
            continue
        if name.endswith("bias") or "LayerNorm" in name or "layer_norm" in name:
            no_decay.append(parameter)
        else:
            decay.append(parameter)
    groups = [
        {"params": decay, "weight_decay": settings.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=settings.learning_rate, betas=(0.9, 0.999), eps=1e-8)


def _fingerprint(settings: TrainSettings, pairs: Sequence[Pair]) -> dict[str, Any]:
    return {
        "settings": dataclasses.asdict(settings),
        "pairs": len(pairs),
        "positives": sum(p.label for p in pairs),
    }


def train(
    pairs: Sequence[Pair],
    texts: dict[str, tuple[str | None, str | None]],
    settings: TrainSettings,
    output_dir: str | os.PathLike,
    *,
    device: str,
    save_steps: int = SAVE_STEPS,
    logging_steps: int = LOGGING_STEPS,
    keep_checkpoints: bool = False,
    on_step: Callable[[int, float], None] | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Train on ``pairs`` and write ``output_dir/model``; return the ``training.json`` record.

    ``on_step(step, loss)`` is called after each optimiser step (1-based step); tests use
    it to simulate an interrupted job.
    """
    import torch
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss
    from tqdm import tqdm
    from transformers import get_linear_schedule_with_warmup

    from citeval.rerank.model import Reranker

    output = Path(output_dir)
    final = output / FINAL_DIR
    if (final / TRAINING_JSON).is_file():
        LOG.info("%s is finished (it has %s): nothing to do", final, TRAINING_JSON)
        return {}
    output.mkdir(parents=True, exist_ok=True)
    per_epoch, steps = total_steps(len(pairs), settings)
    if steps < 1:
        raise CitevalError("nothing to train: 0 steps")
    if settings.warmup_steps >= steps:
        LOG.warning(
            "warm-up (%d steps) is not shorter than the run (%d steps): the learning rate "
            "never reaches %g",
            settings.warmup_steps,
            steps,
            settings.learning_rate,
        )
    torch.manual_seed(settings.seed)
    reranker = Reranker(
        settings.base_model,
        query_tokens=settings.query_tokens,
        candidate_tokens=settings.candidate_tokens,
        batch_size=settings.batch_size,
        device=device,
        dropout=settings.dropout,
        layers=settings.base_layers,
    )
    model = reranker.model
    pair_texts, _ = reranker.prepare(
        [reranker.text(*texts[p.query_id]) for p in pairs],
        [reranker.text(*texts[p.candidate_id]) for p in pairs],
    )
    labels = torch.tensor([p.label for p in pairs], dtype=torch.float32)
    loss_fn = BinaryCrossEntropyLoss(model)
    optimizer = _optimizer(model, settings)
    scheduler = get_linear_schedule_with_warmup(optimizer, settings.warmup_steps, steps)
    fingerprint = _fingerprint(settings, pairs)

    start, log_rows, seconds_before, window = 0, [], 0.0, []
    resumed_from = None
    checkpoint = latest_checkpoint(output)
    if checkpoint is not None:
        state = torch.load(
            checkpoint / STATE_FILE, map_location=reranker.device, weights_only=False
        )
        if state["fingerprint"] != fingerprint:
            raise CitevalError(
                f"{checkpoint} was written with other settings or pairs "
                f"({state['fingerprint']} vs {fingerprint}); delete it to start afresh"
            )
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        torch.set_rng_state(state["torch_rng"])
        start, log_rows, window = state["step"], state["log"], state["window"]
        seconds_before = state["seconds"]
        resumed_from = str(checkpoint)
        LOG.info("resuming from %s (step %d of %d)", checkpoint, start, steps)

    LOG.info(
        "training on %d pairs (%d positives), %d steps of %d, %d steps per epoch",
        len(pairs),
        fingerprint["positives"],
        steps,
        settings.batch_size,
        per_epoch,
    )
    model.train()
    began = time.perf_counter()
    with tqdm(total=steps, initial=start, unit="step", desc="train", mininterval=5.0) as bar:
        for step in range(start, steps):
            members = batch_indices(step, len(pairs), per_epoch, settings)
            batch_pairs = [pair_texts[i] for i in members]
            loss = loss_fn(
                [[q for q, _ in batch_pairs], [c for _, c in batch_pairs]],
                labels[members].to(reranker.device),
            )
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), settings.max_grad_norm)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            value = float(loss.detach())
            window.append(value)
            done = step + 1
            bar.update(1)
            if done % logging_steps == 0 or done == steps:
                row = {
                    "step": done,
                    "loss": math.fsum(window) / len(window),
                    "lr": scheduler.get_last_lr()[0],
                }
                log_rows.append(row)
                window = []
                LOG.info("step %d: loss %.4f, lr %.3g", done, row["loss"], row["lr"])
            if done % save_steps == 0 and done < steps:
                _save_checkpoint(
                    output,
                    done,
                    {
                        "step": done,
                        "model": model.state_dict(),
                        "optimizer": optimizer.state_dict(),
                        "scheduler": scheduler.state_dict(),
                        "torch_rng": torch.get_rng_state(),
                        "log": log_rows,
                        "window": window,
                        "seconds": seconds_before + time.perf_counter() - began,
                        "fingerprint": fingerprint,
                    },
                )
            if on_step is not None:
                on_step(done, value)
    model.eval()
    record = {
        **fingerprint,
        "queries": len({p.query_id for p in pairs}),
        "steps": steps,
        "steps_per_epoch": per_epoch,
        "losses": log_rows,
        "seconds": seconds_before + time.perf_counter() - began,
        "resumed_from": resumed_from,
        "device": str(reranker.device),
        **(extra or {}),
    }
    with atomic_path(final) as tmp:
        model.save(str(tmp))
        write_json(record, tmp / TRAINING_JSON)
    LOG.info("wrote %s (%.1f s of training)", final, record["seconds"])
    if not keep_checkpoints:
        for path in output.glob(f"{CHECKPOINT_PREFIX}*"):
            shutil.rmtree(path, ignore_errors=True)
    return record


def _save_checkpoint(output: Path, step: int, state: dict[str, Any]) -> None:
    import torch

    with atomic_path(output / f"{CHECKPOINT_PREFIX}{step}") as tmp:
        tmp.mkdir()
        torch.save(state, tmp / STATE_FILE)
    for path in output.glob(f"{CHECKPOINT_PREFIX}*"):
        if path.name != f"{CHECKPOINT_PREFIX}{step}":
            shutil.rmtree(path, ignore_errors=True)
    LOG.info("checkpoint at step %d", step)


def load_training_data(
    run_paths: Sequence[str | os.PathLike],
    qrels_paths: Sequence[str | os.PathLike],
    papers_dir: str | os.PathLike,
    top: int,
) -> tuple[list[Pair], dict[str, tuple[str | None, str | None]]]:
    """Read and check the runs, qrels and the papers the pairs need."""
    if len(run_paths) != len(qrels_paths) or not run_paths:
        raise CitevalError(
            f"give one --qrels per --run (got {len(run_paths)} runs, {len(qrels_paths)} qrels)"
        )
    runs = [(path, read_ranked_run(path)) for path in run_paths]
    qrels = [read_qrels(path) for path in qrels_paths]
    pairs = build_pairs(runs, qrels, top)
    texts = read_papers(papers_dir, run_ids([run for _, run in runs], top))
    for path, run in runs:
        check_in_corpus(run, path, texts, top)
    return pairs, texts
