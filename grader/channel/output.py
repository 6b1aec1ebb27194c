"""A learner process's output: drained without ever blocking the writer, split per case, capped."""

from __future__ import annotations

import fcntl
import os
import select
import signal
import struct
import termios
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
    """Drains one pipe without ever blocking the writer, and cuts it into one segment per case when asked.

    No marker travels in the stream (the learner's code could write one of its own): a segment ends
    when the grader, holding a case's reply, asks for it; everything written before the reply is in
    the pipe by then, and is drained before the cut. Each segment keeps its first OUTPUT_CAP bytes and
    counts the rest, so a flood of output costs time, never memory or a stuck worker.
    """

    def __init__(self, stream, cap: int = OUTPUT_CAP) -> None:
        super().__init__(daemon=True)
        self._stream = stream
        self._cap = cap
        self._kept = bytearray()
        self._dropped = 0
        self._segments: list[tuple[bytes, int]] = []
        self._ready = threading.Condition()
        self._wake_read, self._wake_write = os.pipe()
        self._woken = True  # whether the wake pipe is still open: closed, its numbers may be another's descriptors
        self.start()

    def run(self) -> None:
        fd = self._stream.fileno()
        os.set_blocking(fd, False)
        try:
            while True:
                readable = select.select([fd, self._wake_read], [], [])[0]
                if fd in readable and not self._read(fd, 1 << 16):
                    break
                if self._wake_read in readable:
                    os.read(self._wake_read, 64)
                    # What is in the pipe now was written before the reply: drain exactly that much, then cut.
                    waiting = _pending(fd)
                    while waiting > 0:
                        got = self._read(fd, min(waiting, 1 << 16))
                        if not got:
                            break
                        waiting -= got
                    self._close_segment()
        finally:
            # This thread owns the pipe and is the only one to close it, after its end: a descriptor closed
            # under a blocked read would be reused by the next pipe, and this read would steal its bytes.
            self._stream.close()
            with self._ready:  # never while take() writes to it: that write would land in a reused descriptor
                self._woken = False
                for wake in (self._wake_read, self._wake_write):
                    try:
                        os.close(wake)
                    except OSError:
                        pass
                self._ready.notify_all()

    def _read(self, fd: int, size: int) -> int:
        """Read once; the number of bytes (0 at the end of the stream, -1 when there was nothing yet)."""
        try:
            chunk = os.read(fd, size)
        except BlockingIOError:
            return -1
        except OSError:
            return 0
        self._append(chunk)
        return len(chunk)

    def _append(self, data: bytes) -> None:
        room = self._cap - len(self._kept)
        with self._ready:
            self._kept += data[:max(room, 0)]
            self._dropped += max(len(data) - max(room, 0), 0)

    def _close_segment(self) -> None:
        with self._ready:
            # At most one waiting segment: a cut nobody collected is merged into the next, never piled up.
            if self._segments:
                kept, dropped = self._segments.pop()
                self._kept, self._dropped = bytearray(kept + self._kept)[:self._cap], dropped + self._dropped
            self._segments.append((bytes(self._kept), self._dropped))
            self._kept, self._dropped = bytearray(), 0
            self._ready.notify_all()

    def take(self, timeout: float) -> str:
        """Everything written since the last take, cut now; waits at most `timeout` for the cut."""
        deadline = time.monotonic() + timeout
        with self._ready:
            asked = False
            if self._woken:
                try:
                    os.write(self._wake_write, b"x")
                    asked = True
                except OSError:
                    pass
            while asked and not self._segments and self._woken and time.monotonic() < deadline:
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


def _pending(fd: int) -> int:
    """Bytes waiting in a pipe, unread."""
    try:
        return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]
    except OSError:
        return 0
