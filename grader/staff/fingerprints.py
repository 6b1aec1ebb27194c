"""Fingerprints of a submission's code, for finding copies: tokens normalised, k-grams hashed, then winnowed.

The method is MOSS's (Schleimer, Wilkerson and Aiken, "Winnowing", SIGMOD 2003). Comments, docstrings and
layout are dropped, every name the file binds itself (its variables, arguments, own functions) becomes one
placeholder and every string literal another, so renaming and rewording change nothing; the names it takes
from elsewhere (`torch.exp`, `range`, keyword arguments, attributes) and numbers stay, since they carry the
method. Each run of K tokens is hashed; of every WINDOW consecutive hashes the smallest is kept. Two files
sharing a run of K + WINDOW - 1 tokens are then sure to share a fingerprint, and runs shorter than K (the
one line everyone writes alike) are never evidence. Every K-gram of the stub and starter is left out: code
every learner is given is not copying. What is dropped is dropped before anything is cut: a copy behind any
amount of comments, docstrings and blank lines is found, and a file whose code runs past the bound is said
to be compared in part (grader/results/similarity.py), never left out.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import io
import keyword
import tokenize
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from grader.results.similarity import TOKEN_LIMIT

K = 12      # tokens per hashed run: about a line and a half of ordinary code
WINDOW = 8  # hashes per winnowing window: any shared run of K + WINDOW - 1 = 19 tokens is found
NAME, TEXT = "V", "S"  # the placeholders of a name the file binds, and of a string
_SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
_LAYOUT = {tokenize.NEWLINE: "<newline>", tokenize.INDENT: "<indent>", tokenize.DEDENT: "<dedent>"}
_FSTRING_START = getattr(tokenize, "FSTRING_START", None)  # Python 3.12 splits an f-string into pieces
_FSTRING_END = getattr(tokenize, "FSTRING_END", None)


def _raw_tokens(source: bytes) -> Iterator[tokenize.TokenInfo]:
    """The file's tokens but comments and blank lines, as far as they can be read: a file that does not tokenize to
    its end still counts."""
    try:
        for token in tokenize.tokenize(io.BytesIO(source).readline):
            if token.type not in _SKIPPED:
                yield token
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError, ValueError):
        return


def _bound_places(source: bytes) -> set[tuple[int, int]] | None:
    """(line, byte column) of every name the file binds and of each later use of it; None when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    bound: set[str] = set()
    uses: list[tuple[str, int, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            uses.append((node.id, node.lineno, node.col_offset))
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
            uses.append((node.arg, node.lineno, node.col_offset))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
    return {(line, column) for name, line, column in uses if name in bound}


def tokens(source: bytes, limit: int | None = None) -> list[str]:
    """The file as normalised tokens: no comment, docstring or blank line; own names as V, strings as S. With
    `limit`, no more than limit + 1 of them (the one past the limit says that there were more): the file is read
    only as far as they need, however much is dropped on the way, and only what is kept is held."""
    places = _bound_places(source)
    out: list[str] = []
    depth, strings = 0, 0  # f-strings open; strings at a statement's start, not yet known to be a docstring
    for token in _raw_tokens(source):
        if limit is not None and len(out) > limit:
            break
        if strings:
            if token.type == tokenize.STRING:
                strings += 1
                continue
            if token.type == tokenize.NEWLINE:  # a string standing alone as a statement (a docstring) says nothing
                strings = 0
                continue
            out.extend([TEXT] * strings)
            strings = 0
        if token.type == _FSTRING_START:
            depth += 1
        elif token.type == _FSTRING_END:
            depth -= 1
            if not depth:
                out.append(TEXT)
        elif depth:
            pass  # inside an f-string: the whole of it is one string
        elif token.type == tokenize.STRING and (not out or out[-1] in _LAYOUT.values()):
            strings = 1
        elif token.type == tokenize.STRING:
            out.append(TEXT)
        elif token.type in _LAYOUT:
            out.append(_LAYOUT[token.type])
        elif token.type == tokenize.NAME:
            out.append(_name(token, out, places))
        else:
            out.append(token.string)
    return out if limit is None else out[:limit + 1]


def _name(token: tokenize.TokenInfo, before: list[str], places: set[tuple[int, int]] | None) -> str:
    text = token.string
    if keyword.iskeyword(text) or (before and before[-1] == "."):
        return text  # a keyword, or an attribute: another module's name, not the learner's to choose
    if before and before[-1] in ("def", "class"):
        return NAME
    if places is None:  # the file does not parse: every name but the builtins is taken for the learner's own
        return text if hasattr(builtins, text) else NAME
    row, column = token.start
    return NAME if (row, len(token.line[:column].encode("utf-8"))) in places else text


def _hash(run: list[str]) -> int:
    # Not hash(): Python salts it per process, and fingerprints are compared across runs and machines.
    return int.from_bytes(hashlib.blake2b("\x1f".join(run).encode("utf-8"), digest_size=8).digest(), "big")


def kgram_hashes(normalised: list[str]) -> list[int]:
    """The hash of every run of K tokens, in order; one hash of the whole when it is shorter than K."""
    if not normalised:
        return []
    if len(normalised) < K:
        return [_hash(normalised)]
    return [_hash(normalised[start:start + K]) for start in range(len(normalised) - K + 1)]


def winnow(hashes: list[int]) -> set[int]:
    """The smallest hash of every WINDOW consecutive ones (the rightmost on a tie), as Schleimer et al. do."""
    if len(hashes) <= WINDOW:
        return {min(hashes)} if hashes else set()
    chosen = set()
    for start in range(len(hashes) - WINDOW + 1):
        window = hashes[start:start + WINDOW]
        smallest = min(window)
        chosen.add(smallest)
    return chosen


@dataclass(frozen=True)
class CodePrints:
    """A file's fingerprints, and whether its code ran past TOKEN_LIMIT tokens (then its first TOKEN_LIMIT gave them)."""

    values: list[int]
    cut: bool


def code_prints(source: bytes, given: Iterable[bytes] = ()) -> CodePrints:
    """The fingerprints of the file's first TOKEN_LIMIT tokens of code, counted after comments, docstrings and blank
    lines are dropped, sorted, without any K-gram of `given` (the stub, the starter)."""
    normalised = tokens(source, TOKEN_LIMIT)
    common = {value for text in given for value in kgram_hashes(tokens(text, TOKEN_LIMIT)[:TOKEN_LIMIT])}
    kept = [value for value in kgram_hashes(normalised[:TOKEN_LIMIT]) if value not in common]
    return CodePrints(sorted(winnow(kept)), len(normalised) > TOKEN_LIMIT)


def fingerprints(source: bytes, given: Iterable[bytes] = ()) -> list[int]:
    """A file's fingerprints alone (code_prints)."""
    return code_prints(source, given).values


def given_code(files: Iterable[Path]) -> list[bytes]:
    """The code every learner starts from (the stub, the starter copy), those of `files` that can be read."""
    found = []
    for path in files:
        try:
            found.append(path.read_bytes())
        except OSError:  # no starter copy: only the stub is left out
            pass
    return found
