"""Inputs in shared memory: what the worker sees is what the grader wrote, and any change to it is found."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
import torch

from grader.channel import shared_inputs


def _shared(args):
    shared = shared_inputs.share(args)
    os.set_inheritable(shared.fd, False)
    return shared


def test_the_worker_sees_every_tensor_with_its_layout_and_bits() -> None:
    halves = torch.randn(13, 4, dtype=torch.float16)
    nan = torch.tensor([float("nan"), -0.0, 1.0], dtype=torch.float64)
    args = [list(halves.split([1, 4, 8])), halves.t(), nan, 3]
    shared = _shared(args)
    try:
        seen = shared_inputs.build_args(shared.args, shared_inputs.open_shared(os.dup(shared.fd), shared.size,
                                                                                 shared.specs))
        for mine, theirs in zip(args[0], seen[0]):
            assert torch.equal(mine, theirs)
        assert seen[1].stride() == halves.t().stride() and torch.equal(seen[1], halves.t())
        assert torch.equal(seen[2].view(torch.int64), nan.view(torch.int64))  # NaN and -0.0 bit for bit
        assert seen[3] == 3 and shared.changed() == []
    finally:
        shared.close()


def test_a_change_anywhere_is_found_and_a_shrunk_file_counts_as_changed() -> None:
    halves = torch.randn(13, 4, dtype=torch.float16)
    shared = _shared([list(halves.split([1, 4, 8])), torch.ones(5)])
    try:
        spec = shared.specs[1]  # a slice that starts mid-word in the grader's storage
        os.pwrite(shared.fd, b"\x01", spec["offset"] + spec["nbytes"] - 1)
        assert shared.changed() == [1]
        os.ftruncate(shared.fd, shared.specs[3]["offset"] + 4)  # the worker shrank the file: no fault here
        assert shared.changed() == [1, 3]
    finally:
        shared.close()


def test_every_kind_of_input_is_handed_over_whole_and_a_flipped_bit_in_any_is_found() -> None:
    """NumPy has no bfloat16, a 0-dim tensor has no axis, a large input is compared eight bytes at a time, an input
    that requires grad cannot be seen by NumPy directly: each still travels bit for bit and is checked the same."""
    nan = torch.tensor(float("nan"), dtype=torch.float64)
    args = [torch.randn(7, 3).to(torch.bfloat16), nan, torch.randn(3, 40_000), torch.randn(4, requires_grad=True),
            torch.arange(6, dtype=torch.int32).reshape(2, 3).t()]
    shared = _shared(args)
    try:
        seen = shared_inputs.build_args(shared.args, shared_inputs.open_shared(os.dup(shared.fd), shared.size,
                                                                                 shared.specs))
        assert all(torch.equal(mine.detach().view(-1).view(torch.uint8) if mine.is_contiguous() else mine,
                               theirs.view(-1).view(torch.uint8) if theirs.is_contiguous() else theirs)
                   for mine, theirs in zip(args, seen))
        assert shared.changed() == []
        for index, spec in enumerate(shared.specs):
            last = spec["offset"] + spec["nbytes"] - 1
            byte = os.pread(shared.fd, 1, last)
            os.pwrite(shared.fd, bytes([byte[0] ^ 1]), last)  # one bit, in the last byte (a NaN's payload for 1)
            assert shared.changed() == [index], index
            os.pwrite(shared.fd, byte, last)
        assert shared.changed() == []
    finally:
        shared.close()


def _opened(args):
    shared = _shared(args)
    return shared, shared_inputs.build_args(shared.args, shared_inputs.open_shared(os.dup(shared.fd), shared.size,
                                                                                   shared.specs))


def test_each_input_has_a_storage_of_its_own_that_no_view_leaves() -> None:
    chunks = [torch.randn(257, 64) for _ in range(8)]
    shared, (seen,) = _opened([chunks])
    try:
        assert all(torch.equal(mine, theirs) for mine, theirs in zip(chunks, seen))
        assert [chunk.untyped_storage().nbytes() for chunk in seen] == [257 * 64 * 4] * 8
        assert len({chunk.untyped_storage().data_ptr() for chunk in seen}) == 8
        with pytest.raises(RuntimeError, match="out of bounds"):
            seen[0].as_strided((8, 257, 64), (257 * 64, 64, 1))  # every chunk from the first one: refused
        with pytest.raises(RuntimeError):
            seen[0].view(-1)[: 257 * 64].as_strided((257 * 64 + 1,), (1,))
    finally:
        shared.close()


def test_no_one_stride_lays_many_inputs_out_in_a_row() -> None:
    shared = _shared([[torch.zeros(1024, 64) for _ in range(128)]])  # equal sizes, a page multiple each
    try:
        offsets = [spec["offset"] for spec in shared.specs]
        gaps = [later - earlier - spec["nbytes"] for earlier, later, spec in zip(offsets, offsets[1:], shared.specs)]
        assert min(gaps) >= shared_inputs.PAGE  # at least one whole page of no input between any two
        positions = set(offsets)
        longest = 1
        for index, first in enumerate(offsets):
            for second in offsets[index + 1:]:
                step, count = second - first, 2
                while first + count * step in positions:
                    count += 1
                longest = max(longest, count)
        assert longest <= 5, longest  # 3 is usual; a raw strided view over them all is out of reach
    finally:
        shared.close()


def test_the_check_reads_only_the_inputs_own_bytes() -> None:
    shared = _shared([torch.ones(300), torch.ones(300)])
    try:
        first, second = shared.specs
        hole = first["offset"] + first["nbytes"] + shared_inputs.PAGE  # in the guard run between the two
        assert hole + 1 < second["offset"]
        os.pwrite(shared.fd, b"\xff" * 8, hole)
        assert shared.changed() == []
        os.pwrite(shared.fd, b"\xff", second["offset"])
        assert shared.changed() == [1]
    finally:
        shared.close()


GUARD_PROBE = """
import ctypes, os, sys, torch
from grader.channel import shared_inputs
shared = shared_inputs.share([[torch.ones(1000), torch.ones(1000)]])
first, second = shared_inputs.open_shared(os.dup(shared.fd), shared.size, shared.specs)
assert ctypes.string_at(first.data_ptr() + 3999, 1) == bytes([0x3f])  # its own last byte reads
if sys.argv[1] == "after":
    address = first.data_ptr() + 4000 + shared_inputs.PAGE - 1  # past the end of its pages
else:
    address = second.data_ptr() - second.data_ptr() % shared_inputs.PAGE - 1  # just before the next one's pages
print("reading", flush=True)
ctypes.string_at(address, 1)
print("read it")
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="guard pages are mapped on Linux")
@pytest.mark.parametrize("where", ["after", "before"])
def test_a_raw_read_off_an_input_faults_instead_of_reaching_the_next(where) -> None:
    result = subprocess.run([sys.executable, "-c", GUARD_PROBE, where], capture_output=True, text=True, timeout=120)
    assert result.stdout == "reading\n", result.stderr
    assert result.returncode == -signal.SIGSEGV
