"""Length-prefixed messages of JSON plus raw tensor bytes, decoded as hostile data within fixed bounds.

Pickle is never used across the process boundary: a worker runs learner code, so anything it
sends back is data to be checked, and unpickling it would let that code run inside the grader.
A message is an 8-byte length, an 8-byte header length, a JSON header and the raw bytes of each
tensor it carries. Reading never buffers more than the reader's limit, writing never waits past
a deadline, and decoding checks every size against the header; what comes out is plain JSON
values plus a list of tensors for grader/channel/replies.py to validate.
"""

from __future__ import annotations

import json
import os
import select
import socket
import struct
import time
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

MAX_HEADER_BYTES = 256 * 1024  # the JSON part: names, shapes, messages; tensors travel outside it
MAX_DIMS = 8
_LENGTH = struct.Struct("!Q")
DTYPE_NAMES = ("float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool")


@cache
def _dtypes() -> dict:
    # torch is imported on first use, so a process can start a worker before paying for it.
    import torch

    return {name: getattr(torch, name) for name in DTYPE_NAMES}


class ChannelClosed(Exception):
    """The other side closed the channel or died before a whole message arrived."""


class ChannelTimeout(Exception):
    """No whole message arrived (or could be sent) before the deadline."""


class BadMessage(Exception):
    """The bytes received are not a well-formed message within the bounds."""


def dtype_name(dtype: "torch.dtype") -> str:
    """The short name used on the wire and in reports, such as 'float32'."""
    return str(dtype).removeprefix("torch.")


def dtype_from_name(name: str) -> "torch.dtype":
    """The torch dtype for a short name; raises KeyError for an unknown one."""
    return _dtypes()[name]


# ---------------------------------------------------------------- encoding (trusted side or worker side)

def encode(body: Any, tensors: list["torch.Tensor"] | tuple = ()) -> bytes:
    """Serialize a JSON body and the tensors it refers to by position."""
    import torch

    blobs: list[bytes] = []
    specs: list[dict] = []
    for value in tensors:
        tensor = value.detach().to("cpu").contiguous()
        if dtype_name(tensor.dtype) not in DTYPE_NAMES:
            raise TypeError(f"cannot send a tensor of dtype {tensor.dtype}")
        raw = tensor.reshape(-1).view(torch.uint8).numpy().tobytes() if tensor.numel() else b""
        specs.append({"dtype": dtype_name(tensor.dtype), "shape": list(tensor.shape),
                      "device": str(value.device), "nbytes": len(raw)})
        blobs.append(raw)
    header = json.dumps({"body": body, "tensors": specs}, allow_nan=False).encode()
    payload = _LENGTH.pack(len(header)) + header + b"".join(blobs)
    return _LENGTH.pack(len(payload)) + payload


# ---------------------------------------------------------------- decoding (hostile input)

def unframe(message: bytes | bytearray) -> bytes | bytearray:
    """The payload of one whole message as `encode` made it (kept in a file, say); BadMessage if cut or padded."""
    if len(message) < _LENGTH.size or _LENGTH.unpack_from(message, 0)[0] != len(message) - _LENGTH.size:
        raise BadMessage("the message's length does not match its size")
    return message[_LENGTH.size:]


class WireTensor:
    """A tensor received from another process, with the device it says it lived on there."""

    def __init__(self, tensor: "torch.Tensor", device: str) -> None:
        self.tensor = tensor
        self.device = device

    def __repr__(self) -> str:
        return f"WireTensor({dtype_name(self.tensor.dtype)}{list(self.tensor.shape)} on {self.device})"


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number")


def decode(payload: bytes | bytearray) -> tuple[Any, list[WireTensor]]:
    """The body (plain JSON values) and the tensors it carries, in order."""
    import torch

    try:
        (header_len,) = _LENGTH.unpack_from(payload, 0)
        if header_len > MAX_HEADER_BYTES or _LENGTH.size + header_len > len(payload):
            raise BadMessage(f"header of {header_len} bytes is over the limit or past the end")
        header = json.loads(bytes(payload[_LENGTH.size:_LENGTH.size + header_len]).decode("utf-8"),
                            parse_constant=_reject_constant)
        if not isinstance(header, dict) or not isinstance(header.get("tensors"), list) or "body" not in header:
            raise BadMessage("the header is not {body, tensors}")
        offset = _LENGTH.size + header_len
        tensors = []
        for spec in header["tensors"]:
            tensor, offset = _tensor(payload, offset, spec, torch)
            tensors.append(tensor)
        if offset != len(payload):
            raise BadMessage(f"{len(payload) - offset} bytes after the last tensor")
    except BadMessage:
        raise
    except (ValueError, TypeError, KeyError, RecursionError, UnicodeDecodeError, struct.error, OverflowError) as error:
        raise BadMessage(f"malformed message: {type(error).__name__}: {str(error)[:200]}") from None
    return header["body"], tensors


def _tensor(payload: bytes | bytearray, offset: int, spec: Any, torch: Any) -> tuple[WireTensor, int]:
    if not isinstance(spec, dict) or spec.get("dtype") not in DTYPE_NAMES:
        raise BadMessage("a tensor's dtype is missing or unknown")
    shape, nbytes, device = spec.get("shape"), spec.get("nbytes"), spec.get("device", "cpu")
    if not (isinstance(shape, list) and len(shape) <= MAX_DIMS
            and all(type(size) is int and size >= 0 for size in shape)):
        raise BadMessage("a tensor's shape is not a short list of sizes")
    if type(nbytes) is not int or not isinstance(device, str) or len(device) > 32:
        raise BadMessage("a tensor's size or device is malformed")
    dtype = _dtypes()[spec["dtype"]]
    numel = 1
    for size in shape:
        numel *= size
    if nbytes != numel * torch.empty((), dtype=dtype).element_size() or offset + nbytes > len(payload):
        raise BadMessage("a tensor's size does not match its header")
    raw = bytearray(payload[offset:offset + nbytes])
    flat = torch.frombuffer(raw, dtype=torch.uint8) if nbytes else torch.empty(0, dtype=torch.uint8)
    return WireTensor(flat.view(dtype).reshape(shape), device), offset + nbytes


# ---------------------------------------------------------------- moving bytes

def write_bytes(fd: int, data: bytes, deadline: float | None = None) -> None:
    """Write all of `data`; with a deadline the descriptor is expected non-blocking and waits are bounded."""
    view = memoryview(data)
    while view:
        _wait(fd, deadline, write=True)
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            continue
        except (BrokenPipeError, ConnectionResetError):
            raise ChannelClosed() from None
        view = view[written:]


def write_message(fd: int, body: Any, deadline: float | None = None, tensors: list | tuple = ()) -> None:
    """Write one whole message to a file descriptor."""
    write_bytes(fd, encode(body, tensors), deadline)


def send_with_fds(sock: socket.socket, data: bytes, fds: list[int], deadline: float | None) -> None:
    """Send a message over a Unix socket, with file descriptors attached to its first byte."""
    view = memoryview(data)
    pending = list(fds)
    while view:
        _wait(sock.fileno(), deadline, write=True)
        try:
            sent = socket.send_fds(sock, [view], pending) if pending else sock.send(view)
        except BlockingIOError:
            continue
        except (BrokenPipeError, ConnectionResetError):
            raise ChannelClosed() from None
        pending = []
        view = view[sent:]


def _wait(fd: int, deadline: float | None, write: bool) -> None:
    if deadline is None:
        return
    left = deadline - time.monotonic()
    ready = select.select([], [fd], [], max(left, 0))[1] if write else select.select([fd], [], [], max(left, 0))[0]
    if not ready:
        raise ChannelTimeout()


class MessageReader:
    """Reads messages from one descriptor, each at most `limit` bytes; a message cut by a deadline is kept.

    Dropping a partial message instead would leave the stream mid-message, and every later one would be misread.
    """

    def __init__(self, fd: int, limit: int = 1 << 20, sock: socket.socket | None = None, max_fds: int = 16) -> None:
        self.fd = fd
        self.limit = limit
        self.sock = sock
        self.max_fds = max_fds
        self.fds: list[int] = []  # descriptors received with the messages (Unix sockets only)
        self._buffer = bytearray()

    def read_payload(self, deadline: float | None = None) -> bytearray:
        """One whole message's payload, waiting at most until `deadline` (time.monotonic); else ChannelTimeout."""
        self._fill(_LENGTH.size, deadline)
        (length,) = _LENGTH.unpack_from(self._buffer, 0)
        if length > self.limit:
            raise BadMessage(f"a message of {length} bytes is over the limit of {self.limit}")
        self._fill(_LENGTH.size + length, deadline)
        payload = self._buffer[_LENGTH.size:_LENGTH.size + length]
        del self._buffer[:_LENGTH.size + length]
        return payload

    def read(self, deadline: float | None = None) -> tuple[Any, list[WireTensor]]:
        return decode(self.read_payload(deadline))

    def pending(self) -> bool:
        """Whether bytes of a message nobody asked for are already waiting."""
        return bool(self._buffer) or bool(select.select([self.fd], [], [], 0)[0])

    def _fill(self, count: int, deadline: float | None) -> None:
        while len(self._buffer) < count:
            _wait(self.fd, deadline, write=False)
            want = min(count - len(self._buffer), 1 << 20)
            try:
                if self.sock is not None:
                    chunk, fds, flags, _ = socket.recv_fds(self.sock, want, self.max_fds)
                    self.fds += fds
                    if flags & socket.MSG_CTRUNC:
                        raise BadMessage(f"more than {self.max_fds} descriptors came with one message")
                else:
                    chunk = os.read(self.fd, want)
            except BlockingIOError:
                continue
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                raise ChannelClosed()
            self._buffer += chunk
