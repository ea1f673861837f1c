"""What the two trainers share: the step-count rule, the trainer's loop arguments and
resumption from checkpoints.

Encoders (:mod:`citeval.train.fit`) and the reranker (:mod:`citeval.rerank.train`) both run
on sentence-transformers' trainers (transformers' ``Trainer``); the loop is set up the same
way for both, so a checkpoint, a seed or a step limit means the same in either.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from citeval.curves import evaluation_arguments
from citeval.errors import CitevalError, ConfigError
from citeval.io import write_json

LOG = logging.getLogger(__name__)

# Data-loader processes on CUDA: tokenizing the next batches overlaps the GPU's step.
CUDA_LOADER_WORKERS = 2
# Longer than any model's input: the collator cuts it to the model's limit.
WORST_CASE_TEXT = "word " * 4096
# A micro-batch fits when its peak memory plus the optimizer's state is within this share
# of the card (the rest absorbs fragmentation and longer-lived buffers).
MEMORY_SHARE = 0.9
FINGERPRINT_JSON = "fingerprint.json"
# transformers writes this file last when it saves a checkpoint.
TRAINER_STATE = "trainer_state.json"


def check_max_steps(max_steps: int) -> None:
    """-1 lets the epochs decide; N >= 1 stops after N optimizer steps."""
    if max_steps != -1 and max_steps < 1:
        raise ConfigError(
            f"max_steps must be -1 (the epochs decide) or at least 1, got {max_steps}"
        )


def loop_arguments(
    settings: Any,
    checkpoints: str,
    *,
    device: Any,
    batch: tuple[int, int],
    logging_steps: int,
    validation_metric: str,
    resuming: bool,
    collator_tokenizes: bool = True,
) -> dict[str, Any]:
    """Training-arguments keywords from ``settings`` (``epochs``, ``max_steps``,
    ``learning_rate``, ``weight_decay``, ``warmup_steps``, ``eval_steps``, ``seed``) and
    ``batch`` (micro-batch, accumulation steps).

    Linear warm-up and decay; the data order and the initialisation follow the seed, so a
    seed gives the same model on the same hardware. On CUDA: bf16 where the card has it,
    else fp16 (mixed precision over float32 weights), and, when the data collator
    tokenizes (``collator_tokenizes``), two data-loader workers that tokenize the next
    batches while the GPU works (the order is the sampler's, in the main process, either
    way). A checkpoint and a validation point every ``eval_steps``
    (:func:`citeval.curves.evaluation_arguments`, ``validation_metric`` choosing the best),
    the training loss logged at least that often.
    """
    on_cuda = device.type == "cuda"
    bf16 = on_cuda and _bf16_supported()
    micro_batch, accumulation = batch
    return {
        "output_dir": checkpoints,
        "num_train_epochs": settings.epochs,
        "max_steps": settings.max_steps,
        "per_device_train_batch_size": micro_batch,
        "gradient_accumulation_steps": accumulation,
        "learning_rate": settings.learning_rate,
        "weight_decay": settings.weight_decay,
        "warmup_steps": settings.warmup_steps,
        "lr_scheduler_type": "linear",
        "seed": settings.seed,
        "data_seed": settings.seed,
        "bf16": bf16,
        "fp16": on_cuda and not bf16,
        "use_cpu": not on_cuda,
        "save_strategy": "steps",
        "save_steps": settings.eval_steps,
        # Two, not one: with one, transformers deletes the latest checkpoint at the end
        # when another is the best, and a job killed before its model folder is written
        # would redo its last steps. The best is kept besides these.
        "save_total_limit": 2,
        "logging_steps": min(logging_steps, settings.eval_steps),
        **evaluation_arguments(settings.eval_steps, validation_metric, resuming=resuming),
        "report_to": "none",
        "dataloader_num_workers": _loader_workers(on_cuda and collator_tokenizes),
        "dataloader_pin_memory": on_cuda,
    }


def _loader_workers(on_cuda: bool) -> int:
    """Forked loader workers on CUDA, unless the tokenizer was told to stay parallel after
    a fork (``TOKENIZERS_PARALLELISM=true``): its thread pool then deadlocks in the
    workers, and training hangs at its first step without a word."""
    if not on_cuda:
        return 0
    if os.environ.get("TOKENIZERS_PARALLELISM", "").lower() in ("1", "true"):
        LOG.warning(
            "TOKENIZERS_PARALLELISM=true: the data-loader workers would deadlock in the "
            "tokenizer; tokenizing in the main process instead"
        )
        return 0
    return CUDA_LOADER_WORKERS


def precision(device: Any) -> str:
    """The training precision :func:`loop_arguments` picks (recorded in training.json)."""
    if device.type != "cuda":
        return "float32"
    return "bf16 mixed" if _bf16_supported() else "fp16 mixed"


def _bf16_supported() -> bool:
    import torch

    return bool(torch.cuda.is_bf16_supported())


def fitted_trainer(
    make_trainer: Callable[[int, int], Any],
    batch: tuple[int, int],
    *,
    device: Any,
    refit: bool,
) -> tuple[Any, tuple[int, int]]:
    """The trainer ``make_trainer(micro_batch, accumulation)`` and the split it got.

    On CPU, or when ``refit`` is False (a loss whose value depends on the micro-batch,
    such as in-batch negatives), the configured ``batch`` is kept. On CUDA the effective
    batch (micro-batch × accumulation, the optimizer's batch) is re-split into the
    largest micro-batch that trains within the card's memory: each candidate divisor is
    tried, from the whole batch down, on a worst-case batch (every text at the model's
    length limit, under the training's mixed precision), with room left for the
    optimizer's state. The loss is a mean over the batch, so the gradients are those of
    the configured batch, but for an epoch's last, ragged step (the trainer averages its
    micro-batches' means, not its rows).
    """
    if device.type != "cuda" or not refit:
        return make_trainer(*batch), batch
    effective = batch[0] * batch[1]
    for micro_batch in (size for size in range(effective, 0, -1) if effective % size == 0):
        trainer = make_trainer(micro_batch, effective // micro_batch)
        if micro_batch == 1 or _fits(trainer, micro_batch, device):
            LOG.info(
                "effective batch %d: micro-batches of %d, %d accumulation steps",
                effective,
                micro_batch,
                effective // micro_batch,
            )
            return trainer, (micro_batch, effective // micro_batch)
    raise AssertionError("unreachable: a micro-batch of 1 is always returned")


def _fits(trainer: Any, micro_batch: int, device: Any) -> bool:
    """Whether a forward and backward pass of ``micro_batch`` worst-case rows fits, with
    the optimizer's two float32 moments per weight on top."""
    import torch
    from sentence_transformers.util import batch_to_device

    row = {
        key: WORST_CASE_TEXT if isinstance(value, str) else value
        for key, value in trainer.train_dataset[0].items()
    }
    model = trainer.model
    moments = 2 * 4 * sum(p.numel() for p in model.parameters() if p.requires_grad)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)
    # The probe's dropout must not advance the generator the training draws from.
    with torch.random.fork_rng(devices=[torch.cuda.current_device()]):
        try:
            inputs = batch_to_device(trainer.data_collator([row] * micro_batch), device)
            model.train()
            # The training's mixed precision (the trainer applies it only inside train()).
            half = torch.bfloat16 if trainer.args.bf16 else torch.float16
            with torch.autocast("cuda", dtype=half, enabled=trainer.args.bf16 or trainer.args.fp16):
                loss = trainer.compute_loss(model, inputs)
            loss.backward()
            peak = torch.cuda.max_memory_allocated(device)
        except RuntimeError as error:
            # torch.OutOfMemoryError, or a library's allocation failure (cuBLAS, cuDNN).
            if not isinstance(error, torch.OutOfMemoryError) and not any(
                sign in str(error) for sign in ("out of memory", "ALLOC_FAILED")
            ):
                raise
            peak = None
        finally:
            model.zero_grad(set_to_none=True)
            loss = inputs = None
            torch.cuda.empty_cache()
    total = torch.cuda.get_device_properties(device).total_memory
    return peak is not None and peak + moments <= MEMORY_SHARE * total


def last_checkpoint(checkpoints: Path) -> Path | None:
    """The latest complete checkpoint under ``checkpoints`` (None: none).

    A checkpoint folder without ``trainer_state.json`` was being written when the job died:
    it is removed, and the one before it (kept until a save completes) is taken.
    """
    from transformers.trainer_utils import get_last_checkpoint

    while checkpoints.is_dir():
        found = get_last_checkpoint(str(checkpoints))
        if found is None:
            return None
        path = Path(found)
        if (path / TRAINER_STATE).is_file():
            return path
        LOG.warning("%s is incomplete (no %s): removing it", path, TRAINER_STATE)
        shutil.rmtree(path)
    return None


def check_fingerprint(checkpoints: Path, expected: dict[str, Any], resume: Path | None) -> None:
    """Refuse checkpoints written with other settings or data; record ours otherwise.

    ``expected`` is what decides the weights (settings and a digest of the training data).
    """
    path = checkpoints / FINGERPRINT_JSON
    if resume is not None:
        found = json.loads(path.read_text()) if path.is_file() else None
        if found != expected:
            raise CitevalError(
                f"{resume} was written with other settings or data ({found} vs {expected}); "
                f"delete {checkpoints} to start afresh"
            )
        return
    checkpoints.mkdir(parents=True, exist_ok=True)
    write_json(expected, path)


def resume_point(checkpoints: Path, expected: dict[str, Any]) -> tuple[Path | None, dict]:
    """The checkpoint to resume from (None: none) and its trainer state (``{}``: none),
    after :func:`last_checkpoint` and :func:`check_fingerprint`."""
    resume = last_checkpoint(checkpoints)
    check_fingerprint(checkpoints, expected, resume)
    if resume is None:
        return None, {}
    return resume, json.loads((resume / TRAINER_STATE).read_text())


def step_callback(on_step: Callable[[int], None]) -> Any:
    """A trainer callback calling ``on_step(step)`` after each optimizer step (1-based),
    before that step's checkpoint is saved; tests raise from it to simulate a killed job."""
    from transformers import TrainerCallback

    class OnStep(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            on_step(state.global_step)

    return OnStep()
