"""Wildcard patterns from the names a config plans."""

from __future__ import annotations

import re
from collections.abc import Iterable


def alternatives(names: Iterable[str]) -> str:
    """A pattern matching exactly ``names`` (none: a pattern that matches nothing)."""
    return "|".join(re.escape(name) for name in names) or "(?!)"
