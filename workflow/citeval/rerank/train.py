"""Train the cross-encoder reranker on first-stage runs of the training split (paper §4.2).

    python -m citeval.rerank train --run RUN.trec --qrels QRELS.qrels [--run ... --qrels ...] \
        --papers corpus/papers --output-dir OUT --seed SEED [settings] \
        [--logging-steps N] [--keep-checkpoints]

The settings (``--base-model``, ``--top``, ``--learning-rate``, ...) are the config keys
of :data:`citeval.stages.RERANK_TRAIN`, with the schema's defaults (:mod:`citeval.rerank.cli`).

Pairs. For each query of each run, its top ``--top`` documents (trec_eval's order); a
document the query's qrels judge ``rel > 0`` is a positive (label 1), every other one a
negative (0). Classes are not rebalanced (the paper's §5.2: adding positives or random
negatives ruined the model). A (query, candidate) pair found in several runs is taken
once, positive if any of its qrels says so. Pairs are sorted by (query, candidate).

Texts. Each side is ``title + sep_token + abstract`` cut to its own token budget
(``--query-tokens``, ``--candidate-tokens``) before pairing, exactly as the reranker cuts
them when it scores (:meth:`citeval.rerank.model.Reranker.prepare`): the model learns on
the inputs it will see. The training set is a ``datasets.Dataset`` of (query text,
candidate text, label) rows.

Optimisation. sentence-transformers' ``CrossEncoderTrainer`` (transformers' ``Trainer``)
runs the loop: the loss of :data:`LOSSES` (the paper's: binary cross-entropy on the logit,
``sentence_transformers.cross_encoder.losses.BinaryCrossEntropyLoss``; or ListNet or
RankNet over each query's candidates) on the head of :mod:`citeval.rerank.heads`; AdamW
(``adamw_torch``: β 0.9, 0.999, ε 1e-8, decoupled weight decay on every weight but biases
and LayerNorm), linear warm-up then linear decay to 0, gradient norm clipped at 1.0,
float16 mixed precision on CUDA only; dropout set in the model config (hidden, attention,
classifier). The paper's values are the schema's defaults: learning rate 3e-6, weight
decay 0.01, dropout 0.1, 10,000 warm-up steps, batch 128, about one epoch. ``--max-steps``
N >= 1 overrides ``--epochs``; -1 lets the epochs decide.

Validation. A seeded ``--validation-fraction`` of the training queries is held out; each
ranks its cited papers among its first stage's top ``--top`` at step 0 and at every
checkpoint, and the best point (step 0 included) is the model (:mod:`citeval.curves`).

Determinism. The classifier head is drawn after ``torch.manual_seed(seed)``; the trainer's
``seed`` and ``data_seed`` are the seed, so each epoch's order is a permutation seeded by
(seed + epoch) (accelerate's seedable sampler), and data loading runs in the main process
(``dataloader_num_workers=0``). On CPU the same seed, pairs, settings and thread count
give the same ``model.safetensors``, byte for byte, whether or not the run was resumed
(a checkpoint holds the optimizer, scheduler and RNG states).

Output folder (``--output-dir OUT``):

* ``OUT/checkpoints/checkpoint-<step>/`` every ``--eval-steps`` steps, each a validation
  point (:mod:`citeval.curves`; transformers' checkpoint: model, optimizer, scheduler, RNG
  states, trainer state); the latest two and the best are kept.
  ``OUT/checkpoints/fingerprint.json`` records the settings and pairs they were written
  with. A restarted job resumes from the latest complete checkpoint
  (``transformers.trainer_utils.get_last_checkpoint``; one without ``trainer_state.json``,
  the last file a save writes, was cut short and is removed); its fingerprint must match.
* ``OUT/model/``: the final CrossEncoder folder (loadable by ``CrossEncoder(path)`` and by
  ``citeval.rerank rerank --model``) with ``training.json`` (pairs, positives, queries,
  steps, losses per logging step, the validation curve and the kept step, seconds,
  settings, the checkpoint it resumed from) and the verdict in its model card. It
  is written to a temporary folder and renamed, so its presence means the run finished: a
  finished run is never redone. ``OUT/checkpoints`` is deleted afterwards unless
  ``--keep-checkpoints``.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import shutil
import time
from collections.abc import Callable, Sequence
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
from citeval.errors import CitevalError, ConfigError, InputDataError
from citeval.io import atomic_path, write_json
from citeval.rerank.data import check_in_corpus, read_ranked_run, read_run_texts
from citeval.rerank.heads import HEADS
from citeval.training import (
    check_max_steps,
    fitted_trainer,
    loop_arguments,
    precision,
    resume_point,
    step_callback,
)
from citeval.trec import read_qrels

LOG = logging.getLogger(__name__)

FINAL_DIR = "model"
CHECKPOINT_DIR = "checkpoints"
TRAINING_JSON = "training.json"
# Not a config setting: the command's default is this constant.
LOGGING_STEPS = 50


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
    head: str
    loss: str
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
    validation_fraction: float
    eval_steps: int
    max_grad_norm: float = 1.0

    def __post_init__(self) -> None:
        check_max_steps(self.max_steps)
        if self.head not in HEADS:
            raise ConfigError(f"unknown head {self.head!r}; expected one of {sorted(HEADS)}")
        if self.loss not in LOSSES:
            raise ConfigError(f"unknown loss {self.loss!r}; expected one of {sorted(LOSSES)}")

    @property
    def listwise(self) -> bool:
        """Whether a training row is a query with all its candidates (else one pair)."""
        return LOSSES[self.loss].listwise


@dataclass(frozen=True)
class Pair:
    query_id: str
    candidate_id: str
    label: int


def build_pairs(
    runs: Sequence[tuple[str | os.PathLike, dict[str, list[tuple[str, float]]]]],
    qrels: Sequence[dict[str, dict[str, int]]],
    top: int,
    add_cited: bool = False,
) -> list[Pair]:
    """Distinct (query, candidate) pairs of the top ``top`` of each run, labelled by qrels.

    ``add_cited`` adds every relevant paper of a query as a positive pair, retrieved or not
    (HAtten's scheme: the cited paper and negatives from the prefetcher's top).
    """
    labels: dict[tuple[str, str], int] = {}
    for (path, run), judged in zip(runs, qrels, strict=True):
        if not run:
            raise InputDataError("the run has no queries", path=str(path))
        for qid, ranked in run.items():
            relevant = judged.get(qid, {})
            for doc_id, _ in ranked[:top]:
                label = int(relevant.get(doc_id, 0) > 0)
                labels[(qid, doc_id)] = max(labels.get((qid, doc_id), 0), label)
            if add_cited:
                for doc_id, rel in relevant.items():
                    if rel > 0:
                        labels[(qid, doc_id)] = 1
    pairs = [Pair(q, c, label) for (q, c), label in sorted(labels.items())]
    if not any(p.label for p in pairs):
        raise InputDataError(
            f"no positive pair among the top {top} of the runs: no cited paper was retrieved "
            f"({', '.join(str(p) for p, _ in runs)})"
        )
    return pairs


@dataclass(frozen=True)
class Loss:
    """A training loss: whether its rows are whole queries, and how it is built."""

    listwise: bool
    build: Callable[[Any], Any]
    description: str


def _pointwise(model: Any) -> Any:
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss

    return BinaryCrossEntropyLoss(model)


def _listwise(model: Any) -> Any:
    from sentence_transformers.cross_encoder.losses import ListNetLoss

    return ListNetLoss(model, mini_batch_size=LIST_MINI_BATCH)


def _pairwise(model: Any) -> Any:
    from sentence_transformers.cross_encoder.losses import RankNetLoss

    return RankNetLoss(model, mini_batch_size=LIST_MINI_BATCH)


# Pairs a list loss sends through the model at once (memory, not the result).
LIST_MINI_BATCH = 64
LOSSES = {
    "pointwise": Loss(False, _pointwise, "binary cross-entropy of each pair's logit (the paper's)"),
    "listwise": Loss(
        True, _listwise, "ListNet: cross-entropy of the softmax over a query's candidates"
    ),
    "pairwise": Loss(
        True, _pairwise, "RankNet: logistic loss of each (cited, not cited) pair of a query"
    ),
}


def split_pairs(
    pairs: Sequence[Pair], valid_queries: Sequence[str]
) -> tuple[list[Pair], list[Pair]]:
    """The pairs of the training queries and those of the held-out ones."""
    held = set(valid_queries)
    return (
        [p for p in pairs if p.query_id not in held],
        [p for p in pairs if p.query_id in held],
    )


def total_steps(rows: int, settings: TrainSettings) -> tuple[int, int]:
    """``(steps per epoch, total steps)`` over ``rows`` training rows (pairs, or queries
    for a list loss); ``max_steps`` overrides ``epochs`` unless -1."""
    per_epoch = math.ceil(rows / settings.batch_size)
    total = per_epoch * settings.epochs if settings.max_steps == -1 else settings.max_steps
    return per_epoch, total


def _digest(pairs: Sequence[Pair]) -> str:
    digest = hashlib.sha256()
    for pair in pairs:
        digest.update(f"{pair.query_id}\t{pair.candidate_id}\t{pair.label}\n".encode())
    return digest.hexdigest()


def fingerprint(
    settings: TrainSettings, pairs: Sequence[Pair], valid_pairs: Sequence[Pair]
) -> dict[str, Any]:
    """What a checkpoint must have been trained with to be resumed: settings and pairs."""
    return {
        "settings": asdict(settings),
        "pairs": len(pairs),
        "positives": sum(p.label for p in pairs),
        "pairs_sha256": _digest(pairs),
        "validation_pairs_sha256": _digest(valid_pairs),
    }


def _cut_texts(
    reranker: Any, pairs: Sequence[Pair], texts: dict[str, tuple[str | None, str | None]]
) -> list[tuple[str, str]]:
    """Each pair's (query, candidate) texts, each side cut to its budget."""
    pair_texts, _ = reranker.prepare(
        [reranker.text(*texts[p.query_id]) for p in pairs],
        [reranker.text(*texts[p.candidate_id]) for p in pairs],
    )
    return pair_texts


def rankable_queries(pairs: Sequence[Pair]) -> set[str]:
    """Queries with a cited and an uncited candidate: a list loss has nothing to order
    in the others (and would pull all their scores together)."""
    labels: dict[str, set[int]] = {}
    for pair in pairs:
        labels.setdefault(pair.query_id, set()).add(pair.label)
    return {qid for qid, seen in labels.items() if seen == {0, 1}}


def _by_query(pairs: Sequence[Pair], pair_texts: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """Per query (in order): its text, its candidates' texts and their labels."""
    grouped: dict[str, tuple[str, list[str], list[float]]] = {}
    for pair, (query, candidate) in zip(pairs, pair_texts, strict=True):
        grouped.setdefault(pair.query_id, (query, [], []))
        grouped[pair.query_id][1].append(candidate)
        grouped[pair.query_id][2].append(float(pair.label))
    return grouped


def _dataset(
    reranker: Any,
    pairs: Sequence[Pair],
    texts: dict[str, tuple[str | None, str | None]],
    listwise: bool,
) -> Any:
    """A ``datasets.Dataset``: (query, candidate, label) rows, or for a list loss one
    (query, candidates, labels) row a query."""
    from datasets import Dataset

    pair_texts = _cut_texts(reranker, pairs, texts)
    if listwise:
        rankable = rankable_queries(pairs)
        grouped = [row for qid, row in _by_query(pairs, pair_texts).items() if qid in rankable]
        return Dataset.from_dict(
            {
                "query": [query for query, _, _ in grouped],
                "candidates": [candidates for _, candidates, _ in grouped],
                "labels": [labels for _, _, labels in grouped],
            }
        )
    return Dataset.from_dict(
        {
            "query": [query for query, _ in pair_texts],
            "candidate": [candidate for _, candidate in pair_texts],
            "label": [float(p.label) for p in pairs],
        }
    )


def _evaluator(
    reranker: Any,
    valid_pairs: Sequence[Pair],
    texts: dict[str, tuple[str | None, str | None]],
    batch_size: int,
) -> Any:
    """sentence-transformers' reranking evaluator over the held-out queries: each ranks
    its cited papers among its first-stage candidates (MAP, MRR@10)."""
    from sentence_transformers.cross_encoder.evaluation import CrossEncoderRerankingEvaluator

    samples = []
    for query, candidates, labels in _by_query(
        valid_pairs, _cut_texts(reranker, valid_pairs, texts)
    ).values():
        positive = [c for c, label in zip(candidates, labels, strict=True) if label]
        negative = [c for c, label in zip(candidates, labels, strict=True) if not label]
        if positive and negative:
            samples.append({"query": query, "positive": positive, "negative": negative})
    if not samples:
        raise InputDataError(
            "no held-out training query has both a cited paper and a candidate it does not "
            "cite: the validation curve has nothing to rank (more training queries, or a "
            "larger validation_fraction)"
        )

    class PerQuery(CrossEncoderRerankingEvaluator):
        """The library's evaluator, also reporting each query's average precision (for
        the paired test of :attr:`citeval.curves.Curve.learned`)."""

        def __call__(self, *args: Any, **kwargs: Any) -> dict[str, float]:
            self.average_precisions: list[float] = []
            metrics = super().__call__(*args, **kwargs)
            return {**metrics, **per_query_metrics(self.name, self.average_precisions)}

        def compute_metrics(self, is_relevant: Any, scores: Any) -> Any:
            mrr, ndcg, average_precision = super().compute_metrics(is_relevant, scores)
            self.average_precisions.append(float(average_precision))
            return mrr, ndcg, average_precision

    return PerQuery(
        samples, at_k=10, name=EVALUATOR_NAME, batch_size=batch_size, write_csv=False
    ), len(samples)


MAP_KEY = f"{EVALUATOR_NAME}_map"
MRR_KEY = f"{EVALUATOR_NAME}_mrr@10"


def _trainer(
    reranker: Any,
    dataset: Any,
    evaluator: Any,
    settings: TrainSettings,
    checkpoints: Path,
    *,
    resuming: bool,
    logging_steps: int,
    on_step: Callable[[int], None] | None,
) -> tuple[Any, tuple[int, int]]:
    """sentence-transformers' ``CrossEncoderTrainer`` with the paper's recipe, and its
    (micro-batch, accumulation) split of ``settings.batch_size`` (a pointwise loss is a
    mean over pairs: :func:`citeval.training.fitted_trainer`; a list loss keeps whole
    queries together and bounds its memory itself)."""
    from sentence_transformers.cross_encoder import (
        CrossEncoderTrainer,
        CrossEncoderTrainingArguments,
    )

    def make_trainer(micro_batch: int, accumulation: int) -> Any:
        arguments = CrossEncoderTrainingArguments(
            **loop_arguments(
                settings,
                str(checkpoints),
                device=reranker.device,
                batch=(micro_batch, accumulation),
                logging_steps=logging_steps,
                validation_metric=MAP_KEY,
                resuming=resuming,
                # CrossEncoder's collator hands the texts on; its loss tokenizes them.
                collator_tokenizes=False,
            ),
            # The paper's optimizer: Adam(W) with these betas and epsilon, gradients clipped;
            # on CUDA the fused kernel (the same update in one launch).
            optim="adamw_torch_fused" if reranker.device.type == "cuda" else "adamw_torch",
            adam_beta1=0.9,
            adam_beta2=0.999,
            adam_epsilon=1e-8,
            max_grad_norm=settings.max_grad_norm,
            logging_strategy="steps",
        )
        return CrossEncoderTrainer(
            model=reranker.model,
            args=arguments,
            train_dataset=dataset,
            evaluator=evaluator,
            loss=LOSSES[settings.loss].build(reranker.model),
            callbacks=[step_callback(on_step)] if on_step is not None else None,
        )

    return fitted_trainer(
        make_trainer,
        (settings.batch_size, 1),
        device=reranker.device,
        refit=not settings.listwise,
    )


def _reranker(path: str, settings: TrainSettings, device: str, *, new: bool) -> Any:
    """The model to train (``new``: the base with a fresh head, drawn from the seed) or a
    checkpoint of it, in float32 with the training's dropout."""
    import torch

    from citeval.rerank.model import Reranker, pair_max_length

    if new:
        torch.manual_seed(settings.seed)  # the new head: the same draw for every load
    return Reranker(
        path,
        query_tokens=settings.query_tokens,
        candidate_tokens=settings.candidate_tokens,
        # Scoring with the trained model in batches of the training batch's size.
        batch_tokens=settings.batch_size
        * pair_max_length(settings.query_tokens, settings.candidate_tokens),
        batch_size=settings.batch_size,
        dtype="float32",
        device=device,
        head=settings.head if new else None,
        dropout=settings.dropout if new else None,
        layers=settings.base_layers if new else None,
    )


def train(
    pairs: Sequence[Pair],
    valid_pairs: Sequence[Pair],
    texts: dict[str, tuple[str | None, str | None]],
    settings: TrainSettings,
    output_dir: str | os.PathLike,
    *,
    device: str,
    logging_steps: int = LOGGING_STEPS,
    keep_checkpoints: bool = False,
    on_step: Callable[[int], None] | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Train on ``pairs``, rank ``valid_pairs`` at step 0 and at every checkpoint, and
    write the best (:mod:`citeval.curves`) to ``output_dir/model``; return the
    ``training.json`` record.

    Returns ``{}`` when ``output_dir/model`` is already finished. ``on_step(step)`` is
    called after each optimizer step (1-based), before that step's checkpoint is saved;
    tests raise from it to simulate a killed job.
    """
    output = Path(output_dir)
    final = output / FINAL_DIR
    if (final / TRAINING_JSON).is_file():
        LOG.info("%s is finished (it has %s): nothing to do", final, TRAINING_JSON)
        if not keep_checkpoints:  # left by a job that died before deleting them
            shutil.rmtree(output / CHECKPOINT_DIR, ignore_errors=True)
        return {}
    started = time.perf_counter()
    queries = len({p.query_id for p in pairs})
    rows = len(rankable_queries(pairs)) if settings.listwise else len(pairs)
    per_epoch, steps = total_steps(rows, settings)
    if settings.warmup_steps >= steps:
        LOG.warning(
            "warm-up (%d steps) is not shorter than the run (%d steps): the learning rate "
            "never reaches %g",
            settings.warmup_steps,
            steps,
            settings.learning_rate,
        )
    checkpoints = output / CHECKPOINT_DIR
    expected = fingerprint(settings, pairs, valid_pairs)
    resume, state = resume_point(checkpoints, expected)
    reranker = _reranker(settings.base_model, settings, device, new=True)
    evaluator, valid_queries = _evaluator(reranker, valid_pairs, texts, settings.batch_size)
    LOG.info(
        "training on %d pairs (%d positives) of %d queries, %d steps of %d %s, %d steps per "
        "epoch; %d held-out queries rank their candidates every %d steps%s",
        len(pairs),
        expected["positives"],
        queries,
        steps,
        settings.batch_size,
        "queries" if settings.listwise else "pairs",
        per_epoch,
        valid_queries,
        settings.eval_steps,
        f", resuming from {resume}" if resume is not None else "",
    )
    trainer, batch = _trainer(
        reranker,
        _dataset(reranker, pairs, texts, settings.listwise),
        evaluator,
        settings,
        checkpoints,
        resuming=resume is not None,
        logging_steps=logging_steps,
        on_step=on_step,
    )
    if state.get("global_step", 0) >= steps:
        # The trainer resumed from the last step's checkpoint would take one step more:
        # the job died after training, before the model folder was renamed.
        LOG.info("%s is the last step's checkpoint: training is over", resume)
        log_history, train_loss, train_seconds = state["log_history"], None, 0.0
    else:
        result = trainer.train(resume_from_checkpoint=str(resume) if resume else None)
        log_history = trainer.state.log_history
        train_loss = float(result.training_loss)
        train_seconds = float(result.metrics["train_runtime"])
    curve = Curve.from_log_history(log_history, MAP_KEY, MRR_KEY, valid_queries)
    curve.log(f"the reranker ({settings.head} head on {settings.base_model})")
    kept = curve.kept.step
    if kept == 0:
        model = _reranker(settings.base_model, settings, device, new=True).model
    else:
        model = _reranker(
            str(checkpoints / f"checkpoint-{kept}"), settings, device, new=False
        ).model
    model.eval()
    record = {
        "settings": expected["settings"],
        "pairs": expected["pairs"],
        "positives": expected["positives"],
        "pairs_sha256": expected["pairs_sha256"],
        "queries": queries,
        "steps": steps,
        "steps_per_epoch": per_epoch,
        "train_loss": train_loss,
        "losses": [
            {"step": entry["step"], "loss": entry["loss"], "lr": entry["learning_rate"]}
            for entry in log_history
            if "loss" in entry
        ],
        "validation": curve.record(),
        "seconds": round(time.perf_counter() - started, 3),
        "train_seconds": round(train_seconds, 3),
        "resumed_from": str(resume) if resume is not None else None,
        "device": reranker.device.type,
        "precision": precision(reranker.device),
        "micro_batch": batch[0],
        "gradient_accumulation": batch[1],
        **(extra or {}),
    }
    with atomic_path(final) as temporary:
        model.save(str(temporary))
        append_card_section(temporary, curve.card_section("This reranker"))
        write_json(record, temporary / TRAINING_JSON)
    LOG.info("wrote %s (%.1f s)", final, record["seconds"])
    if not keep_checkpoints:
        shutil.rmtree(checkpoints, ignore_errors=True)
    return record


def load_training_data(
    run_paths: Sequence[str | os.PathLike],
    qrels_paths: Sequence[str | os.PathLike],
    papers_dir: str | os.PathLike,
    top: int,
    *,
    validation_fraction: float,
    seed: int,
    query_papers: str | os.PathLike | None = None,
    add_cited: bool = False,
) -> tuple[list[Pair], list[Pair], dict[str, tuple[str | None, str | None]]]:
    """Read and check the runs, qrels and the papers the pairs need (queries from
    ``query_papers`` when given; ``add_cited``: see :func:`build_pairs`).

    Returns the training pairs, the held-out queries' pairs (:func:`citeval.curves.
    split_queries`; each with every paper it cites, so that the validation ranks them all)
    and the texts.
    """
    if len(run_paths) != len(qrels_paths) or not run_paths:
        raise CitevalError(
            f"give one --qrels per --run (got {len(run_paths)} runs, {len(qrels_paths)} qrels)"
        )
    runs = [(path, read_ranked_run(path)) for path in run_paths]
    qrels = [read_qrels(path) for path in qrels_paths]
    every_pair = build_pairs(runs, qrels, top, add_cited)
    _, held_out = split_queries((p.query_id for p in every_pair), validation_fraction, seed)
    pairs, _ = split_pairs(every_pair, held_out)
    _, valid_pairs = split_pairs(build_pairs(runs, qrels, top, add_cited=True), held_out)
    cited = {p.candidate_id for p in [*pairs, *valid_pairs] if p.label}
    texts = read_run_texts(papers_dir, [run for _, run in runs], top, query_papers, cited)
    missing = sorted(cited - set(texts))
    if missing:
        raise InputDataError(
            f"cited paper {missing[0]!r} of the qrels is not in the papers corpus",
            path=str(qrels_paths[0]),
        )
    for path, run in runs:
        check_in_corpus(run, path, texts, top)
    if not any(p.label for p in pairs):
        raise InputDataError(
            f"no positive pair among the top {top} of the runs' training queries: no cited "
            f"paper was retrieved ({', '.join(str(p) for p in run_paths)})"
        )
    return pairs, valid_pairs, texts
