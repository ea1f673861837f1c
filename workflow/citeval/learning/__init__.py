"""Did each trained model learn? Its validation curve, tabulated and drawn
(:mod:`citeval.learning.report`)."""

from citeval.learning.report import (
    Trained,
    add_trained_argument,
    not_learned,
    not_learned_notes,
    read_trained,
    write_learning,
)

__all__ = [
    "Trained",
    "add_trained_argument",
    "not_learned",
    "not_learned_notes",
    "read_trained",
    "write_learning",
]
