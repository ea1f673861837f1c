"""What the two trainers share: the step-count rule and the trainer's loop arguments.

Encoders (:mod:`citeval.train.fit`) and the reranker (:mod:`citeval.rerank.train`) both run
on sentence-transformers' trainers (transformers' ``Trainer``); the loop is set up the same
way for both, so a checkpoint, a seed or a step limit means the same in either.
"""

from __future__ import annotations

from typing import Any

from citeval.errors import ConfigError


def check_max_steps(max_steps: int) -> None:
    """-1 lets the epochs decide; N >= 1 stops after N optimizer steps."""
    if max_steps != -1 and max_steps < 1:
        raise ConfigError(
            f"max_steps must be -1 (the epochs decide) or at least 1, got {max_steps}"
        )


def loop_arguments(
    settings: Any, checkpoints: str, *, on_cuda: bool, save_steps: int, logging_steps: int
) -> dict[str, Any]:
    """Training-arguments keywords from ``settings`` (``epochs``, ``max_steps``,
    ``batch_size``, ``learning_rate``, ``weight_decay``, ``warmup_steps``, ``seed``).

    Linear warm-up and decay; the data order and the initialisation follow the seed, with
    data loaded in the main process, so a seed gives the same model; fp16 on CUDA only; a
    checkpoint every ``save_steps``, the latest one kept, for resumption.
    """
    return {
        "output_dir": checkpoints,
        "num_train_epochs": settings.epochs,
        "max_steps": settings.max_steps,
        "per_device_train_batch_size": settings.batch_size,
        "learning_rate": settings.learning_rate,
        "weight_decay": settings.weight_decay,
        "warmup_steps": settings.warmup_steps,
        "lr_scheduler_type": "linear",
        "seed": settings.seed,
        "data_seed": settings.seed,
        "fp16": on_cuda,
        "use_cpu": not on_cuda,
        "save_strategy": "steps",
        "save_steps": save_steps,
        "save_total_limit": 1,
        "logging_steps": logging_steps,
        "report_to": "none",
        "dataloader_num_workers": 0,
    }
