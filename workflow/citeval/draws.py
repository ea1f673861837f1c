"""Seeded random draws, shared by every sampler and by the significance tests.

Every draw of the pipeline (queries and pools of :mod:`citeval.sample` and
:mod:`citeval.local.sample`, MDCR's candidates, the local triplets, the randomization
tests) uses its own generator, :func:`seeded_rng`, whose stream depends only on the seed
and the keys naming the draw, never on the order the draws are made in. Ids are drawn
from sorted arrays and returned sorted (:func:`draw_sorted`, :func:`build_pool`), so the
same inputs and seed give the same bytes.

A sampler asked for more than there is applies :class:`SizeGuard` (the config's
``on_too_small``), and writes the pools it drew as rows of :data:`POOL_SCHEMA`
(``pools.parquet``, docs/contracts.md).
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from citeval.errors import ConfigError

log = logging.getLogger(__name__)

POOL_SCHEMA = pa.schema([("group", pa.string()), ("rep", pa.int16()), ("paper_id", pa.string())])


def seeded_rng(seed: int, *keys: object) -> np.random.Generator:
    """A generator whose stream depends only on ``seed`` and ``keys``, never on call order."""
    words = [int(seed)]
    for key in keys:
        words.append(int.from_bytes(hashlib.sha256(str(key).encode()).digest()[:8], "little"))
    return np.random.default_rng(np.random.SeedSequence(words))


def draw_sorted(rng: np.random.Generator, ids: pa.Array, size: int) -> list[str]:
    """Draw ``size`` distinct ids uniformly from the sorted array ``ids``; return them sorted."""
    if size <= 0:
        return []
    chosen = np.sort(rng.choice(len(ids), size=size, replace=False))
    return ids.take(pa.array(chosen)).to_pylist()


def build_pool(
    rng: np.random.Generator,
    positives: set[str],
    negatives_from: pa.Array,
    never_negative: set[str],
    size: int,
) -> pa.Array:
    """All ``positives`` plus random negatives from ``negatives_from``, sorted."""
    blocked = pa.array(sorted(positives | never_negative), pa.string())
    available = negatives_from.filter(pc.invert(pc.is_in(negatives_from, value_set=blocked)))
    negatives = draw_sorted(rng, available, min(size - len(positives), len(available)))
    return pa.array(sorted(positives.union(negatives)), pa.string())


@dataclass
class SizeGuard:
    """Applies ``on_too_small``: fail with a clear message, or cap and remember a warning."""

    policy: str
    warnings: list[str] = field(default_factory=list)

    def check(self, what: str, requested: int, available: int) -> int:
        if requested <= available:
            return requested
        message = f"{what}: requested {requested}, but only {available} are available"
        if self.policy == "fail":
            raise ConfigError(
                message + " (lower the size in the config, or set sampling.on_too_small: cap)"
            )
        log.warning("%s; capping to %d", message, available)
        self.warnings.append(message)
        return available
