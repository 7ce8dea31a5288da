"""Configs as the Python side sees them: a path, TOML text or a dict, turned
into TOML text for the core; dotted-path overrides for sweeps; content hashes.

Nothing here imports polars: sweep workers need only this and ``_core``.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import _core

ConfigLike = str | os.PathLike[str] | Mapping[str, Any]


@dataclass(frozen=True)
class Source:
    """A config ready for the core: its TOML text, the label errors name it
    by, the folder its relative paths resolve against, and a short name."""

    text: str
    label: str
    base_dir: str
    name: str


def _strip_none(v: Any) -> Any:
    # TOML has no null: a None means "leave at the default".
    if isinstance(v, Mapping):
        return {str(k): _strip_none(x) for k, x in v.items() if x is not None}
    if isinstance(v, list | tuple):
        return [_strip_none(x) for x in v]
    return v


def _check_values(v: Any, path: str = "") -> None:
    """Refuse what a config file cannot hold, naming its key path as the
    core does (``workload[0].load``): NaN and infinities (no field takes
    them) and objects that are not numbers, strings, booleans, lists or
    dicts."""
    from ._errors import ConfigError

    if isinstance(v, Mapping):
        for k, x in v.items():
            _check_values(x, f"{path}.{k}" if path else str(k))
    elif isinstance(v, list | tuple):
        for i, x in enumerate(v):
            _check_values(x, f"{path}[{i}]")
    elif isinstance(v, float) and not math.isfinite(v):
        raise ConfigError(f"<dict>: {path}: {v} is not a valid value", path, "<dict>")
    elif not isinstance(v, str | int | float | bool):
        raise ConfigError(
            f"<dict>: {path}: a {type(v).__name__} is not a valid value "
            "(use numbers, strings, booleans, lists and dicts)",
            path,
            "<dict>",
        )


def dict_to_toml(cfg: Mapping[str, Any]) -> str:
    """TOML text of a config given as nested dicts and lists. Raises
    :class:`ConfigError` naming the key of a value no config can hold."""
    clean = _strip_none(cfg)
    _check_values(clean)
    return _core.json_to_toml(json.dumps(clean, allow_nan=False))


def source_of(config: ConfigLike, base_dir: str | os.PathLike[str] | None = None) -> Source:
    """Make a :class:`Source` of a path, TOML text (any string with a line
    break) or a dict. Relative paths inside the config resolve against the
    config file's folder, else ``base_dir``, else the current folder."""
    if isinstance(config, Mapping):
        name = str(config.get("name") or "run")
        return Source(dict_to_toml(config), "<dict>", str(base_dir or "."), name)
    if isinstance(config, str) and "\n" in config:
        try:
            name = str(tomllib.loads(config).get("name") or "run")
        except tomllib.TOMLDecodeError:
            name = "run"  # the core reports the syntax error with its line
        return Source(config, "<string>", str(base_dir or "."), name)
    if isinstance(config, str | os.PathLike):
        p = Path(config)
        text = p.read_text(encoding="utf-8")
        return Source(text, str(p), str(base_dir or p.parent), p.stem)
    raise TypeError(f"config must be a path, TOML text or a dict, not {type(config).__name__}")


def load_dict(src: Source) -> dict[str, Any]:
    """The config as nested dicts (for overrides)."""
    try:
        return tomllib.loads(src.text)
    except tomllib.TOMLDecodeError as e:
        from ._errors import ConfigError

        raise ConfigError(f"{src.label}: {e}", None, src.label, getattr(e, "lineno", None)) from e


# Short names for the keys people sweep most.
ALIASES = {
    "load": "workload.*.load",
    "flows": "workload.*.flows",
}


def resolve_key(key: str) -> tuple[str, str]:
    """(column name, dotted path) of a grid key. A key is an alias (``load``),
    a dotted path (``workload.0.load``, ``workload[0].load``; ``*`` is every
    element of a list), or ``name=path`` to choose the column name."""
    if "=" in key:
        col, path = key.split("=", 1)
        return col.strip(), path.strip()
    if key in ALIASES:
        return key, ALIASES[key]
    path = key.replace("[", ".").replace("]", "")
    col = "".join(c if c.isalnum() else "_" for c in path.replace(".*", "")).strip("_")
    return col, path


def set_path(cfg: dict[str, Any], path: str, value: Any) -> None:
    """Set ``cfg[path] = value`` for a dotted path; creates missing tables."""
    parts = [p for p in path.replace("[", ".").replace("]", "").split(".") if p]
    if not parts:
        raise KeyError("empty key")

    def go(node: Any, i: int) -> None:
        part = parts[i]
        last = i == len(parts) - 1
        if isinstance(node, list):
            if part == "*":
                targets = list(range(len(node)))
            else:
                try:
                    targets = [int(part)]
                except ValueError:
                    raise KeyError(f"{path}: `{part}` is not a list index") from None
            for j in targets:
                if j >= len(node):
                    raise KeyError(f"{path}: index {j} out of range ({len(node)} entries)")
                if last:
                    node[j] = copy.deepcopy(value)
                else:
                    go(node[j], i + 1)
            return
        if not isinstance(node, dict):
            raise KeyError(f"{path}: `{parts[i - 1]}` is not a table")
        if last:
            node[part] = copy.deepcopy(value)
        else:
            go(node.setdefault(part, {}), i + 1)

    go(cfg, 0)


def get_path(cfg: Mapping[str, Any], path: str) -> Any:
    """``cfg[path]`` for a dotted path (the first element for ``*``), or None."""
    node: Any = cfg
    for part in [p for p in path.replace("[", ".").replace("]", "").split(".") if p]:
        if isinstance(node, list):
            idx = 0 if part == "*" else int(part) if part.isdigit() else None
            if idx is None or idx >= len(node):
                return None
            node = node[idx]
        elif isinstance(node, Mapping):
            if part not in node:
                return None
            node = node[part]
        else:
            return None
    return node


def content_hash(cfg: Mapping[str, Any]) -> str:
    """A run id: 16 hex digits of SHA-256 over the config's canonical JSON.
    Equal configs (seed included) get equal ids wherever they are made."""
    blob = json.dumps(cfg, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
