"""A case's inputs in shared memory: the learner's tensors are views of pages the grader reads back after the call.

The grader writes every input tensor into one memory file and hands the worker its descriptor;
the worker maps it and gives the learner's function views of it, with the same strides the
grader chose. Whatever writes to an input (an in-place op, `.data`, NumPy, ctypes), the bytes
change in pages the grader owns, so the check that inputs came back unchanged is made here,
against the grader's own tensors they were filled from, never on the worker's word.
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
    """The memory file, where each tensor lies in it, and the grader's own tensors it was filled from."""

    fd: int
    size: int
    specs: list[dict[str, Any]]
    args: list[Any]           # the argument tree, tensors replaced by {"tensor": index}
    blocks: list[Any]         # what each tensor's bytes were when handed over: the grader's, never shared

    def changed(self) -> list[int]:
        """Indices of the tensors whose bytes differ from what was handed over."""
        import torch

        # Read back with pread, never a mapping: a worker that shrank the file would make a mapped read
        # fault in the grader; here the missing bytes just read as changed.
        now = bytearray(self.size)
        view, done = memoryview(now), 0
        while done < self.size:
            count = os.preadv(self.fd, [view[done:]], done)
            if count <= 0:
                break
            done += count
        current = torch.frombuffer(now, dtype=torch.uint8)
        return [index for index, (spec, block) in enumerate(zip(self.specs, self.blocks))
                if spec["nbytes"] and not _same(current[spec["offset"]:spec["offset"] + spec["nbytes"]],
                                                _as_bytes(block))]

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass


def _as_bytes(block: Any) -> Any:
    import torch

    return block.reshape(-1).view(torch.uint8)


def _same(a: Any, b: Any) -> bool:
    """Bit for bit (NaNs included), compared eight bytes at a time where the length allows."""
    import torch

    if a.numel() % 8 == 0:
        try:
            return torch.equal(a.view(torch.int64), b.view(torch.int64))
        except RuntimeError:  # the grader's tensor starts mid-word in its storage (a half-precision slice)
            pass
    return torch.equal(a, b)


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

    blocks: list[Any] = []
    specs: list[dict[str, Any]] = []
    offset = 0

    def walk(value: Any) -> Any:
        nonlocal offset
        if isinstance(value, torch.Tensor):
            # A dense tensor in any layout is a permutation of a contiguous block: store that block.
            order = sorted(range(value.dim()), key=lambda dim: (-value.stride(dim), dim))
            block = value.detach().permute(order).contiguous().cpu()
            strides = [0] * value.dim()
            for position, dim in enumerate(order):
                strides[dim] = block.stride(position)
            nbytes = block.numel() * block.element_size()
            specs.append({"dtype": str(value.dtype).removeprefix("torch."), "shape": list(value.shape),
                          "stride": strides, "offset": offset, "nbytes": nbytes})
            blocks.append(block)
            offset += nbytes + (-nbytes % ALIGN)
            return {"tensor": len(specs) - 1}
        if isinstance(value, list):
            return {"list": [walk(item) for item in value]}
        if isinstance(value, tuple):
            return {"tuple": [walk(item) for item in value]}
        return {"value": value}

    tree = [walk(value) for value in args]
    size = offset or ALIGN
    # Gathered into one buffer (zeros between the tensors) and written with one call: a ring case has
    # hundreds of small chunks, and a call per chunk cost more than the copy.
    laid = torch.zeros(size, dtype=torch.uint8)
    for spec, block in zip(specs, blocks):
        if spec["nbytes"]:
            laid[spec["offset"]:spec["offset"] + spec["nbytes"]].copy_(_as_bytes(block))
    fd = _memory_file()
    _write_all(fd, memoryview(laid.numpy()))
    return SharedInputs(fd, size, specs, tree, blocks)


def _write_all(fd: int, data: memoryview) -> None:
    while data:
        data = data[os.write(fd, data):]


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
