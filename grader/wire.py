"""Length-prefixed messages of JSON plus raw tensor bytes, safe to decode from an untrusted process.

Pickle is never used across the process boundary: a worker runs learner code, so
anything it sends back is data to be checked, and unpickling it would let that code
run inside the grader. A message is an 8-byte length, a JSON header and the raw
bytes of each tensor it carries.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from typing import Any

from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

MAX_MESSAGE_BYTES = 1 << 30
_LENGTH = struct.Struct("!Q")


@cache
def _dtypes() -> dict:
    # torch is imported on first use, so a process can start a worker before paying for it.
    import torch

    names = ("float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool")
    return {name: getattr(torch, name) for name in names}


class ChannelClosed(Exception):
    """The other side closed the channel or died before a whole message arrived."""


class ChannelTimeout(Exception):
    """No whole message arrived before the deadline."""


class BadMessage(Exception):
    """The bytes received are not a well-formed message."""


def dtype_name(dtype: "torch.dtype") -> str:
    """The short name used on the wire and in reports, such as 'float32'."""
    return str(dtype).removeprefix("torch.")


def dtype_from_name(name: str) -> "torch.dtype":
    """The torch dtype for a short name; raises KeyError for an unknown one."""
    return _dtypes()[name]


def encode(body: Any) -> bytes:
    """Serialize a JSON-able body in which tensors may appear anywhere."""
    import torch

    blobs: list[bytes] = []
    specs: list[dict] = []

    def walk(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            tensor = value.detach().to("cpu").contiguous()
            if dtype_name(tensor.dtype) not in _dtypes():
                raise TypeError(f"cannot send a tensor of dtype {tensor.dtype}")
            raw = tensor.reshape(-1).view(torch.uint8).numpy().tobytes() if tensor.numel() else b""
            specs.append({"dtype": dtype_name(tensor.dtype), "shape": list(tensor.shape),
                          "device": str(value.device), "nbytes": len(raw)})
            blobs.append(raw)
            return {"__tensor__": len(specs) - 1}
        if isinstance(value, dict):
            return {str(key): walk(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [walk(item) for item in value]
        return value

    header = json.dumps({"body": walk(body), "tensors": specs}).encode()
    payload = _LENGTH.pack(len(header)) + header + b"".join(blobs)
    return _LENGTH.pack(len(payload)) + payload


def decode(payload: bytes) -> Any:
    """Rebuild a body from a payload, checking every size against the header."""
    import torch

    try:
        (header_len,) = _LENGTH.unpack_from(payload, 0)
        header = json.loads(payload[_LENGTH.size:_LENGTH.size + header_len])
        offset = _LENGTH.size + header_len
        tensors = []
        for spec in header["tensors"]:
            dtype = _dtypes()[spec["dtype"]]
            shape = [int(size) for size in spec["shape"]]
            nbytes = int(spec["nbytes"])
            raw = payload[offset:offset + nbytes]
            offset += nbytes
            numel = 1
            for size in shape:
                numel *= size
            if len(raw) != nbytes or nbytes != numel * torch.empty((), dtype=dtype).element_size():
                raise BadMessage("tensor size does not match its header")
            flat = torch.frombuffer(bytearray(raw), dtype=torch.uint8) if nbytes else torch.empty(0, dtype=torch.uint8)
            tensor = flat.view(dtype).reshape(shape)
            tensors.append((tensor, str(spec.get("device", "cpu"))))
    except BadMessage:
        raise
    except Exception as error:  # any malformed header is one kind of failure
        raise BadMessage(f"malformed message: {error}") from None

    def unwalk(value: Any) -> Any:
        if isinstance(value, dict):
            if set(value) == {"__tensor__"}:
                return WireTensor(*tensors[int(value["__tensor__"])])
            return {key: unwalk(item) for key, item in value.items()}
        if isinstance(value, list):
            return [unwalk(item) for item in value]
        return value

    return unwalk(header["body"])


class WireTensor:
    """A tensor received from another process, with the device it lived on there."""

    def __init__(self, tensor: "torch.Tensor", device: str) -> None:
        self.tensor = tensor
        self.device = device

    def __repr__(self) -> str:
        return f"WireTensor({dtype_name(self.tensor.dtype)}{list(self.tensor.shape)} on {self.device})"


def write_message(fd: int, body: Any) -> None:
    """Write one whole message to a file descriptor."""
    write_bytes(fd, encode(body))


def write_bytes(fd: int, encoded: bytes) -> None:
    """Write an already encoded message, however many writes it takes."""
    data = memoryview(encoded)
    while data:
        written = os.write(fd, data)
        data = data[written:]


def read_message(fd: int) -> Any:
    """Read one whole message, waiting as long as it takes."""
    return MessageReader(fd).read(None)


class MessageReader:
    """Reads messages from one descriptor; bytes of a message cut short by a deadline are kept for the next call.

    Dropping them instead would leave the stream mid-message, and every later message would be misread.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buffer = bytearray()

    def read(self, deadline: float | None = None) -> Any:
        """One whole message, waiting at most until `deadline` (time.monotonic); else ChannelTimeout."""
        self._fill(_LENGTH.size, deadline)
        (length,) = _LENGTH.unpack_from(self._buffer, 0)
        if length > MAX_MESSAGE_BYTES:
            raise BadMessage(f"message of {length} bytes is over the limit")
        self._fill(_LENGTH.size + length, deadline)
        payload = bytes(self._buffer[_LENGTH.size:_LENGTH.size + length])
        del self._buffer[:_LENGTH.size + length]
        return decode(payload)

    def _fill(self, count: int, deadline: float | None) -> None:
        while len(self._buffer) < count:
            if deadline is not None:
                wait = deadline - time.monotonic()
                if wait <= 0 or not select.select([self.fd], [], [], wait)[0]:
                    raise ChannelTimeout()
            chunk = os.read(self.fd, min(count - len(self._buffer), 1 << 20))
            if not chunk:
                raise ChannelClosed()
            self._buffer += chunk
