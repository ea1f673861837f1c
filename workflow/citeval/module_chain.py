"""A sentence-transformers folder's modules after its Transformer, loaded and run as
sentence-transformers chains them (citeval.st_modules reads and checks them).

A chain is a list of steps ``(how, module)``: ``("module", instance)`` runs the
sentence-transformers module on the features mapping, ``("cls", None)`` and
``("mean", None)`` are a Pooling by [CLS] or mean whose prompt tokens count, done by
:func:`citeval.pooling.cls_pool` / :func:`citeval.pooling.mean_pool`, which the paper
models share, so that a folder and its plain transformer give the same vectors. The
modules run in float32 on the encoder's device.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from citeval import st_modules
from citeval.errors import CitevalError
from citeval.pooling import cls_pool, mean_pool

log = logging.getLogger(__name__)

Step = tuple[str, Any]


def load(
    root: str | None,
    modules: Sequence[st_modules.Module],
    *,
    model: str,
    pooling: str,
    prompted: bool,
    device: Any,
) -> list[Step]:
    """The steps of ``modules`` (those after the Transformer) of the folder ``root``;
    ``pooling`` is the registry entry's, which a cls or mean Pooling must agree with, and
    ``prompted`` whether the model has a prompt (a Pooling that leaves it out runs as
    sentence-transformers runs it)."""
    import torch

    steps: list[Step] = []
    for position, module in enumerate(modules):
        instance = st_modules.load_module(str(root), module)
        if module.kind == "Pooling":
            mode = instance.pooling_mode
            prompt_counts = instance.include_prompt or not prompted
            if mode in ("cls", "mean") and prompt_counts and position == 0:
                if mode != pooling:
                    raise CitevalError(
                        f"model {model!r}: {module.describe(str(root))} pools by {mode}, but "
                        f"models.{model}.pooling is {pooling}; set it to {mode}"
                    )
                steps.append((mode, None))
                continue
            log.info(
                "model %s: pooling by the folder's %s (pooling_mode %s, include_prompt %s)",
                model,
                module.describe(str(root)),
                mode,
                instance.include_prompt,
            )
        instance.to(device=device, dtype=torch.float32)
        instance.eval()
        steps.append(("module", instance))
    return steps


def dimension(steps: Sequence[Step], transformer_dim: int) -> int:
    """The vectors' dimension: the last module's that declares one, else the Transformer's."""
    dim = transformer_dim
    for _, instance in steps:
        if instance is not None and hasattr(instance, "get_embedding_dimension"):
            dim = int(instance.get_embedding_dimension())
    return dim


def normalizes(steps: Sequence[Step]) -> bool:
    """Whether the last step L2-normalises the sentence vector."""
    if not steps or steps[-1][1] is None:
        return False
    last = steps[-1][1]
    return type(last).__name__ == "Normalize" and last.module_output_name == "sentence_embedding"


def run(steps: Sequence[Step], hidden: Any, attention: Any, prompt_length: int) -> Any:
    """The steps on the Transformer's last layer in float32 (a features mapping each
    module reads and extends); the sentence vectors."""
    features: dict[str, Any] = {"token_embeddings": hidden.float(), "attention_mask": attention}
    if prompt_length:
        features["prompt_length"] = prompt_length
    for how, module in steps:
        if how == "cls":
            features["sentence_embedding"] = cls_pool(features["token_embeddings"])
        elif how == "mean":
            features["sentence_embedding"] = mean_pool(features["token_embeddings"], attention)
        else:
            features = module(features)
    return features["sentence_embedding"].float()
