"""Fine-tune an encoder on triplets with sentence-transformers' trainer and a triplet loss.

SciNCL (§4.3) continues SciBERT's training with the triplet margin loss
max(d(q, p) − d(q, n) + ξ, 0) on [CLS] vectors of "title [SEP] abstract" (512 tokens),
with L2 distance, ξ = 1, AdamW at 2e-5, 2 epochs and an effective batch of 32. Here:

* the model is the base registry entry's transformer with the entry's pooling (cls or
  mean), as :class:`citeval.models.Encoder` embeds it, and the texts are built the same
  way (:func:`citeval.models.build_text`, ``max_length`` tokens);
* the distance is the one the model is evaluated with (``similarity``): l2 → Euclidean,
  cosine → 1 − cosine, ip → the negative inner product;
* ``SentenceTransformerTrainer`` runs the loop (AdamW, linear warm-up and decay; on CUDA
  bf16 or fp16 mixed precision, the effective batch split by memory, tokenization in
  data-loader workers: :mod:`citeval.training`), saves a checkpoint every ``save_steps``
  and resumes from the latest one;
* the finished model is a sentence-transformers folder written atomically to
  ``<output>/model`` with ``training.json``; when that file exists, nothing is redone.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from citeval.errors import ConfigError, InputDataError
from citeval.io import atomic_path, file_fingerprint, write_json
from citeval.models import (
    ModelSpec,
    build_text,
    resolve_device,
    resolve_model_path,
    transformer_dir,
)
from citeval.training import check_max_steps, fitted_trainer, loop_arguments, precision

LOG = logging.getLogger(__name__)
FINAL_DIR = "model"
TRAINING_JSON = "training.json"
CHECKPOINT_DIR = "checkpoints"
_POOLINGS = {"cls": "cls", "mean": "mean"}


# Not config settings: the command's defaults for these are these constants.
SAVE_STEPS = 500
LOGGING_STEPS = 10


@dataclass(frozen=True, kw_only=True)
class FitSettings:
    """``train.fit`` of the config (but ``device``) and ``seed``.

    No field has a default here: the schema's (SciNCL's values) are the only ones.
    ``max_steps`` -1 lets ``epochs`` decide; N >= 1 stops after N optimizer steps.
    """

    epochs: int
    batch_size: int
    gradient_accumulation: int
    learning_rate: float
    weight_decay: float
    warmup_steps: int
    margin: float
    max_steps: int
    seed: int

    def __post_init__(self) -> None:
        check_max_steps(self.max_steps)


def negative_inner_product(x: Any, y: Any) -> Any:
    """Triplet distance for models evaluated by inner product."""
    return -(x * y).sum(dim=-1)


def triplet_distance(similarity: str) -> Any:
    from sentence_transformers.sentence_transformer.losses import TripletDistanceMetric

    distances = {
        "l2": TripletDistanceMetric.EUCLIDEAN,
        "cosine": TripletDistanceMetric.COSINE,
        "ip": negative_inner_product,
    }
    return distances[similarity]


def build_model(spec: ModelSpec, device: str) -> Any:
    """A SentenceTransformer of the registry entry: its transformer and its pooling."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    if spec.pooling not in _POOLINGS or spec.adapter:
        raise ConfigError(
            f"models.{spec.name}: training supports cls or mean pooling without an adapter, "
            f"not pooling={spec.pooling!r} adapter={spec.adapter!r}"
        )
    root = resolve_model_path(spec.path)
    transformer = Transformer(
        transformer_dir(root) if os.path.isdir(root) else root, max_seq_length=spec.max_length
    )
    pooling = Pooling(transformer.get_embedding_dimension(), pooling_mode=_POOLINGS[spec.pooling])
    return SentenceTransformer(modules=[transformer, pooling], device=str(resolve_device(device)))


def read_triplet_texts(
    triplets_path: str | os.PathLike,
    papers_dir: str | os.PathLike,
    sep: str,
    anchor_papers: str | os.PathLike | None = None,
) -> dict[str, list[str]]:
    """``{"anchor": [...], "positive": [...], "negative": [...]}`` texts of the triplets.

    Anchors are papers of ``anchor_papers`` when given (the local task's contexts, in
    ``query_papers/``), else of ``papers_dir`` like the positives and negatives.
    """
    from citeval.rerank.data import read_papers

    path = Path(triplets_path)
    if not path.is_file():
        raise InputDataError("not found", path=str(path))
    table = pq.read_table(path)
    columns = {"anchor": "query_id", "positive": "positive_id", "negative": "negative_id"}
    ids = {role: table.column(column).to_pylist() for role, column in columns.items()}
    if anchor_papers is None:
        texts = read_papers(papers_dir, {paper for values in ids.values() for paper in values})
    else:
        texts = read_papers(papers_dir, {*ids["positive"], *ids["negative"]})
        texts.update(read_papers(anchor_papers, set(ids["anchor"])))
    for role, column in columns.items():
        for row, paper_id in enumerate(ids[role]):
            if paper_id not in texts:
                raise InputDataError(
                    f"paper {paper_id!r} is not in the papers corpus",
                    path=str(path), line=row + 1, field=column,
                )  # fmt: skip
    return {role: [build_text(*texts[p], sep) for p in values] for role, values in ids.items()}


LOSSES = ("triplet", "in_batch")


def build_loss(model: Any, spec: ModelSpec, settings: FitSettings, loss_name: str) -> Any:
    """The training loss (:data:`LOSSES`); ``in_batch`` scores pairs with the model's own
    similarity: cosine for cosine and l2 models, scaled by 20 (a temperature of 0.05, the
    loss's usual one), or the dot product for ip models, unscaled (it is unbounded)."""
    from sentence_transformers import util
    from sentence_transformers.sentence_transformer.losses import (
        MultipleNegativesRankingLoss,
        TripletLoss,
    )

    if loss_name == "triplet":
        return TripletLoss(
            model, distance_metric=triplet_distance(spec.similarity), triplet_margin=settings.margin
        )
    if loss_name == "in_batch":
        if spec.similarity == "ip":
            return MultipleNegativesRankingLoss(model, scale=1.0, similarity_fct=util.dot_score)
        return MultipleNegativesRankingLoss(model, scale=20.0, similarity_fct=util.cos_sim)
    raise ConfigError(f"unknown loss {loss_name!r}; expected one of {LOSSES}")


def mean_triplet_loss(model: Any, loss: Any, texts: dict[str, list[str]], batch_size: int) -> float:
    """The loss over every triplet with the model in eval mode (no dropout, no update)."""
    import torch

    distance = loss.distance_metric
    total = 0.0
    for start in range(0, len(texts["anchor"]), batch_size):
        vectors = [
            model.encode(texts[role][start : start + batch_size], convert_to_tensor=True)
            for role in ("anchor", "positive", "negative")
        ]
        with torch.no_grad():
            margins = distance(vectors[0], vectors[1]) - distance(vectors[0], vectors[2])
            total += float(torch.relu(margins + loss.triplet_margin).sum())
    return total / len(texts["anchor"])


def train_encoder(
    triplets_path: str | os.PathLike,
    papers_dir: str | os.PathLike,
    spec: ModelSpec,
    settings: FitSettings,
    output_dir: str | os.PathLike,
    *,
    device: str,
    save_steps: int = SAVE_STEPS,
    logging_steps: int = LOGGING_STEPS,
    loss_name: str = "triplet",
    anchor_papers: str | os.PathLike | None = None,
) -> Path:
    """Train ``spec``'s model on the triplets and save it to ``<output_dir>/model``.

    ``loss_name``: ``triplet`` (SciNCL's and SPECTER's margin loss) or ``in_batch``
    (multiple negatives ranking: each anchor against its positive, its negative and every
    other triplet's positive and negative in the batch, the usual loss of retrieval
    bi-encoders, for the local prefetcher).
    """
    from datasets import Dataset
    from sentence_transformers import (
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from transformers.trainer_utils import get_last_checkpoint

    output = Path(output_dir)
    final = output / FINAL_DIR
    if (final / TRAINING_JSON).is_file():
        LOG.info("%s exists: training is finished, nothing to do", final / TRAINING_JSON)
        return final
    started = time.perf_counter()
    model = build_model(spec, device)
    texts = read_triplet_texts(
        triplets_path, papers_dir, model.tokenizer.sep_token, anchor_papers=anchor_papers
    )
    loss = build_loss(model, spec, settings, loss_name)
    checkpoints = output / CHECKPOINT_DIR
    dataset = Dataset.from_dict(texts)

    def make_trainer(micro_batch: int, accumulation: int) -> Any:
        arguments = SentenceTransformerTrainingArguments(
            **loop_arguments(
                settings,
                str(checkpoints),
                device=model.device,
                batch=(micro_batch, accumulation),
                save_steps=save_steps,
                logging_steps=logging_steps,
            ),
            # In-batch negatives: a batch never holds the same text twice (a false negative).
            batch_sampler="no_duplicates" if loss_name == "in_batch" else "batch_sampler",
        )
        return SentenceTransformerTrainer(
            model=model, args=arguments, train_dataset=dataset, loss=loss
        )

    # The triplet loss is a mean over triplets: any split of the batch trains the same.
    # In-batch negatives are the micro-batch itself, so that loss keeps the configured one.
    trainer, batch = fitted_trainer(
        make_trainer,
        (settings.batch_size, settings.gradient_accumulation),
        device=model.device,
        refit=loss_name == "triplet",
    )
    resume = get_last_checkpoint(checkpoints) if checkpoints.is_dir() else None
    if resume is not None:
        LOG.info("resuming from %s", resume)
    result = trainer.train(resume_from_checkpoint=resume)
    seconds = time.perf_counter() - started
    with atomic_path(final) as temporary:
        model.save(str(temporary))
        write_json(
            {
                "base": spec.to_config(),
                "settings": asdict(settings),
                "loss": loss_name,
                "triplets": str(triplets_path),
                "triplets_sha256": file_fingerprint(triplets_path),
                "num_triplets": len(texts["anchor"]),
                "steps": int(result.global_step),
                "train_loss": float(result.training_loss),
                "loss_history": [
                    {"step": entry["step"], "loss": entry["loss"]}
                    for entry in trainer.state.log_history
                    if "loss" in entry
                ],
                "device": model.device.type,
                "precision": precision(model.device),
                "micro_batch": batch[0],
                "gradient_accumulation": batch[1],
                "seconds": round(seconds, 3),
                "train_seconds": round(float(result.metrics["train_runtime"]), 3),
                "triplets_per_second": round(float(result.metrics["train_samples_per_second"]), 3),
            },
            temporary / TRAINING_JSON,
        )
    shutil.rmtree(checkpoints, ignore_errors=True)
    LOG.info(
        "trained %s on %d triplets in %.1f s: %s", spec.name, len(texts["anchor"]), seconds, final
    )
    return final
