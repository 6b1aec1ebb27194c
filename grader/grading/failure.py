"""How a call that did not return is told: raised, not attempted, out of memory, timed out, crashed, or a file that
could not be imported. A hidden case says it in the grader's words only: an exception's type from a fixed list, a
worker's ending by its class, a line only if it is one of the exercise's own functions in the learner's file."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from grader.inert import inert
from grader.results import Outcome

# What a hidden case may name, whatever the learner's code raised: a few common types, each a fixed string of the
# grader's (about 4 bits a case, where any builtin's name carried about 6); every other type reads the same.
HIDDEN_EXCEPTIONS = ("AssertionError", "AttributeError", "IndexError", "KeyError", "MemoryError", "NameError",
                     "OutOfMemoryError", "OverflowError", "RecursionError", "RuntimeError", "TypeError",
                     "UnboundLocalError", "ValueError", "ZeroDivisionError")
OTHER_EXCEPTION = "an exception of another type"
# How a hidden case's worker ended, as its class only: the exit status or the signal the code chose never shows.
HIDDEN_ENDINGS = {"SIGSEGV": "SIGSEGV", "SIGABRT": "SIGABRT", "SIGKILL": "SIGKILL", "exit": "exit status",
                  "killed": "killed"}  # killed: by the grader, its own word
OTHER_ENDING = "a signal"
CRASH_HINTS = {
    "SIGSEGV": " (a segmentation fault: memory read or written through ctypes or a C extension)",
    "SIGABRT": " (the process aborted: os.abort, or a failed assertion inside a C library)",
    "SIGKILL": " (killed from outside: often the system running out of memory)",
    "exit": " (your code ended the process: os._exit, or exit in a child you forked?)",
}


def describe(case: Any, raw: Any, result: Any, lines: frozenset[int], limit: float, memory_limit_mb: int) -> None:
    """Fill in `result` for a call that did not return (`raw.kind` is not "returned"); `lines`: those a hidden case
    may name (nameable_lines); `limit`: the case's CPU seconds."""
    reply = raw.reply
    raised = inert(reply.exception) if reply else ""
    exception = hidden_exception(raised) if case.hidden else raised
    if raw.kind == "not-attempted":
        result.outcome = Outcome.NOT_ATTEMPTED
        result.message = f"{case.function} raises NotImplementedError: it is not written yet"
    elif raw.kind == "raised":
        result.outcome = Outcome.ERROR
        result.cause = f"raised {hidden_exception(raised)}"  # the grader's words: a hidden case says the same
        message = inert(reply.message)
        # A hidden case never echoes learner text: an exception message (or a class named for the purpose)
        # could carry the hidden inputs. A type from a fixed list, and a line of one of the exercise's functions.
        result.message = f"raised {exception}" + (line_named(reply.traceback, lines) if case.hidden else
                                                  (f": {message}" if message else ""))
    elif raw.kind == "out-of-memory":
        result.outcome = Outcome.OUT_OF_MEMORY
        on = "the GPU" if raised == "OutOfMemoryError" else "memory"
        result.cause = f"ran out of {on}"
        result.message = (f"ran out of {on} ({inert(raw.detail) or exception}); the limit is "
                          f"{memory_limit_mb} MiB for your code's processes together: look for "
                          f"tensors kept alive in a list, or a loop that allocates without end")
    elif raw.kind == "timed-out":
        result.outcome = Outcome.TIMED_OUT
        hint = TIMEOUT_HINTS.get(raw.signal, TIMEOUT_HINTS[""])
        result.cause = f"timed out ({'waiting' if raw.signal == 'waiting' else 'running'})"
        result.message = f"did not finish within the {limit:g} s limit ({raw.detail}; {hint})"
    else:
        result.outcome = Outcome.CRASHED
        detail = raw.detail or "the worker process ended"
        if case.hidden and "malformed reply" in detail:
            detail = "the worker sent a malformed reply"  # the schema's complaint may quote the learner's bytes
        elif case.hidden and raw.signal:
            detail = detail.replace(f"({raw.signal})", f"({hidden_ending(raw.signal)})")
        result.message = f"crashed: {inert(detail)}"
        result.message += CRASH_HINTS.get(raw.signal.split(" ")[0], "")
        ending = hidden_ending(raw.signal) if raw.signal else ("a malformed reply" if "malformed" in detail else "")
        result.cause = f"crashed ({ending})" if ending else "crashed"
    if not case.hidden and reply is not None:
        result.traceback = inert(reply.traceback)


# What to look for, by what stopped the case (RawResult.signal of a timeout, from timeout_detail).
TIMEOUT_HINTS = {"": "look for a loop that never ends", "running": "look for a loop that never ends",
                 "waiting": "look for a sleep, a lock or a read that never returns",
                 "unclear": "look for a loop that never ends, or a sleep, a lock or a read",
                 "busy": "look for a loop that never ends, or run it again on a quieter machine"}


def timeout_detail(cpu_limit: float, used: float, elapsed: float, queued: float | None,
                   wait_limit: float) -> tuple[str, str]:
    """Why a case was stopped, from what the kernel measured: which of TIMEOUT_HINTS, and the words.

    `used`: CPU seconds its processes used; `elapsed`: wall-clock seconds; `queued`: seconds they were ready to
    run but waited for a core (a busy machine's doing), None where the kernel keeps no such count. Over its CPU
    time, it was running; else it waited (neither running nor queued) `wait_limit` seconds, or a busy machine
    kept it from a core until the most wall-clock time any case is given ran out."""
    if used > cpu_limit:
        return "running", (f"your code was running: it used {used:.1f} s of CPU, over its {cpu_limit:g} s, in "
                           f"{elapsed:.1f} s of wall-clock time")
    if queued is None:
        return "unclear", (f"{elapsed:.0f} s of wall-clock time with {used:.1f} s of CPU used; this machine does not "
                           f"say how long your code waited for a core, so waiting and a busy machine look alike")
    waited = max(elapsed - used - queued, 0.0)
    if waited >= wait_limit:
        return "waiting", (f"your code was waiting: {waited:.0f} s of {elapsed:.0f} s of wall-clock time neither "
                           f"running nor queued for a core, with {used:.1f} s of CPU used")
    return "busy", (f"the machine was busy: in {elapsed:.0f} s of wall-clock time, the most a case is given, your "
                    f"code got {used:.1f} s of CPU and spent {queued:.0f} s queued for a core")


def load_error(name: str, loaded: Any, time_limit: float) -> str:
    """One clear message for a file that could not be imported, naming file, line and text."""
    body = loaded.loaded
    if loaded.kind == "load-error" and body is not None:
        where = f"{name}:{body.line}" if body.line else name
        text = f"\n    {inert(body.text)}" if body.text else ""
        tail = f"\n{inert(body.traceback)}" if body.traceback else ""
        return (f"{where}: your file could not be imported: {inert(body.exception)}: {inert(body.message)}"
                f"{text}{tail}")
    if loaded.kind == "timed-out":
        return f"{name}: importing your file took longer than {time_limit:g} s ({loaded.detail})"
    if loaded.kind == "out-of-memory":
        return f"{name}: importing your file ran out of memory ({loaded.detail})"
    return f"{name}: {inert(loaded.detail) or 'the worker process ended while importing your file'}"


def hidden_exception(name: str) -> str:
    """An exception's type as a hidden case shows it: one of HIDDEN_EXCEPTIONS, else one fixed phrase."""
    return name if name in HIDDEN_EXCEPTIONS else OTHER_EXCEPTION


def hidden_ending(how: str) -> str:
    """How a hidden case's worker ended ('SIGUSR1', 'exit status 35'), as its class only ('a signal', 'exit status')."""
    return HIDDEN_ENDINGS.get(how.split(" ")[0], OTHER_ENDING)


# The longest function whose lines a hidden case may name: the traceback is the learner's process's own text, so
# the line is one the code can choose, among at most this many of each function (6 bits).
MAX_NAMED_FUNCTION = 64


def nameable_lines(spans: Mapping[str, tuple[int, int]], functions: Iterable[str]) -> frozenset[int]:
    """The lines a hidden case may name: those of the exercise's own `functions` (by `spans`, the grader's parse of
    the file), each at most MAX_NAMED_FUNCTION lines long; a longer one, or one the file does not define where its
    top level does, has none. Padding the file changes nothing: what the code can choose is log2 of this set's
    size, 8 bits at most for an exercise of four functions, whatever the file's length."""
    found: set[int] = set()
    for name in functions:
        first, last = spans.get(name, (0, -1))
        if 0 < last - first + 1 <= MAX_NAMED_FUNCTION:
            found.update(range(first, last + 1))
    return frozenset(found)


def line_named(traceback: str, lines: Iterable[int]) -> str:
    """' (line 12)': where in the learner's file, from its own trimmed traceback; only a number among `lines`
    (nameable_lines), which the code can still choose among."""
    found = re.findall(r'line (\d{1,7}), in', traceback or "")
    if not found or int(found[-1]) not in lines:
        return ""
    return f" (line {int(found[-1])})"

