"""The typed records every JSON file of the grader is read into: each value checked as declared, never converted."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from grader.results import file
from grader.results.typed import Mismatch, from_json, nullable, to_json


@dataclass(kw_only=True)
class Inner:
    count: int
    ratio: float = 1.0


@dataclass(kw_only=True)
class Outer:
    name: str
    inner: Inner
    items: list[Inner] = field(default_factory=list)
    pair: tuple[str, ...] = ()
    table: dict[str, int] = field(default_factory=dict)
    note: str | None = None
    shown: str | None = nullable()
    anything: Any = None


def test_a_record_is_read_with_its_defaults_and_written_back_in_field_order() -> None:
    read = from_json(Outer, {"inner": {"count": 2}, "name": "n", "pair": ["a", "b"], "unknown": [1]})
    assert read == Outer(name="n", inner=Inner(count=2), pair=("a", "b"))
    # A None field is left out, but for a nullable one; an unknown field read is not kept.
    assert to_json(read) == {"name": "n", "inner": {"count": 2, "ratio": 1.0}, "items": [], "pair": ["a", "b"],
                             "table": {}, "shown": None}
    assert list(to_json(read)) == ["name", "inner", "items", "pair", "table", "shown"]


@pytest.mark.parametrize("value, where", [
    ({"name": "n"}, "inner: missing"),
    ({"name": 3, "inner": {"count": 1}}, "name: expected a string, found a number"),
    ({"name": "n", "inner": {"count": True}}, "inner.count: expected a whole number, found true or false"),
    ({"name": "n", "inner": {"count": "3"}}, "inner.count: expected a whole number, found a string"),
    ({"name": "n", "inner": {"count": 1.0}}, "inner.count: expected a whole number, found a number"),
    ({"name": "n", "inner": {"count": 1, "ratio": False}}, "inner.ratio: expected a number, found true or false"),
    ({"name": "n", "inner": {"count": 1}, "items": [{"count": 1}, {}]}, "items[1].count: missing"),
    ({"name": "n", "inner": {"count": 1}, "table": {"a": None}}, "table.a: expected a whole number, found null"),
    ({"name": "n", "inner": {"count": 1}, "pair": "ab"}, "pair: expected a list, found a string"),
    ({"name": "n", "inner": []}, "inner: expected an object, found a list"),
    ([], "expected an object, found a list"),
])
def test_a_value_not_as_declared_is_named_by_its_path(value, where) -> None:
    with pytest.raises(Mismatch) as found:
        from_json(Outer, value)
    assert str(found.value) == where


def test_a_whole_number_is_a_number_and_stays_as_written() -> None:
    read = from_json(Inner, {"count": 1, "ratio": 0})
    assert read.ratio == 0 and type(read.ratio) is int and to_json(read) == {"count": 1, "ratio": 0}


def test_the_results_file_keeps_every_string_inert_and_writes_its_format() -> None:
    results = file.ResultsFile(score=1.0, output="\x1b[2J", extra_data=file.RunRecord(
        format=file.FORMAT, status="passed", notes=["\u202e"], submission=file.SubmissionRecord(
            id="a", name="a\x07.py", settings={"k\x1b": "v"})))
    text = file.encode(results)
    assert "\x1b" not in text and "\\\\x1b[2J" in text and "\\\\u202e" in text and "\\\\x07" in text
    again = file.decode(text)
    assert again.extra_data.format == file.FORMAT and again.extra_data.submission.settings == {"k\\x1b": "v"}
    assert again.extra_data.max_score is None and '"max_score": null' in text  # nullable: written as null
    assert '"counts"' not in text  # None: left out
