"""YAML loading that remembers where each mapping, key and list item is, so errors can name the line.

Numbers are read as YAML 1.2 reads them: `2e-4`, `1E3`, `-1e30` and `1.5e5` are floats (PyYAML's
YAML 1.1 resolver leaves a float without a dot, or with an unsigned exponent, a string).

Each course file's keys are declared beside its parser as a `KeyTable` of `Key`s (name, type, default,
meaning): the parser refuses a key its table lacks and takes its defaults from it, and the instructors'
reference (docs/instructors/reference.md) is written from the same tables, so the two cannot drift apart.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import yaml

from grader.errors import ConfigError

_MISSING = object()
REQUIRED = _MISSING  # a Key's default where the file must write the key


@dataclass(frozen=True)
class Key:
    """One key a course file may hold: its name, the type of its value, its default and what it means, in a line."""

    name: str
    type: str                  # what the value is, as the file writes it: "number (CPU seconds)", "list of names"
    meaning: str
    default: Any = REQUIRED    # the value where the file leaves the key out; REQUIRED: it must be written
    shown: str = ""            # the default in words where it is worked out rather than a value ("starter/STUB")

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def written(self) -> str:
        """The default as the reference shows it: words where it is worked out, else as YAML writes the value."""
        if self.shown:
            return self.shown
        if self.required:
            return "required"
        value = self.default
        if value is None:
            return "none"
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, (list, tuple, dict)):
            return yaml.safe_dump(list(value) if isinstance(value, tuple) else value, default_flow_style=True).strip()
        return f"{value:g}" if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class KeyTable:
    """The keys of one mapping of a course file (exercise.yaml, its `scale` section, a case), in the order shown."""

    where: str                 # the mapping, as the reference heads it: "exercise.yaml", "exercise.yaml: scale"
    keys: tuple[Key, ...]

    def __iter__(self) -> Iterator[Key]:
        return iter(self.keys)

    def __getitem__(self, name: str) -> Key:
        return next(key for key in self.keys if key.name == name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(key.name for key in self.keys)

    def default(self, name: str) -> Any:
        """The value a file that leaves `name` out is read with (a copy: a parser may keep it as its own)."""
        return copy.deepcopy(self[name].default)

    def unknown(self, mapping: Any) -> list[str]:
        """The keys of `mapping` the table does not declare, in the order the file writes them."""
        found = [key for key in mapping if key not in self.names] if isinstance(mapping, dict) else []
        return sorted(found, key=lambda key: (line_of_key(mapping, key) or 0, str(key)))


# YAML 1.2's floats that YAML 1.1's resolver misses: an exponent without a dot (2e-4, 1E3) or without a sign (1.5e5).
YAML12_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$")


class LineDict(dict):
    """A mapping from a YAML file that knows the line it starts on and the line of each key (1-based)."""

    line: int | None = None
    key_lines: dict = {}


class LineList(list):
    """A list from a YAML file that knows the line it starts on and the line of each item."""

    line: int | None = None
    item_lines: list = []


class _Lines:
    """Mappings and lists that know their lines, and a key given twice refused (YAML would keep the last silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> LineDict:
        lines: dict = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in lines:
                raise ConfigError(f"key {key!r} appears twice", None, key_node.start_mark.line + 1)
            lines[key] = key_node.start_mark.line + 1
        mapping = LineDict(super().construct_mapping(node, deep=True))
        mapping.line = node.start_mark.line + 1
        mapping.key_lines = lines
        return mapping

    def construct_line_list(self, node: yaml.SequenceNode) -> LineList:
        items = LineList(self.construct_sequence(node, deep=True))
        items.line = node.start_mark.line + 1
        items.item_lines = [item.start_mark.line + 1 for item in node.value]
        return items


class _Loader(_Lines, yaml.SafeLoader):
    """The pure-Python parser: its messages are the ones shown for a file that is not valid YAML."""


# libyaml's parser, where PyYAML has it, reads a valid file several times faster (every grade reads every
# case file); a file it rejects is read again by the pure-Python one, for the same message everywhere.
_FastLoader = type("_FastLoader", (_Lines, yaml.CSafeLoader), {}) if hasattr(yaml, "CSafeLoader") else _Loader
for _loader in {_Loader, _FastLoader}:
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _loader.construct_mapping)
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _loader.construct_line_list)
    # Tried after YAML 1.1's own resolvers: only what they would leave a string becomes a float.
    _loader.add_implicit_resolver("tag:yaml.org,2002:float", YAML12_FLOAT, list("-+0123456789."))


def load_yaml(path: Path) -> Any:
    """Parse a YAML file; a missing file or a syntax error becomes a ConfigError naming path and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("file not found", path) from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read: {error}", path) from None
    try:
        try:
            return yaml.load(text, Loader=_FastLoader)
        except yaml.YAMLError:
            return yaml.load(text, Loader=_Loader)
    except ConfigError as error:
        raise ConfigError(str(error).split(": ", 1)[-1], path, error.line) from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        context, start = getattr(error, "context", None), getattr(error, "context_mark", None)
        if context and start is not None and (mark is None or start.line != mark.line):
            problem += f" ({context.removeprefix('while ')} that starts on line {start.line + 1})"
        raise ConfigError(f"not valid YAML: {problem}", path, mark.line + 1 if mark else None) from None


def line_of(value: Any) -> int | None:
    """The line a mapping or list started on, when it came from a file."""
    return getattr(value, "line", None)


def line_of_key(mapping: Any, key: Any) -> int | None:
    """The line `key` is written on in a mapping from a file; else the mapping's own line."""
    return getattr(mapping, "key_lines", {}).get(key) or line_of(mapping)


def require(mapping: Any, key: str, kind: type | tuple, path: Path, default: Any = _MISSING) -> Any:
    """mapping[key], checked against `kind`; a missing or mistyped value names file and line."""
    if not isinstance(mapping, dict):
        raise ConfigError("expected a mapping of keys to values", path, line_of(mapping))
    if key not in mapping:
        if default is _MISSING:
            raise ConfigError(f"missing required key {key!r}", path, line_of(mapping))
        return default
    value = mapping[key]
    if isinstance(value, bool) and kind in (int, float, (int, float)):
        raise ConfigError(f"{key!r} must be a number, not {value!r}", path, line_of_key(mapping, key))
    if not isinstance(value, kind):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise ConfigError(f"{key!r} must be a {names}, not {value!r}", path, line_of_key(mapping, key))
    return value
