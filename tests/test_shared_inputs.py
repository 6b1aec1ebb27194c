"""Inputs in shared memory: what the worker sees is what the grader wrote, and any change to it is found."""

from __future__ import annotations

import os

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
