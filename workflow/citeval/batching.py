"""Model inputs in length-sorted batches by a token budget, padded ahead of the model.

The encoder (:class:`citeval.models.Encoder`) and the reranker
(:class:`citeval.rerank.model.Reranker`) share this path:

* :class:`Tokens` holds tokenised inputs flat (CSR): input ``i`` has
  ``ids[starts[i]:starts[i + 1]]``, 4 bytes a token;
* :func:`token_budget_batches` cuts the inputs, longest first, into batches whose padded
  size (members × the longest member) stays within a token budget: short texts share big
  batches, long ones small batches, and the GPU's work per batch stays about constant;
* :func:`padded_batches` pads each batch on the host in a background thread, in pinned
  memory on CUDA, so that the copy to the GPU is asynchronous and the model's forward
  pass never waits on Python.
"""

from __future__ import annotations

import collections
import concurrent.futures
import itertools
import os
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

# Batches padded ahead of the one the model is working on.
PREFETCH_BATCHES = 2


@dataclass
class Tokens:
    """Tokenised inputs, flat: input ``i`` is ``ids[starts[i]:starts[i + 1]]``.

    ``extra`` holds per-token arrays aligned with ``ids`` (token type ids of a pair, the
    sentence of each token for ASPIRE), padded with the value given to
    :func:`padded_batches`.
    """

    ids: np.ndarray
    starts: np.ndarray
    extra: dict[str, np.ndarray]

    @classmethod
    def from_lists(
        cls, ids: Sequence[Sequence[int]], extra: dict[str, Sequence[Sequence[int]]] | None = None
    ) -> Tokens:
        """Flatten per-input token lists (the tokenizer's ``input_ids``)."""
        lengths = np.fromiter((len(row) for row in ids), dtype=np.int64, count=len(ids))
        starts = np.zeros(len(ids) + 1, dtype=np.int64)
        np.cumsum(lengths, out=starts[1:])
        return cls(
            ids=_flatten(ids, int(starts[-1])),
            starts=starts,
            extra={name: _flatten(rows, int(starts[-1])) for name, rows in (extra or {}).items()},
        )

    @classmethod
    def concatenate(cls, parts: Sequence[Tokens]) -> Tokens:
        """One :class:`Tokens` of several, in order (their ``extra`` keys must agree)."""
        if not parts:
            return cls(ids=np.zeros(0, np.int32), starts=np.zeros(1, np.int64), extra={})
        offsets = np.cumsum([0] + [len(part.ids) for part in parts[:-1]])
        starts = np.concatenate(
            [parts[0].starts[:1]]
            + [part.starts[1:] + offset for part, offset in zip(parts, offsets, strict=True)]
        )
        return cls(
            ids=np.concatenate([part.ids for part in parts]),
            starts=starts,
            extra={
                name: np.concatenate([part.extra[name] for part in parts])
                for name in parts[0].extra
            },
        )

    def __len__(self) -> int:
        return len(self.starts) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.starts)


def _flatten(rows: Sequence[Sequence[int]], total: int) -> np.ndarray:
    # One C-level pass over every token (a slice assignment per row costs a Python
    # round trip each, with the GIL held while the model thread needs it).
    return np.fromiter(itertools.chain.from_iterable(rows), dtype=np.int32, count=total)


def token_budget_batches(
    lengths: np.ndarray, max_tokens: int, max_size: int | None = None
) -> list[np.ndarray]:
    """Input indices in batches, longest input first, each within ``max_tokens`` padded
    tokens (members × longest member) and ``max_size`` members (None: no cap).

    Every input is in exactly one batch; an input longer than ``max_tokens`` is a batch of
    its own. The order is a stable sort by length, so equal inputs give equal batches.
    """
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
    order = np.argsort(-np.asarray(lengths), kind="stable")
    batches = []
    begin = 0
    while begin < len(order):
        # Sorted longest first: the batch's first member sets its padded width.
        size = max(1, max_tokens // max(int(lengths[order[begin]]), 1))
        if max_size is not None:
            size = min(size, max_size)
        batches.append(order[begin : begin + size])
        begin += size
    return batches


def pad(tokens: Tokens, members: np.ndarray, pad_id: int, extra_pad: dict[str, int]) -> dict:
    """The padded ``(members, width)`` int64 arrays of one batch: ``input_ids``,
    ``attention_mask`` and each ``extra`` array."""
    begins = tokens.starts[members]
    lengths = tokens.starts[members + 1] - begins
    width = int(lengths.max())
    mask = np.arange(width) < lengths[:, None]
    # Row-major positions of the real tokens, in the order of the flat array's slices.
    source = np.repeat(begins - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())
    arrays = {"input_ids": tokens.ids, **tokens.extra}
    fill = {"input_ids": pad_id, **extra_pad}
    out = {}
    for name, flat in arrays.items():
        padded = np.full((len(members), width), fill[name], dtype=np.int64)
        padded[mask] = flat[source]
        out[name] = padded
    out["attention_mask"] = mask.astype(np.int64)
    return out


def padded_batches(
    tokens: Tokens,
    batches: Sequence[np.ndarray],
    *,
    pad_id: int,
    device: Any,
    extra_pad: dict[str, int] | None = None,
) -> Iterator[tuple[np.ndarray, dict[str, Any]]]:
    """Yield ``(members, tensors on device)`` per batch, in order.

    A background thread pads the next :data:`PREFETCH_BATCHES` batches (numpy releases the
    GIL) into pinned memory when ``device`` is CUDA; the copies are issued without waiting,
    so they overlap the model's work on the batch before. The batch's input indices come
    along as the tensor ``members`` (on the device, for indexing results there): a copy
    from ordinary host memory would make the host wait for the GPU at every batch.
    """
    import torch

    pinned = device.type == "cuda"
    extra_pad = extra_pad or {}

    def host(members: np.ndarray) -> dict[str, Any]:
        arrays = {**pad(tokens, members, pad_id, extra_pad), "members": members}
        tensors = {name: torch.from_numpy(array) for name, array in arrays.items()}
        if pinned:
            tensors = {name: tensor.pin_memory() for name, tensor in tensors.items()}
        return tensors

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        upcoming = iter(batches)
        pending = collections.deque(
            (members, pool.submit(host, members))
            for members in itertools.islice(upcoming, PREFETCH_BATCHES)
        )
        while pending:
            members, future = pending.popleft()
            following = next(upcoming, None)
            if following is not None:
                pending.append((following, pool.submit(host, following)))
            yield (
                members,
                {
                    name: tensor.to(device, non_blocking=pinned)
                    for name, tensor in future.result().items()
                },
            )


# --- tokenization in worker processes ---------------------------------------------------

# Worker processes a GPU job tokenizes in: half its CPUs, at most this many.
MAX_TOKENIZER_PROCESSES = 4

_worker: Any = None


def tokenizer_processes() -> int:
    """Tokenizer processes for this job (``sched_getaffinity``: a SLURM job's CPUs)."""
    return max(1, min(MAX_TOKENIZER_PROCESSES, len(os.sched_getaffinity(0)) // 2))


class TokenizerPool:
    """Runs methods of a picklable tokenizing object in spawned worker processes.

    A thread would do for the Rust tokenizer itself, but turning its output into Python
    lists and arrays holds the GIL, and the thread that launches the GPU's kernels then
    waits for it at every switch: on a GPU the model idled more than half the time.
    Processes hand back numpy arrays, which cost the model's thread nothing.
    """

    def __init__(self, worker: Any, processes: int) -> None:
        import multiprocessing

        self.processes = processes
        self._pool = concurrent.futures.ProcessPoolExecutor(
            processes,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_install_worker,
            initargs=(worker,),
        )
        # The processes end with the object that owns the pool, not with the interpreter.
        weakref.finalize(self, self._pool.shutdown, wait=False, cancel_futures=True)

    def submit(self, method: str, *args: Any) -> concurrent.futures.Future:
        """``worker.method(*args)`` in a worker process."""
        return self._pool.submit(_call_worker, method, *args)

    def close(self) -> None:
        self._pool.shutdown(cancel_futures=True)


def _install_worker(worker: Any) -> None:
    global _worker
    _worker = worker


def _call_worker(method: str, *args: Any) -> Any:
    return getattr(_worker, method)(*args)
