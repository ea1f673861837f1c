"""Fine-tune an encoder on triplets with sentence-transformers' trainer and a triplet loss.

SciNCL (§4.3) continues SciBERT's training with the triplet margin loss
max(d(q, p) − d(q, n) + ξ, 0) on [CLS] vectors of "title [SEP] abstract" (512 tokens),
with L2 distance, ξ = 1, AdamW at 2e-5, 2 epochs and an effective batch of 32. Here:

* the model is the base registry entry's transformer with the entry's pooling (cls or
  mean), as :class:`citeval.models.Encoder` embeds it, and the texts are built the same
  way (:func:`citeval.models.build_text`, ``max_length`` tokens);
* the distance is the one the model is evaluated with (``similarity``): l2 → Euclidean,
  cosine → 1 − cosine, ip → the negative inner product;
* the triplets' texts are written to an Arrow file beside the checkpoints and memory-mapped
  (:mod:`citeval.train.inputs`), so memory does not grow with the number of triplets;
* ``SentenceTransformerTrainer`` runs the loop (AdamW, linear warm-up and decay; on CUDA
  bf16 or fp16 mixed precision, the effective batch split by memory, tokenization in
  data-loader workers: :mod:`citeval.training`), saves a checkpoint and a validation
  point every ``eval_steps`` (:mod:`citeval.curves`: the best, step 0 included, is the
  model) and resumes from the latest complete one, skipping the batches already trained on
  (checkpoints of other settings or triplets are refused);
* the finished model is a sentence-transformers folder written atomically to
  ``<output>/model`` with ``training.json``; when that file exists, nothing is redone.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from citeval.curves import (
    EVALUATOR_NAME,
    Curve,
    append_card_section,
    per_query_metrics,
    split_queries,
)
from citeval.errors import ConfigError
from citeval.io import atomic_path, file_fingerprint, write_json
from citeval.models import (
    ModelSpec,
    resolve_device,
    resolve_model_path,
    transformer_dir,
)
from citeval.training import (
    check_max_steps,
    fitted_trainer,
    loop_arguments,
    precision,
    resume_point,
    step_callback,
)

LOG = logging.getLogger(__name__)
FINAL_DIR = "model"
TRAINING_JSON = "training.json"
CHECKPOINT_DIR = "checkpoints"
# The triplets' texts, memory-mapped while training (deleted with the checkpoints).
TEXTS_FILE = "triplet_texts.arrow"
_POOLINGS = {"cls": "cls", "mean": "mean"}


# Not a config setting: the command's default is this constant.
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
    validation_fraction: float
    eval_steps: int
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


def _transformer_path(spec: ModelSpec) -> str:
    root = resolve_model_path(spec.path)
    return transformer_dir(root) if os.path.isdir(root) else root


def check_trainable(spec: ModelSpec) -> None:
    if spec.pooling not in _POOLINGS or spec.adapter:
        raise ConfigError(
            f"models.{spec.name}: training supports cls or mean pooling without an adapter, "
            f"not pooling={spec.pooling!r} adapter={spec.adapter!r}"
        )


def build_model(spec: ModelSpec, device: str) -> Any:
    """A SentenceTransformer of the registry entry: its transformer and its pooling."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    check_trainable(spec)
    transformer = Transformer(_transformer_path(spec), max_seq_length=spec.max_length)
    pooling = Pooling(transformer.get_embedding_dimension(), pooling_mode=_POOLINGS[spec.pooling])
    return SentenceTransformer(modules=[transformer, pooling], device=str(resolve_device(device)))


def separator(spec: ModelSpec) -> str:
    """The tokenizer's separator token, which joins a paper's title and abstract."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(_transformer_path(spec)).sep_token


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


# The validation's measures (sentence-transformers' InformationRetrievalEvaluator keys).
MAP_DEPTH = 100
MRR_DEPTH = 10
SCORE_NAME = "similarity"


def _similarity(similarity: str) -> Any:
    """The model's evaluation similarity as a score matrix function (higher: closer)."""
    import torch
    from sentence_transformers import util

    scores = {
        "cosine": util.cos_sim,
        "ip": util.dot_score,
        "l2": lambda a, b: -torch.cdist(a.float(), b.float()),
    }
    return scores[similarity]


def split_triplets(dataset: Any, fraction: float, seed: int) -> tuple[Any, Any, int]:
    """The training triplets, the held-out ones (every triplet of a held-out anchor paper:
    :func:`citeval.curves.split_queries`), and the number of held-out anchors."""
    anchors = dataset["anchor"]
    _, held_out = split_queries(anchors, fraction, seed)
    held = set(held_out)
    train = [row for row, anchor in enumerate(anchors) if anchor not in held]
    valid = [row for row, anchor in enumerate(anchors) if anchor in held]
    return dataset.select(train), dataset.select(valid), len(held)


def _evaluator(valid: Any, spec: ModelSpec, batch_size: int) -> Any:
    """sentence-transformers' retrieval evaluator over the held-out anchors: each ranks
    every held-out triplet's positive and negative papers; its positives are relevant."""
    from sentence_transformers.sentence_transformer.evaluation import (
        InformationRetrievalEvaluator,
    )

    ids: dict[str, str] = {}

    def paper_id(text: str) -> str:
        return ids.setdefault(text, f"d{len(ids)}")

    queries: dict[str, str] = {}
    relevant: dict[str, set[str]] = {}
    for anchor, positive, negative in zip(
        valid["anchor"], valid["positive"], valid["negative"], strict=True
    ):
        query = queries.setdefault(anchor, f"q{len(queries)}")
        relevant.setdefault(query, set()).add(paper_id(positive))
        paper_id(negative)

    class PerQuery(InformationRetrievalEvaluator):
        """The library's evaluator, also reporting each query's average precision at
        :data:`MAP_DEPTH` (its own formula and tie order; for the paired test of
        :attr:`citeval.curves.Curve.learned`)."""

        def __call__(self, *args: Any, **kwargs: Any) -> dict[str, float]:
            self.average_precisions: list[float] = []
            metrics = super().__call__(*args, **kwargs)
            return {**metrics, **per_query_metrics(self.name, self.average_precisions)}

        def compute_metrics(self, queries_result_list: list[Any]) -> dict[str, Any]:
            for query_id, hits in zip(self.queries_ids, queries_result_list, strict=True):
                relevant = self.relevant_docs[query_id]
                ranked = sorted(hits, key=lambda hit: (-hit["score"], hit["corpus_id"]))
                found, total = 0, 0.0
                for rank, hit in enumerate(ranked[:MAP_DEPTH], start=1):
                    if hit["corpus_id"] in relevant:
                        found += 1
                        total += found / rank
                self.average_precisions.append(total / min(MAP_DEPTH, len(relevant)))
            return super().compute_metrics(queries_result_list)

    return PerQuery(
        queries={query: anchor for anchor, query in queries.items()},
        corpus={doc: text for text, doc in ids.items()},
        relevant_docs=relevant,
        corpus_chunk_size=max(batch_size, 64),
        mrr_at_k=[MRR_DEPTH],
        ndcg_at_k=[MRR_DEPTH],
        accuracy_at_k=[1],
        precision_recall_at_k=[MRR_DEPTH],
        map_at_k=[MAP_DEPTH],
        batch_size=batch_size,
        name=EVALUATOR_NAME,
        score_functions={SCORE_NAME: _similarity(spec.similarity)},
        write_csv=False,
    )


MAP_KEY = f"{EVALUATOR_NAME}_{SCORE_NAME}_map@{MAP_DEPTH}"
MRR_KEY = f"{EVALUATOR_NAME}_{SCORE_NAME}_mrr@{MRR_DEPTH}"


def train_encoder(
    triplets_path: str | os.PathLike,
    papers_dir: str | os.PathLike,
    spec: ModelSpec,
    settings: FitSettings,
    output_dir: str | os.PathLike,
    *,
    device: str,
    memory_limit: str,
    logging_steps: int = LOGGING_STEPS,
    loss_name: str = "triplet",
    anchor_papers: str | os.PathLike | None = None,
    on_step: Callable[[int], None] | None = None,
) -> Path:
    """Train ``spec``'s model on the triplets and save it to ``<output_dir>/model``.

    ``loss_name``: ``triplet`` (SciNCL's and SPECTER's margin loss) or ``in_batch``
    (multiple negatives ranking: each anchor against its positive, its negative and every
    other triplet's positive and negative in the batch, the usual loss of retrieval
    bi-encoders, for the local prefetcher). ``memory_limit`` bounds DuckDB's join of the
    triplets with their texts (:mod:`citeval.train.inputs`). ``on_step(step)`` is called
    after each optimizer step; tests raise from it to simulate a killed job.
    """
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )

    from citeval.train.inputs import is_current, open_triplet_texts, write_triplet_texts

    output = Path(output_dir)
    final = output / FINAL_DIR
    if (final / TRAINING_JSON).is_file():
        LOG.info("%s exists: training is finished, nothing to do", final / TRAINING_JSON)
        # What a job that died between writing the model and cleaning up left behind.
        shutil.rmtree(output / CHECKPOINT_DIR, ignore_errors=True)
        (output / TEXTS_FILE).unlink(missing_ok=True)
        return final
    check_trainable(spec)
    started = time.perf_counter()
    triplets_sha256 = file_fingerprint(triplets_path)
    texts_path = output / TEXTS_FILE
    # Before the model is loaded: the join's memory and the training's do not add up.
    if not is_current(texts_path, triplets_sha256):
        write_triplet_texts(
            triplets_path, papers_dir, separator(spec), texts_path,
            memory_limit=memory_limit, anchor_papers=anchor_papers,
        )  # fmt: skip
    dataset, valid, valid_queries = split_triplets(
        open_triplet_texts(texts_path), settings.validation_fraction, settings.seed
    )
    checkpoints = output / CHECKPOINT_DIR
    expected = {
        "base": spec.to_config(),
        "settings": asdict(settings),
        "loss": loss_name,
        "triplets_sha256": triplets_sha256,
    }
    resume, state = resume_point(checkpoints, expected)
    if resume is not None:
        LOG.info("resuming from %s (step %d)", resume, state["global_step"])

    model = build_model(spec, device)
    loss = build_loss(model, spec, settings, loss_name)
    evaluator = _evaluator(valid, spec, settings.batch_size)

    def make_trainer(micro_batch: int, accumulation: int) -> Any:
        arguments = SentenceTransformerTrainingArguments(
            **loop_arguments(
                settings,
                str(checkpoints),
                device=model.device,
                batch=(micro_batch, accumulation),
                logging_steps=logging_steps,
                validation_metric=MAP_KEY,
                resuming=resume is not None,
            ),
            # In-batch negatives: a batch never holds the same text twice (a false
            # negative).
            batch_sampler="no_duplicates" if loss_name == "in_batch" else "batch_sampler",
        )
        return SentenceTransformerTrainer(
            model=model,
            args=arguments,
            train_dataset=dataset,
            evaluator=evaluator,
            loss=loss,
            callbacks=[step_callback(on_step)] if on_step is not None else None,
        )

    # The triplet loss is a mean over triplets: any split of the batch trains the same.
    # In-batch negatives are the micro-batch itself, so that loss keeps the configured one.
    trainer, batch = fitted_trainer(
        make_trainer,
        (settings.batch_size, settings.gradient_accumulation),
        device=model.device,
        refit=loss_name == "triplet",
    )
    if state and state["global_step"] >= state["max_steps"]:
        # The trainer resumed from its last step's checkpoint would take a step more: the
        # job died after training, before the model folder was renamed.
        LOG.info("%s is the last step's checkpoint: training is over", resume)
        log_history, steps = state["log_history"], state["global_step"]
        train_loss = train_seconds = triplets_per_second = None
    else:
        # A resumed trainer skips the batches of the interrupted epoch that it has trained
        # on (their rows are never read) and replays the sampler's order from there.
        result = trainer.train(resume_from_checkpoint=str(resume) if resume else None)
        log_history, steps = trainer.state.log_history, int(result.global_step)
        train_loss = float(result.training_loss)
        train_seconds = round(float(result.metrics["train_runtime"]), 3)
        triplets_per_second = round(float(result.metrics["train_samples_per_second"]), 3)
    curve = Curve.from_log_history(log_history, MAP_KEY, MRR_KEY, valid_queries)
    curve.log(f"{spec.name} ({loss_name} loss on {spec.path})")
    if curve.kept.step == 0:
        model = build_model(spec, device)
    else:
        model = SentenceTransformer(
            str(checkpoints / f"checkpoint-{curve.kept.step}"),
            device=str(resolve_device(device)),
        )
    seconds = time.perf_counter() - started
    with atomic_path(final) as temporary:
        model.save(str(temporary))
        append_card_section(temporary, curve.card_section(spec.name))
        write_json(
            {
                **expected,
                "triplets": str(triplets_path),
                "num_triplets": len(dataset),
                "validation_triplets": len(valid),
                "validation": curve.record(),
                "steps": steps,
                "train_loss": train_loss,
                "loss_history": [
                    {"step": entry["step"], "loss": entry["loss"]}
                    for entry in log_history
                    if "loss" in entry
                ],
                "resumed_from": str(resume) if resume is not None else None,
                "device": model.device.type,
                "precision": precision(model.device),
                "micro_batch": None if batch is None else batch[0],
                "gradient_accumulation": None if batch is None else batch[1],
                "seconds": round(seconds, 3),
                "train_seconds": train_seconds,
                "triplets_per_second": triplets_per_second,
            },
            temporary / TRAINING_JSON,
        )
    shutil.rmtree(checkpoints, ignore_errors=True)
    texts_path.unlink()
    LOG.info("trained %s on %d triplets in %.1f s: %s", spec.name, len(dataset), seconds, final)
    return final
