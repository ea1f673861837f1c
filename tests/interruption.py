"""A training job killed mid-run, as the trainers' ``on_step`` callbacks simulate it."""

from __future__ import annotations

from collections.abc import Callable


class Killed(Exception):
    """Raised in place of the signal that would end the job."""


def die_at(step: int) -> Callable[[int], None]:
    """An ``on_step`` callback that kills the run after optimizer step ``step``."""

    def on_step(done: int) -> None:
        if done == step:
            raise Killed

    return on_step
