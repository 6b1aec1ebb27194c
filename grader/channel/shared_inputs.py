"""A case's inputs in shared memory: the learner's tensors are views of pages the grader reads back after the call.

The grader writes every input tensor into one memory file and hands the worker its descriptor;
the worker maps each input on pages of its own and gives the learner's function a view of that
mapping alone, with the same strides the grader chose. No view reaches a second input: each tensor
has a storage of exactly its own bytes (as_strided, set_ and untyped_storage() stop at its end),
and on Linux each input's pages are surrounded by inaccessible guard pages, so that a raw address
run past an input faults instead of reading the next one. Where the inputs lie is drawn at random
(the number of guard pages after each, where in its first page each one starts), so that no one
stride lays many inputs out in a row. Whatever writes to an input (an in-place op,
`.data`, NumPy, ctypes), the bytes change in pages the grader owns, so the check that inputs came
back unchanged is made here, each input's own bytes against the grader's own tensor it was filled
from, never on the worker's word.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import secrets
import sys
import tempfile
from dataclasses import dataclass
from typing import Any

PAGE = mmap.PAGESIZE
ALIGN = 64        # every input starts on a multiple of this, as an allocator's block would
GUARD_PAGES = 16  # after each input, from 1 to this many inaccessible pages (holes in the file: no memory)


@dataclass
class SharedInputs:
    """The memory file, where each tensor lies in it, and the grader's own tensors it was filled from."""

    fd: int
    size: int
    specs: list[dict[str, Any]]
    args: list[Any]           # the argument tree, tensors replaced by {"tensor": index}
    blocks: list[memoryview]  # each tensor's bytes as handed over (a flat byte view): the grader's own, never shared

    def changed(self) -> list[int]:
        """Indices of the tensors whose bytes differ from what was handed over."""
        # Read back with pread, never a mapping: a worker that shrank the file would make a mapped read
        # fault in the grader; here the missing bytes just read as changed. Each input's own bytes only:
        # the guard holes between them are never read.
        changed = []
        for index, (spec, block) in enumerate(zip(self.specs, self.blocks)):
            if spec["nbytes"] and not _unchanged(self.fd, spec["offset"], block):
                changed.append(index)
        return changed

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass


_LARGE = 1 << 16  # bytes from which an input is compared as tensors (eight bytes a step), not as one bytes object


def _unchanged(fd: int, offset: int, block: memoryview) -> bool:
    """Whether the file holds `block`'s bytes, bit for bit (NaNs included), at `offset`."""
    nbytes = block.nbytes
    if nbytes < _LARGE:
        return os.pread(fd, nbytes, offset) == bytes(block)  # a short read (the file cut) is a difference too
    import torch

    buffer = bytearray(nbytes)
    view, done = memoryview(buffer), 0
    while done < nbytes:
        count = os.preadv(fd, [view[done:]], offset + done)
        if count <= 0:
            return False
        done += count
    current, handed = torch.frombuffer(buffer, dtype=torch.uint8), torch.frombuffer(block, dtype=torch.uint8)
    if nbytes % 8 == 0:
        current, handed = current.view(torch.int64), handed.view(torch.int64)
    return torch.equal(current, handed)


def _bytes_of(block: Any) -> memoryview:
    """A contiguous CPU tensor's bytes, as a flat view of its own memory (no copy)."""
    import torch

    if block.dtype not in _NO_NUMPY:
        try:
            array = block.numpy()
        except TypeError:  # a dtype NumPy lacks (bfloat16, the float8s): asked once per dtype
            _NO_NUMPY.add(block.dtype)
    if block.dtype in _NO_NUMPY:
        array = block.reshape(-1).view(torch.uint8).numpy()  # the same bytes, seen as bytes
    return memoryview(array).cast("B") if array.ndim else memoryview(array.reshape(1)).cast("B")


_NO_NUMPY: set[Any] = set()  # the dtypes whose tensors NumPy cannot view


def _memory_file() -> int:
    if hasattr(os, "memfd_create"):
        return os.memfd_create("grader-inputs", os.MFD_CLOEXEC)
    handle = tempfile.TemporaryFile()  # macOS: an unlinked file does the same job
    fd = os.dup(handle.fileno())
    handle.close()
    return fd


def share(args: list[Any]) -> SharedInputs:
    """Lay out every tensor in `args` (any nesting of lists and tuples) in one memory file, each on pages of its own."""
    import torch

    blocks: list[Any] = []
    specs: list[dict[str, Any]] = []

    def walk(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            if value.is_contiguous() and not value.is_cuda:
                block, strides = value, list(value.stride())  # the block itself, as most inputs are
            else:
                # A dense tensor in any layout is a permutation of a contiguous block: store that block.
                order = sorted(range(value.dim()), key=lambda dim: (-value.stride(dim), dim))
                block = value.detach().permute(order).contiguous().cpu()
                strides = [0] * value.dim()
                for position, dim in enumerate(order):
                    strides[dim] = block.stride(position)
            data = _bytes_of(block.detach())  # its bytes, as the worker's view of them will hold them
            specs.append({"dtype": str(value.dtype).removeprefix("torch."), "shape": list(value.shape), "stride": strides,
                          "offset": 0, "nbytes": data.nbytes})
            blocks.append(data)
            return {"tensor": len(specs) - 1}
        if isinstance(value, list):
            return {"list": [walk(item) for item in value]}
        if isinstance(value, tuple):
            return {"tuple": [walk(item) for item in value]}
        return {"value": value}

    tree = [walk(value) for value in args]
    size = _place(specs)
    fd = _memory_file()
    try:
        os.ftruncate(fd, size)  # the guard runs stay holes: written nowhere, they cost no memory
        for spec, data in zip(specs, blocks):
            if spec["nbytes"]:
                _write_all(fd, data, spec["offset"])
    except BaseException:
        os.close(fd)
        raise
    return SharedInputs(fd, size, specs, tree, blocks)


def _place(specs: list[dict[str, Any]]) -> int:
    """Give each input its offset in the file, in argument order, and return the file's size.

    Each input starts on pages of its own, at a random multiple of ALIGN inside its first page, and is
    followed by 1 to GUARD_PAGES pages that belong to no input: the distance from one input to the next
    takes one of about GUARD_PAGES * PAGE / ALIGN values, so few inputs ever lie at one stride."""
    # Two draws an input and one more, from one read of the system's random source (not one read a draw: a ring
    # case has hundreds of inputs). Both bounds divide 2**16, so each draw is uniform.
    pool = iter(memoryview(secrets.token_bytes(2 * (2 * len(specs) + 1))).cast("H"))
    offset = PAGE * (1 + next(pool) % GUARD_PAGES)  # nothing of an input on the file's first pages either
    for spec in specs:
        if not spec["nbytes"]:
            continue
        spec["offset"] = offset + ALIGN * (next(pool) % (PAGE // ALIGN))
        end = spec["offset"] + spec["nbytes"]
        offset = end + (-end % PAGE) + PAGE * (1 + next(pool) % GUARD_PAGES)
    return offset


def _write_all(fd: int, data: memoryview, offset: int) -> None:
    while data:
        written = os.pwrite(fd, data, offset)
        data, offset = data[written:], offset + written


# ---------------------------------------------------------------- the worker's side

_PROT_NONE, _PROT_READ_WRITE = 0, 3
_MAP_SHARED, _MAP_PRIVATE, _MAP_FIXED, _MAP_ANONYMOUS, _MAP_NORESERVE = 0x01, 0x02, 0x10, 0x20, 0x4000
_MAP_FAILED = ctypes.c_void_p(-1).value


class _Region:
    """An address range reserved inaccessible, each input mapped over its own pages in it; unmapped when the
    last tensor that views it is gone (each input's buffer holds the region)."""

    def __init__(self, size: int) -> None:
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.mmap.restype = ctypes.c_void_p
        self.libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                   ctypes.c_long]
        self.libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        self.size = size
        self.base = self._map(None, size, _PROT_NONE, _MAP_PRIVATE | _MAP_ANONYMOUS | _MAP_NORESERVE, -1, 0)

    def _map(self, address: int | None, length: int, prot: int, flags: int, fd: int, offset: int) -> int:
        found = self.libc.mmap(address, length, prot, flags, fd, offset)
        if found is None or found == _MAP_FAILED:
            error = ctypes.get_errno()
            raise OSError(error, f"mapping a shared input failed: {os.strerror(error)}")
        return found

    def place(self, fd: int, offset: int, nbytes: int) -> Any:
        """The input's pages mapped at their place in the region: a buffer of exactly its bytes."""
        first = offset - offset % PAGE
        end = offset + nbytes
        self._map(self.base + first, end + (-end % PAGE) - first, _PROT_READ_WRITE, _MAP_SHARED | _MAP_FIXED, fd,
                  first)
        buffer = (ctypes.c_char * nbytes).from_address(self.base + offset)
        buffer.region = self  # the region lives as long as any tensor over any of its inputs
        return buffer

    def __del__(self) -> None:
        self.libc.munmap(self.base, self.size)


def open_shared(fd: int, size: int, specs: list[dict[str, Any]]) -> list[Any]:
    """The tensors, each a view of its own bytes and nothing more (each keeps the mapping alive as long as it lives)."""
    import torch

    try:
        if sys.platform.startswith("linux"):
            region = _Region(size)
            buffers = [region.place(fd, spec["offset"], spec["nbytes"]) if spec["nbytes"] else None
                       for spec in specs]
        else:  # one mapping, no guard pages, but still a storage per input: no tensor view reaches another
            mapped = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            buffers = [memoryview(mapped)[spec["offset"]:spec["offset"] + spec["nbytes"]] if spec["nbytes"]
                       else None for spec in specs]
    finally:
        os.close(fd)
    tensors = []
    for spec, buffer in zip(specs, buffers):
        dtype = getattr(torch, spec["dtype"])
        if buffer is None:
            tensors.append(torch.empty(spec["shape"], dtype=dtype))
            continue
        own = torch.frombuffer(buffer, dtype=torch.uint8).view(dtype)  # a storage of this input's bytes alone
        tensors.append(own.as_strided(spec["shape"], spec["stride"]))
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
