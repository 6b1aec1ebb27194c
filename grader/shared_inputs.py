"""A case's inputs in shared memory: the learner's tensors are views of pages the grader reads back after the call.

The grader writes every input tensor into one memory file and hands the worker its descriptor;
the worker maps it and gives the learner's function views of it, with the same strides the
grader chose. Whatever writes to an input (an in-place op, `.data`, NumPy, ctypes), the bytes
change in pages the grader owns, so the check that inputs came back unchanged is made here,
against the grader's own pristine copy, never on the worker's word.
"""

from __future__ import annotations

import mmap
import os
import tempfile
from dataclasses import dataclass
from typing import Any

ALIGN = 64


@dataclass
class SharedInputs:
    """The memory file, where each tensor lies in it, and the bytes it held when handed over."""

    fd: int
    size: int
    specs: list[dict[str, Any]]
    args: list[Any]           # the argument tree, tensors replaced by {"tensor": index}
    pristine: bytes

    def changed(self) -> list[int]:
        """Indices of the tensors whose bytes differ from what was handed over."""
        now = os.pread(self.fd, self.size, 0)
        return [index for index, spec in enumerate(self.specs)
                if now[spec["offset"]:spec["offset"] + spec["nbytes"]]
                != self.pristine[spec["offset"]:spec["offset"] + spec["nbytes"]]]

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass


def _memory_file() -> int:
    if hasattr(os, "memfd_create"):
        return os.memfd_create("grader-inputs", os.MFD_CLOEXEC)
    handle = tempfile.TemporaryFile()  # macOS: an unlinked file does the same job
    fd = os.dup(handle.fileno())
    handle.close()
    return fd


def share(args: list[Any]) -> SharedInputs:
    """Lay out every tensor in `args` (any nesting of lists and tuples) in one memory file."""
    import torch

    blobs: list[bytes] = []
    specs: list[dict[str, Any]] = []
    offset = 0

    def walk(value: Any) -> Any:
        nonlocal offset
        if isinstance(value, torch.Tensor):
            # A dense tensor in any layout is a permutation of a contiguous block: store that block.
            order = sorted(range(value.dim()), key=lambda dim: (-value.stride(dim), dim))
            block = value.detach().permute(order).contiguous().cpu()
            raw = block.reshape(-1).view(torch.uint8).numpy().tobytes() if block.numel() else b""
            strides = [0] * value.dim()
            for position, dim in enumerate(order):
                strides[dim] = block.stride(position)
            specs.append({"dtype": str(value.dtype).removeprefix("torch."), "shape": list(value.shape),
                          "stride": strides, "offset": offset, "nbytes": len(raw)})
            blobs.append(raw + b"\0" * (-len(raw) % ALIGN))
            offset += len(blobs[-1])
            return {"tensor": len(specs) - 1}
        if isinstance(value, list):
            return {"list": [walk(item) for item in value]}
        if isinstance(value, tuple):
            return {"tuple": [walk(item) for item in value]}
        return {"value": value}

    tree = [walk(value) for value in args]
    data = b"".join(blobs) or b"\0" * ALIGN
    fd = _memory_file()
    _write_all(fd, data)
    return SharedInputs(fd, len(data), specs, tree, data)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


# ---------------------------------------------------------------- the worker's side

def open_shared(fd: int, size: int, specs: list[dict[str, Any]]) -> list[Any]:
    """The tensors as views of the shared pages (each keeps the mapping alive as long as it lives)."""
    import torch

    mapped = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    os.close(fd)
    flat = torch.frombuffer(mapped, dtype=torch.uint8)
    tensors = []
    for spec in specs:
        dtype = getattr(torch, spec["dtype"])
        region = flat[spec["offset"]:spec["offset"] + spec["nbytes"]].view(dtype)
        tensors.append(region.as_strided(spec["shape"], spec["stride"]) if spec["nbytes"]
                       else torch.empty(spec["shape"], dtype=dtype))
    return tensors


def build_args(tree: list[Any], tensors: list[Any]) -> list[Any]:
    """The argument tree with each {"tensor": i} replaced by the i-th tensor."""

    def one(node: dict[str, Any]) -> Any:
        if "tensor" in node:
            return tensors[node["tensor"]]
        if "list" in node:
            return [one(item) for item in node["list"]]
        if "tuple" in node:
            return tuple(one(item) for item in node["tuple"])
        return node["value"]

    return [one(node) for node in tree]
