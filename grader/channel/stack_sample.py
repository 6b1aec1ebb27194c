"""Where a learner's call was when it was stopped: the worker's stack samples, read as hostile text.

While a call runs long, faulthandler's thread in the worker writes the stack every so often to a pipe of its own
(grader/sandboxed/observe.py, `sampled`). The worker runs beside the learner's code, which can write anything
there, so a sample is a hint and never a verdict: only frames of the learner's own file, at a line the file has,
in a function named as Python names one, are kept, and a report shows them on a visible case only.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

MAX_KEPT = 1 << 16  # bytes of samples kept per call: the last ones count
FRAMES_KEPT = 4     # innermost frames of the learner's file named
# A thread's dump starts with one of these lines; its frames follow, most recent call first.
_HEADER = re.compile(rb"(?m)^(?:Timeout \(|Thread 0x|Current thread 0x|Stack \()")
_FRAME = re.compile(rb'(?m)^  File "([^"\n]{1,4096})", line (\d{1,7}) in ([A-Za-z_][A-Za-z0-9_]{0,99})\s*$')


@dataclass(frozen=True)
class Frame:
    """One frame of the learner's file in a sample: its line and its function."""

    line: int
    function: str


class Samples:
    """The read end of one worker's sample pipe: drained without blocking, the newest bytes kept."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        os.set_blocking(fd, False)
        self._kept = b""

    def drain(self) -> bytes:
        """Everything written since the last drain (its last MAX_KEPT bytes)."""
        chunks = [self._kept]
        while self.fd >= 0:
            try:
                chunk = os.read(self.fd, 1 << 16)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
            if sum(map(len, chunks)) > 4 * MAX_KEPT:
                chunks = [b"".join(chunks)[-MAX_KEPT:]]
        self._kept = b""
        return b"".join(chunks)[-MAX_KEPT:]

    def close(self) -> None:
        """Close the read end, once: a descriptor closed twice could be another pipe's by then."""
        fd, self.fd = self.fd, -1
        if fd >= 0:
            try:
                os.close(fd)
            except OSError:
                pass


def where(samples: bytes, learner: str, lines: int) -> list[Frame]:
    """The learner's frames in the last sample that has any, innermost first: `learner` is the file's path as the
    worker sees it, `lines` how many lines the grader counted in it (a frame at any other line is not the file's)."""
    starts = [found.start() for found in _HEADER.finditer(samples)]
    blocks = [samples[start:end] for start, end in zip(starts, [*starts[1:], len(samples)])] or [samples]
    wanted = os.fsencode(learner)
    for block in reversed(blocks):
        frames = [Frame(int(number), function.decode("ascii"))
                  for path, number, function in _FRAME.findall(block)
                  if path == wanted and 1 <= int(number) <= lines]
        if frames:
            return frames[:FRAMES_KEPT]
    return []


def described(frames: list[Frame], shown: str) -> str:
    """'when stopped it was at mine.py:12 in merge (called from mine.py:30 in ring)', the file named as `shown`."""
    if not frames:
        return ""
    first, *callers = frames
    text = f"when stopped it was at {shown}:{first.line} in {first.function}"
    if callers:
        text += " (called from " + ", ".join(f"{shown}:{frame.line} in {frame.function}" for frame in callers) + ")"
    return text
