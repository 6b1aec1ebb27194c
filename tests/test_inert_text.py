"""Learner text is inert: no terminal ever acts on what a submission printed, raised or named."""

from __future__ import annotations

import re
import time

from grader.text import cut, inert

# Raw characters that must never reach a terminal or a results file.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\u2028\u2029]")


def test_controls_are_escaped_visibly_and_newlines_and_tabs_kept() -> None:
    assert inert("a\x1b[2J\rb\x07\x08\x7f\x85\tc\nd") == "a\\x1b[2J\\rb\\x07\\x08\\x7f\\x85\tc\nd"
    assert inert("\u202e\u2066\u2069\u200b\u200f\ufeff\u2028") == "\\u202e\\u2066\\u2069\\u200b\\u200f\\ufeff\\u2028"
    assert inert("\U000e0041") == "\\U000e0041"  # a tag character: invisible, yet it is there


def test_ordinary_text_comes_back_unchanged() -> None:
    text = "héllo wörld, 中文, emoji 😀, a\ttab, [bold]markup[/], back\\slash\n" * 100
    assert inert(text) is text


def test_every_escape_is_printable_and_inert_is_idempotent() -> None:
    points = list(range(0x3000)) + list(range(0xFE00, 0x10000)) + [0x1D173, 0xE0001, 0xE007F, 0x1F600]
    for point in points:
        shown = inert(chr(point))
        assert shown == chr(point) or (shown.isascii() and shown.isprintable()), hex(point)
        assert inert(shown) == shown
    text = "".join(map(chr, points))
    assert RAW.search(inert(text)) is None
    assert inert(inert(text)) == inert(text)


def test_cut_marks_what_it_left_out() -> None:
    assert cut("short", 10) == "short"
    assert cut("x" * 10, 10) == "x" * 10
    assert cut("x" * 11, 10) == "x" * 10 + " [... 1 more character]"
    assert cut("x" * 1244, 10) == "x" * 10 + " [... 1234 more characters]"


def test_large_outputs_are_cheap() -> None:
    hostile = ("\x1b[31m\r\u202e" * 8192)[:65536]
    plain = "x" * 65536
    started = time.perf_counter()
    for _ in range(5):
        inert(hostile)
        inert(plain)
        cut(plain, 200)
    assert time.perf_counter() - started < 2.0  # about 0.1 s here; generous for a loaded machine
