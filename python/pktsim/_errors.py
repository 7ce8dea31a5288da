"""The exception raised for bad input (config, topology, workload files)."""

from __future__ import annotations

from typing import Any


class ConfigError(ValueError):
    """A config, topology or input file is invalid.

    ``str(err)`` is the one line the ``pktsim`` command prints. The
    attributes say where the problem is, when known:

    - ``field``: the dotted TOML path, e.g. ``"workload[0].load"``;
    - ``file``: the config (``"<string>"``, ``"<dict>"``) or input file;
    - ``line``: 1-based line in ``file``.
    """

    def __init__(
        self,
        message: str,
        field: str | None = None,
        file: str | None = None,
        line: int | None = None,
    ) -> None:
        super().__init__(message)
        self.field = field
        self.file = file
        self.line = line

    def __reduce__(self) -> tuple[type[ConfigError], tuple[Any, ...]]:
        # Keep the location when the error crosses processes (sweep workers).
        return (type(self), (str(self), self.field, self.file, self.line))
