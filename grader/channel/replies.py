"""What a worker may send, checked field by field: anything else makes the case 'crashed: malformed reply'.

A worker runs learner code, so every message from it is hostile data: kinds come from a fixed
list, numbers are finite and in range, strings are bounded, tensor references point at tensors
that came with the message, and a returned value is a shallow tree of tensors and sequences.
What comes out is rebuilt from scratch, so nothing unexpected rides along into the grader.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from grader.channel.wire import BadMessage, WireTensor, dtype_from_name

CASE_KINDS = ("returned", "raised", "not-attempted", "out-of-memory")
# A case's call reached a function the grader stopped for this run (it timed out, or ran out of memory, before): the
# message names it, and the grader believes it only for a function it did stop.
STOPPED = "stopped"
MAX_DEPTH = 6            # a tuple of tensors is depth 2; anything much deeper is not a plausible answer
MAX_NODES = 256
MAX_ITEMS = 64
LIMITS = {"exception": 200, "message": 4000, "traceback": 16000, "text": 1000, "name": 500, "device": 32}
MAX_SECONDS = 1e6


class MalformedReply(BadMessage):
    """A message that decoded but does not follow the schema."""


@dataclass
class Reply:
    """One case's reply, every field checked."""

    kind: str
    seconds: float = 0.0
    value: dict[str, Any] | None = None
    exception: str = ""
    message: str = ""
    traceback: str = ""
    inputs_modified: list[int] = field(default_factory=list)
    observations: dict[str, Any] = field(default_factory=dict)
    restart: bool = False


@dataclass
class Loaded:
    """The worker's answer after importing the learner's file."""

    kind: str  # ready, load-error
    exception: str = ""
    message: str = ""
    line: int | None = None
    text: str = ""
    traceback: str = ""


def _fail(reason: str) -> MalformedReply:
    return MalformedReply(reason)


def _string(body: dict, key: str, required: bool = False) -> str:
    value = body.get(key, None)
    if value is None:
        if required:
            raise _fail(f"{key} is missing")
        return ""
    if not isinstance(value, str) or len(value) > LIMITS.get(key, 4000):
        raise _fail(f"{key} is not a string of at most {LIMITS.get(key, 4000)} characters")
    return value


def _mapping(body: Any) -> dict:
    if not isinstance(body, dict):
        raise _fail("the body is not a mapping")
    return body


def parse_kind(body: Any, allowed: tuple[str, ...]) -> str:
    """The message's kind, if it is one of `allowed`."""
    kind = _mapping(body).get("kind")
    if kind not in allowed:
        raise _fail(f"a message of kind {str(kind)[:40]!r} where one of {', '.join(allowed)} was expected")
    return kind


def parse_loaded(body: Any) -> Loaded:
    """The reply to 'go': ready, or why the learner's file could not be imported."""
    kind = parse_kind(body, ("ready", "load-error"))
    if kind == "ready":
        return Loaded("ready")
    line = body.get("line")
    if line is not None and not (type(line) is int and 0 < line < 10_000_000):
        raise _fail("line is not a line number")
    return Loaded(kind, _string(body, "exception", True), _string(body, "message"), line,
                  _string(body, "text"), _string(body, "traceback"))


def parse_case(body: Any, tensors: list[WireTensor], task_id: int, inputs: int,
               observations: Mapping[str, tuple[type, Any]]) -> Reply:
    """A reply to case `task_id`, whose function was given `inputs` tensors; `observations` is what the in-process
    audit may report, each with its type (the rules' own, grader/course/rules/__init__.py:OBSERVATIONS)."""
    body = _mapping(body)
    kind = parse_kind(body, CASE_KINDS + (STOPPED,))
    if body.get("id") != task_id or type(body.get("id")) is not int:
        raise _fail("the reply is not for the case that was sent")
    seconds = body.get("seconds", 0.0)
    if type(seconds) not in (int, float) or not math.isfinite(seconds) or not 0 <= seconds <= MAX_SECONDS:
        raise _fail("seconds is not a finite, non-negative number")
    restart = body.get("restart", False)
    if type(restart) is not bool:
        raise _fail("restart is not true or false")
    reply = Reply(kind, float(seconds), exception=_string(body, "exception"), message=_string(body, "message"),
                  traceback=_string(body, "traceback"), restart=restart)
    if kind != "returned":
        if tensors:
            raise _fail("tensors came with a reply that returned nothing")
        # What was seen before the call ended otherwise: which of the learner's own functions it reached.
        reply.observations = _observations(body.get("observations", {}), inputs,
                                           {key: kind for key, kind in observations.items() if key == CALLS})
        return reply
    used: set[int] = set()
    reply.value = _value(body.get("value"), tensors, used, depth=1, budget=[MAX_NODES])
    if used != set(range(len(tensors))):
        raise _fail("tensors came with the reply that its value does not use")
    modified = body.get("inputs_modified", [])
    if not (isinstance(modified, list) and len(modified) <= inputs
            and all(type(index) is int and 0 <= index < inputs for index in modified)):
        raise _fail("inputs_modified is not a list of input positions")
    reply.inputs_modified = sorted(set(modified))
    reply.observations = _observations(body.get("observations", {}), inputs, observations)
    return reply


def _value(node: Any, tensors: list[WireTensor], used: set[int], depth: int, budget: list[int]) -> dict[str, Any]:
    budget[0] -= 1
    if depth > MAX_DEPTH or budget[0] < 0:
        raise _fail(f"the returned value is nested more than {MAX_DEPTH} deep or has too many parts")
    node = _mapping(node)
    kind = node.get("type")
    if kind == "tensor":
        if "ref" in node:
            ref = node["ref"]
            if type(ref) is not int or not 0 <= ref < len(tensors) or ref in used:
                raise _fail("a tensor reference points at no tensor that came with the reply")
            used.add(ref)
            return {"type": "tensor", "value": tensors[ref], "device": _string(node, "device") or tensors[ref].device}
        shape, dtype = node.get("shape"), node.get("dtype")
        if not (isinstance(shape, list) and len(shape) <= 16 and all(type(s) is int and s >= 0 for s in shape)):
            raise _fail("an omitted tensor's shape is malformed")
        try:
            dtype_from_name(dtype)
        except (KeyError, TypeError):
            raise _fail("an omitted tensor's dtype is unknown") from None
        return {"type": "omitted", "shape": shape, "dtype": dtype, "device": _string(node, "device")}
    if kind == "sequence":
        items = node.get("items")
        if node.get("kind") not in ("tuple", "list") or not isinstance(items, list) or len(items) > MAX_ITEMS:
            raise _fail("a sequence is malformed")
        return {"type": "sequence", "kind": node["kind"],
                "items": [_value(item, tensors, used, depth + 1, budget) for item in items]}
    if kind == "other":
        return {"type": "other", "name": _string(node, "name", True)}
    raise _fail("a returned value is neither a tensor, a sequence nor something named")


# An observation's item type: the position of one of the case's inputs (an int naming one that exists).
INPUT = "input"
CALLS = "calls"  # the calls between the learner's own functions the worker saw, each 'caller>callee'


def _observations(found: Any, inputs: int, allowed: Mapping[str, tuple[type, Any]]) -> dict[str, Any]:
    """What the in-process audit saw: evidence from inside the learner's process, checked like the rest against
    what it may report, each with the one type its items must have."""
    found = _mapping(found)
    clean: dict[str, Any] = {}
    for key, value in found.items():
        kind, item = allowed.get(key, (None, None))
        if kind is None or type(value) is not kind:
            raise _fail(f"observation {str(key)[:40]!r} is unknown or malformed")
        if kind is int and not 0 <= value < 1 << 60:
            raise _fail(f"observation {key} is out of range")
        if kind is list:
            entry_type = int if item == INPUT else item
            if len(value) > 16 or not all(type(entry) is entry_type for entry in value):
                raise _fail(f"observation {key} is not a short list of {entry_type.__name__}s")
            if item is str and any(len(entry) > 300 for entry in value):
                raise _fail(f"observation {key} has an entry too long")
            if item == INPUT and not all(0 <= entry < inputs for entry in value):
                raise _fail(f"observation {key} names an input that does not exist")
        clean[key] = value
    return clean


RANK_KINDS = ("torch-ready", "ready", "load-error") + CASE_KINDS
MAX_STATS = 1024
PHASES = ("learner", "communication", "program", "")  # program: the exercise's rank program itself raised
MAX_LINE = 10_000_000


def parse_rank(body: Any, tensors: list[WireTensor], world: int) -> dict[str, Any]:
    """One message from a rank of a distributed suite, rebuilt with only the fields the verdict reads."""
    body = _mapping(body)
    kind = parse_kind(body, RANK_KINDS)
    clean: dict[str, Any] = {"kind": kind}
    if kind in ("torch-ready", "ready"):
        if tensors:
            raise _fail("tensors came with a message that carries none")
        return clean
    if kind == "load-error":
        loaded = parse_loaded(body)
        return {**clean, "exception": loaded.exception, "message": loaded.message, "line": loaded.line,
                "text": loaded.text, "traceback": loaded.traceback}
    phase = body.get("phase", "")
    if phase not in PHASES:
        raise _fail("phase is not one the ring knows")
    seconds = body.get("seconds", 0.0)
    if type(seconds) not in (int, float) or not math.isfinite(seconds) or not 0 <= seconds <= MAX_SECONDS:
        raise _fail("seconds is not a finite, non-negative number")
    clean.update(phase=phase, seconds=float(seconds), exception=_string(body, "exception"),
                 message=_string(body, "message"), traceback=_string(body, "traceback"))
    if phase == "program":
        line = body.get("line", 0)
        if type(line) is not int or not 0 <= line <= MAX_LINE:
            raise _fail("line is not a line number")
        clean.update(line=line, file=_string(body, "file"))
    stats = body.get("stats", [])
    if not isinstance(stats, list) or len(stats) > MAX_STATS:
        raise _fail(f"stats is not a list of at most {MAX_STATS} entries")
    clean["stats"] = [_numbers(entry) for entry in stats]
    if kind == "returned":
        used: set[int] = set()
        clean["value"] = _value(body.get("value"), tensors, used, depth=1, budget=[MAX_NODES])
        if used != set(range(len(tensors))):
            raise _fail("tensors came with the reply that its value does not use")
    elif tensors:
        raise _fail("tensors came with a reply that returned nothing")
    return clean


def _numbers(entry: Any) -> dict[str, float]:
    """One entry of a rank's stats: a few names, each a finite, non-negative number."""
    entry = _mapping(entry)
    if len(entry) > 16:
        raise _fail("a stats entry has too many fields")
    clean = {}
    for key, value in entry.items():
        if not (isinstance(key, str) and len(key) <= 40 and type(value) in (int, float) and math.isfinite(value)
                and 0 <= value < 1e18):
            raise _fail("a stats entry is not a few names of finite, non-negative numbers")
        clean[key] = value
    return clean
