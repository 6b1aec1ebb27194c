"""A learner process's output: drained without ever blocking the writer, split per case, capped."""

from __future__ import annotations

import os
import signal
import threading
import time

OUTPUT_CAP = 64 * 1024


def signal_name(returncode: int | None) -> str:
    """'SIGSEGV' for -11, 'exit status 3' for 3."""
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    return f"exit status {returncode}"


class OutputCollector(threading.Thread):
    """Drains one pipe without ever blocking the writer; splits it into segments at a sentinel; closes it at its end.

    Each segment keeps its first OUTPUT_CAP bytes and counts the rest, so a flood of output
    costs time, never memory or a stuck worker.
    """

    def __init__(self, stream, sentinel: bytes, cap: int = OUTPUT_CAP) -> None:
        super().__init__(daemon=True)
        self._stream = stream
        self._sentinel = sentinel
        self._cap = cap
        self._kept = bytearray()
        self._dropped = 0
        self._segments: list[tuple[bytes, int]] = []
        self._ready = threading.Condition()
        self.start()

    def run(self) -> None:
        fd = self._stream.fileno()
        pending = b""
        keep = len(self._sentinel) - 1
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                break
            pending += chunk
            while (at := pending.find(self._sentinel)) >= 0:
                self._append(pending[:at])
                self._close_segment()
                pending = pending[at + len(self._sentinel):]
            if len(pending) > keep:
                self._append(pending[:-keep] if keep else pending)
                pending = pending[-keep:] if keep else b""
        self._append(pending)
        # This thread owns the pipe and is the only one to close it, after its end: a descriptor closed
        # under a blocked read would be reused by the next pipe, and this read would steal its bytes.
        self._stream.close()
        with self._ready:
            self._ready.notify_all()

    def _append(self, data: bytes) -> None:
        room = self._cap - len(self._kept)
        with self._ready:
            self._kept += data[:max(room, 0)]
            self._dropped += max(len(data) - max(room, 0), 0)

    def _close_segment(self) -> None:
        with self._ready:
            self._segments.append((bytes(self._kept), self._dropped))
            self._kept, self._dropped = bytearray(), 0
            self._ready.notify_all()

    def take(self, timeout: float) -> str:
        """The next finished segment; after `timeout`, whatever has arrived so far."""
        deadline = time.monotonic() + timeout
        with self._ready:
            while not self._segments and self.is_alive() and time.monotonic() < deadline:
                self._ready.wait(max(deadline - time.monotonic(), 0.001))
            if self._segments:
                kept, dropped = self._segments.pop(0)
            else:
                kept, dropped = bytes(self._kept), self._dropped
                self._kept, self._dropped = bytearray(), 0
        text = kept.decode("utf-8", errors="replace")
        if dropped:
            text += f"\n[... {dropped} more bytes not kept: output is capped at {self._cap // 1024} KiB per case]"
        return text
