"""Learner text made inert: control characters shown as visible escapes, long lines cut visibly."""

from __future__ import annotations

import functools
import re
import unicodedata

# Unicode puts its format characters (bidi overrides, zero-width characters, tag characters) in
# these blocks; scanning only them, not all 1.1 million code points, keeps the first call cheap.
_FORMAT_RANGES = (range(0x0000, 0x10000), range(0x10000, 0x20000), range(0xE0000, 0xE1000))
# Categories a terminal may act on or that change what the eye sees: format (Cf), line and
# paragraph separators (Zl, Zp, which some viewers break lines at).
_HIDDEN_CATEGORIES = ("Cf", "Zl", "Zp")


@functools.cache
def _pattern() -> re.Pattern[str]:
    """Every character `inert` escapes, as one class, built on first use."""
    # C0 controls but tab and newline, DEL and C1 controls; lone surrogates, which cannot be
    # written to a UTF-8 terminal at all.
    ranges = [(0x00, 0x08), (0x0B, 0x1F), (0x7F, 0x9F), (0xD800, 0xDFFF)]
    for block in _FORMAT_RANGES:
        for point in block:
            if unicodedata.category(chr(point)) in _HIDDEN_CATEGORIES:
                if ranges[-1][1] == point - 1:
                    ranges[-1] = (ranges[-1][0], point)
                else:
                    ranges.append((point, point))
    # Ranges, not a list of characters: a class of two thousand single characters is searched
    # ten times slower.
    members = "".join(f"{re.escape(chr(low))}-{re.escape(chr(high))}" for low, high in ranges)
    return re.compile(f"[{members}]+")


def _escape_one(character: str) -> str:
    if character == "\r":
        return "\\r"  # the one a learner meets most, in its familiar spelling
    point = ord(character)
    if point < 0x100:
        return f"\\x{point:02x}"
    return f"\\u{point:04x}" if point < 0x10000 else f"\\U{point:08x}"


def _escape_run(match: re.Match[str]) -> str:
    return "".join(map(_escape_one, match.group()))


_ASCII_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f]")


def inert(text: str) -> str:
    """`text` with every control, format and bidi character written as a visible escape (`\\x1b`,
    `\\u202e`); newlines and tabs are kept. Idempotent: its output contains nothing it escapes."""
    if text.isascii() and not _ASCII_CONTROLS.search(text):
        return text  # the common case, answered before the full class of Unicode's format characters is built
    # Text with nothing to escape costs one scan in C and comes back as the same string.
    return _pattern().sub(_escape_run, text)


def cut(line: str, limit: int) -> str:
    """The first `limit` characters of `line`, and a visible marker saying how many were left out.
    Cut before making a line inert, so that the count is of the learner's characters and no
    escape is split in two."""
    if len(line) <= limit:
        return line
    left = len(line) - limit
    return f"{line[:limit]} [... {left} more character{'s' * (left != 1)}]"


def fit(text: str, limit: int) -> str:
    """`text` in at most `limit` characters, mark included: where it had to be cut, it ends with
    `[... N more characters]`, so that a reader never takes a cut line for the whole of it (a worker's
    reply has fields of bounded length: the mark must fit inside the bound, not after it)."""
    if len(text) <= limit:
        return text
    keep = limit
    # The mark's own length depends on how much it leaves out: settle it in a step or two.
    while True:
        left = len(text) - keep
        mark = f" [... {left} more character{'s' * (left != 1)}]"
        if keep + len(mark) <= limit:
            return text[:keep] + mark
        keep = max(limit - len(mark), 0)
        if keep == 0:
            return text[:limit]  # a bound too small for any mark (never, with the grader's bounds)


def one_line(text: str) -> str:
    """`text` made inert, its newlines written `\\n`: for what must stay on one line (a name, an id, a reason)."""
    return inert(text).replace("\n", "\\n")


def indented(text: str, indent: str) -> str:
    """Every line of `text` after the first starts with `indent`: learner text never begins a line of its own."""
    return text.replace("\n", "\n" + indent)


def show(text: str) -> str:
    """Text from outside the grader, ready for Rich: controls escaped visibly, then markup escaped."""
    from rich.markup import escape  # here, not above: the worker imports this module and never needs Rich

    return escape(inert(text))
