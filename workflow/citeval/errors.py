"""Errors that point a user at the exact place in their input or config that is wrong."""

from __future__ import annotations


class CitevalError(Exception):
    """Base class for every error this package raises on purpose."""


class InputDataError(CitevalError):
    """Bad input data, located by file, line (or row) and field where known."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.path = path
        self.line = line
        self.field = field
        self.reason = message
        where = ""
        if path is not None:
            where = str(path)
            if line is not None:
                where += f":{line}"
            if field is not None:
                where += f" (field '{field}')"
            where += ": "
        elif field is not None:
            where = f"field '{field}': "
        super().__init__(where + message)


class ConfigError(CitevalError):
    """A config value that fails validation; the message names the key path."""


class ResourceError(CitevalError):
    """A job given too little of a resource (memory) for its input; says what to raise."""
