"""Sentence-transformers folders: their modules and prompts, read as sentence-transformers
reads them, so that citeval's vectors of such a folder are ``SentenceTransformer.encode``'s.

A folder with ``modules.json`` is a pipeline: a Transformer, then modules that turn its
token vectors into one vector (Pooling, Dense, Normalize, ...). citeval runs the
Transformer itself (token-budget batches, fp16 on CUDA, its own ``max_length``) and hands
its last layer to the folder's other modules, loaded with sentence-transformers' own
classes and run with their own ``forward``. :data:`HONOURED` lists the modules that work
on a pooled or token vector alone; any other module (a Router, a CNN, custom code, a first
module that is not a Transformer) is refused by name, because running part of a pipeline
gives vectors that look right and are not.

Prompts. ``config_sentence_transformers.json`` holds ``prompts`` (name -> text) and
``default_prompt_name``. The query prompt is the ``query`` prompt; the document prompt the
first of ``document``, ``passage`` and ``corpus`` (the names ``encode_query`` and
``encode_document`` look for); either falls back to the default prompt. The registry
entry's ``query_prompt`` / ``document_prompt`` take precedence.

This module reads files only (no torch), so the plan can ask whether a model's query and
document prompts differ.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from citeval.errors import CitevalError

MODULES_FILE = "modules.json"
CONFIG_FILE = "config_sentence_transformers.json"
TRANSFORMER_CONFIG_FILE = "sentence_bert_config.json"

ROLES = ("query", "document")
# Weights for runtimes other than torch, which a hub repository may hold besides its own.
OTHER_RUNTIMES = ["onnx/*", "openvino/*", "*.onnx", "*.h5", "*.msgpack", "*.ot", "*.mlmodel"]
DOCUMENT_PROMPT_NAMES = ("document", "passage", "corpus")

# Modules whose forward reads the features the Transformer leaves (token vectors and the
# attention mask) or a pooled vector, and nothing else: what citeval can hand them.
HONOURED = ("Pooling", "Dense", "Normalize", "LayerNorm", "Dropout")
TRANSFORMER = "Transformer"
_PACKAGE = "sentence_transformers."


@dataclass(frozen=True)
class Prompts:
    """The texts put before a query's and a candidate's input ("" for none)."""

    query: str = ""
    document: str = ""

    @property
    def differ(self) -> bool:
        return self.query != self.document

    def of(self, role: str | None, model: str) -> str:
        """The prompt of ``role``; ``None`` is one input for both roles, which only a
        model whose prompts agree can give."""
        if role is None:
            if self.differ:
                raise CitevalError(
                    f"model {model!r}: its query prompt {self.query!r} and document prompt "
                    f"{self.document!r} differ, but this job embeds queries and candidates "
                    "with one input (the plan saw no difference: the model's folder was not "
                    f"on this machine when the workflow was planned); set models.{model}."
                    "query_prompt and document_prompt in the config, or download the model "
                    "before planning"
                )
            return self.query
        if role not in ROLES:
            raise CitevalError(f"role must be one of {list(ROLES)}, got {role!r}")
        return self.query if role == "query" else self.document


@dataclass(frozen=True)
class Module:
    """One entry of ``modules.json``: its class name, folder and full type."""

    index: int
    name: str
    folder: str
    type: str

    @property
    def kind(self) -> str:
        return self.type.rsplit(".", 1)[-1]

    def describe(self, root: str) -> str:
        where = str(Path(root) / self.folder) if self.folder else root
        return f"module {self.index} {self.type!r} (folder {where!r})"


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise CitevalError(f"{path}: cannot read ({error})") from error


def is_folder(path: str | os.PathLike | None) -> bool:
    """Whether ``path`` is a sentence-transformers folder (it has ``modules.json``)."""
    return path is not None and (Path(path) / MODULES_FILE).is_file()


def read_modules(root: str | os.PathLike) -> list[Module]:
    entries = _read_json(Path(root) / MODULES_FILE)
    if not isinstance(entries, list):
        raise CitevalError(f"{Path(root) / MODULES_FILE}: expected a list of modules")
    return [
        Module(
            index=index,
            name=str(entry.get("name", index)),
            folder=str(entry.get("path", "")),
            type=str(entry.get("type", "")),
        )
        for index, entry in enumerate(entries)
    ]


def check_modules(root: str, modules: list[Module], model: str) -> None:
    """Refuse a pipeline citeval cannot run whole: the first module must be
    sentence-transformers' Transformer, every other one of :data:`HONOURED`, and there
    must be a Pooling."""
    if not modules or modules[0].kind != TRANSFORMER or not modules[0].type.startswith(_PACKAGE):
        first = modules[0].describe(root) if modules else "no module"
        raise CitevalError(
            f"model {model!r}: {root}: the first module must be sentence-transformers' "
            f"Transformer, whose weights citeval loads and batches itself; found {first}"
        )
    for module in modules[1:]:
        if module.kind not in HONOURED or not module.type.startswith(_PACKAGE):
            raise CitevalError(
                f"model {model!r}: cannot honour {module.describe(root)}: citeval runs "
                f"sentence-transformers' {', '.join(HONOURED)} modules after the "
                "Transformer, and leaving this one out would give other vectors than "
                "SentenceTransformer.encode"
            )
    if not any(module.kind == "Pooling" for module in modules):
        raise CitevalError(f"model {model!r}: {root}: no Pooling module in modules.json")


def transformer_config(root: str, module: Module) -> dict[str, Any]:
    """The Transformer module's settings (``max_seq_length``, ``do_lower_case``)."""
    path = Path(root) / module.folder / TRANSFORMER_CONFIG_FILE
    if not path.is_file():
        return {}
    config = _read_json(path)
    return config if isinstance(config, dict) else {}


def transformer_difference(settings: Mapping[str, Any]) -> str | None:
    """Why a Transformer module's settings ask for more than citeval's transformer gives
    (the text's last hidden layer as token vectors), or None."""
    if settings.get("do_lower_case"):
        return "it lower-cases its input (do_lower_case), which citeval's tokenization does not"
    task = settings.get("transformer_task", "feature-extraction")
    if task != "feature-extraction":
        return f"its transformer_task is {task!r}; citeval reads the last hidden layer only"
    text = (settings.get("modality_config") or {}).get("text", {})
    if text.get("method", "forward") != "forward" or (
        text.get("method_output_name", "last_hidden_state") != "last_hidden_state"
    ):
        return f"its text input goes through {text}; citeval reads forward's last_hidden_state"
    output = settings.get("module_output_name", "token_embeddings")
    if output != "token_embeddings":
        return f"it writes {output!r}, not token_embeddings"
    return None


def folder_prompts(root: str | os.PathLike | None) -> tuple[str | None, str | None]:
    """The query and document prompts a folder declares (None: it declares none)."""
    if root is None:
        return None, None
    path = Path(root) / CONFIG_FILE
    if not is_folder(root) or not path.is_file():
        return None, None
    config = _read_json(path)
    prompts = config.get("prompts") or {}
    if not isinstance(prompts, Mapping):
        raise CitevalError(f"{path}: prompts must be a mapping of name to text")
    default_name = config.get("default_prompt_name")
    default = prompts.get(default_name) if default_name else None
    query = prompts.get("query", default)
    document = next((prompts[name] for name in DOCUMENT_PROMPT_NAMES if name in prompts), default)
    return query, document


def resolve_prompts(
    query_prompt: str | None, document_prompt: str | None, root: str | os.PathLike | None
) -> Prompts:
    """The configured prompts, each falling back to the folder's, then to none."""
    folder_query, folder_document = folder_prompts(root)
    query = query_prompt if query_prompt is not None else folder_query
    document = document_prompt if document_prompt is not None else folder_document
    return Prompts(query=query or "", document=document or "")


def cached_hub_folder(repo_id: str) -> str | None:
    """The local snapshot of an HF id whose ``modules.json`` is in the hub cache, without
    touching the network (the plan's view of a downloaded model)."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    try:
        found = try_to_load_from_cache(repo_id, MODULES_FILE)
    except ValueError:  # not a valid repo id
        return None
    return str(Path(found).parent) if isinstance(found, str) else None


def hub_folder(repo_id: str) -> str | None:
    """The local snapshot of an HF id that is a sentence-transformers model, downloaded
    when the hub is reachable; None for a plain transformers model (no ``modules.json``)
    or when the hub cannot say (loading the model then reports why)."""
    cached = cached_hub_folder(repo_id)
    if cached is not None:
        return cached
    try:
        from huggingface_hub import hf_hub_download, snapshot_download

        hf_hub_download(repo_id, MODULES_FILE)
        return snapshot_download(repo_id, ignore_patterns=OTHER_RUNTIMES)
    except Exception:  # any failure: load it as a plain model
        return None


def load_module(root: str, module: Module) -> Any:
    """A honoured module, loaded by sentence-transformers' own class from its folder."""
    from sentence_transformers.sentence_transformer import modules as st_modules

    cls = getattr(st_modules, module.kind)
    try:
        return cls.load(root, subfolder=module.folder, local_files_only=True)
    except (OSError, ValueError, TypeError, KeyError) as error:
        raise CitevalError(f"cannot load {module.describe(root)}: {error}") from error
