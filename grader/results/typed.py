"""Typed records for the grader's JSON files: dataclasses made from a file's values, each field checked on reading.

A record's fields are the file's fields, in the order the file writes them. Reading checks every value against its
field's declared type (str, int, float, bool, Any, a record, a list, a tuple or a dict of them, any of these or
None), never converting one kind into another: a count written as "3" or true is not a count. A field without a
default must be present; an unknown field is passed over. Writing leaves a None field out of the file, but for a
field declared `nullable()`, which is written as null.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any, Callable, TypeVar

Record = TypeVar("Record")
Reader = Callable[[Any], Any]
NULL = "written as null"  # a field's metadata key: its None is written, not left out


class Mismatch(ValueError):
    """A value that is not of its field's type, or a field that is missing; `path` leads to it from the file's top."""

    def __init__(self, problem: str, path: tuple[str | int, ...] = ()) -> None:
        super().__init__(problem)
        self.problem = problem
        self.path = path

    def within(self, step: str | int) -> Mismatch:
        return Mismatch(self.problem, (step, *self.path))

    def __str__(self) -> str:
        return f"{dotted(self.path)}: {self.problem}" if self.path else self.problem


def dotted(path: tuple[str | int, ...]) -> str:
    """('tests', 3, 'extra_data') as 'tests[3].extra_data'."""
    return "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in path).lstrip(".")


def nullable(default: Any = None) -> Any:
    """A field whose None the file holds as null (a plain field's None is left out of the file)."""
    return dataclasses.field(default=default, metadata={NULL: True})


def to_json(value: Any) -> Any:
    """`value` as JSON values: a record as an object of its fields in order, its None fields left out unless
    nullable; lists and tuples as lists; dicts with their values turned too."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        found = {}
        for name, _, _, null in _fields(type(value)):
            item = getattr(value, name)
            if item is not None or null:
                found[name] = to_json(item)
        return found
    if isinstance(value, (list, tuple)):
        return [to_json(item) for item in value]
    if isinstance(value, dict):
        return {key: to_json(item) for key, item in value.items()}
    return value


def from_json(kind: type[Record], value: Any) -> Record:
    """A `kind` made of a file's decoded `value`; Mismatch names the first field that is not as declared."""
    return _reader(kind)(value)


@functools.cache
def _fields(kind: type) -> tuple[tuple[str, Any, bool, bool], ...]:
    """Each field of a record: its name, its type, whether the file must hold it, whether its None is written."""
    hints = typing.get_type_hints(kind)
    return tuple((field.name, hints[field.name],
                  field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING,
                  bool(field.metadata.get(NULL))) for field in dataclasses.fields(kind))


def _found(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return "a number"
    return {str: "a string", list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def _checked(expected: str, accept: Callable[[Any], bool]) -> Reader:
    def read(value: Any) -> Any:
        if accept(value):
            return value
        raise Mismatch(f"expected {expected}, found {_found(value)}")
    return read


# type() rather than isinstance(): true and false are not numbers, and a whole number is also a number.
_SCALARS: dict[Any, Reader] = {
    str: _checked("a string", lambda value: isinstance(value, str)),
    int: _checked("a whole number", lambda value: type(value) is int),
    float: _checked("a number", lambda value: type(value) in (int, float)),
    bool: _checked("true or false", lambda value: type(value) is bool),
}


@functools.cache
def _reader(kind: Any) -> Reader:
    """The function that checks (and, for records, builds) a value of `kind`."""
    if kind is Any:
        return lambda value: value
    if kind in _SCALARS:
        return _SCALARS[kind]
    if dataclasses.is_dataclass(kind):
        return _record_reader(kind)
    origin, arguments = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        return _optional_reader(kind, arguments)
    if origin is list or (origin is tuple and len(arguments) == 2 and arguments[1] is Ellipsis):
        return _sequence_reader(_reader(arguments[0]), origin)
    if origin is dict and arguments[0] is str:
        return _mapping_reader(_reader(arguments[1]))
    raise TypeError(f"no reader for {kind!r}")


def _optional_reader(kind: Any, arguments: tuple[Any, ...]) -> Reader:
    others = [argument for argument in arguments if argument is not type(None)]
    if len(others) != 1 or len(arguments) != 2:
        raise TypeError(f"only X | None is read, not {kind!r}")
    inner = _reader(others[0])
    return lambda value: None if value is None else inner(value)


def _sequence_reader(item: Reader, origin: type) -> Reader:
    def read(value: Any) -> Any:
        if not isinstance(value, list):
            raise Mismatch(f"expected a list, found {_found(value)}")
        found = []
        for index, element in enumerate(value):
            try:
                found.append(item(element))
            except Mismatch as error:
                raise error.within(index) from None
        return found if origin is list else tuple(found)
    return read


def _mapping_reader(item: Reader) -> Reader:
    def read(value: Any) -> Any:
        if not isinstance(value, dict):
            raise Mismatch(f"expected an object, found {_found(value)}")
        found = {}
        for key, element in value.items():
            try:
                found[key] = item(element)
            except Mismatch as error:
                raise error.within(key) from None
        return found
    return read


def _record_reader(kind: type) -> Reader:
    fields = [(name, _reader(hint), required) for name, hint, required, _ in _fields(kind)]

    def read(value: Any) -> Any:
        if not isinstance(value, dict):
            raise Mismatch(f"expected an object, found {_found(value)}")
        given = {}
        for name, reader, required in fields:
            if name in value:
                try:
                    given[name] = reader(value[name])
                except Mismatch as error:
                    raise error.within(name) from None
            elif required:
                raise Mismatch("missing", (name,))
        return kind(**given)
    return read
