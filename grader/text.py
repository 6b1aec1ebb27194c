"""Learner text made inert: control characters shown escaped, never interpreted by a terminal."""

from __future__ import annotations

import re
import unicodedata

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff]")


def inert(text: str) -> str:
    """Keep newlines and tabs; show every other control or format character as an escape."""
    if not text:
        return text
    text = _UNSAFE.sub(lambda match: _escape(match.group()), text)
    if any(unicodedata.category(char) == "Cf" for char in text if ord(char) > 0x7f):
        text = "".join(_escape(char) if unicodedata.category(char) == "Cf" else char for char in text)
    return text


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def cut(line: str, limit: int) -> str:
    """`line` if short enough, else its start and a visible mark of how much was cut."""
    if len(line) <= limit:
        return line
    return f"{line[:limit]} [... {len(line) - limit} more characters]"
