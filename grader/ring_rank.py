"""One rank of the distributed ring: runs the learner's chunk functions while key/value shards travel.

Started by grader/distributed.py in a sandbox shared with the other ranks, as
`python -m grader.ring_rank CONFIG_JSON`. Its own shard arrives over its pipe (descriptor 3)
with the grader's go; it joins the process group, runs the ring, and reports (descriptor 4)
its normalized output and what each step sent and took. Everything here runs beside untrusted
code, so nothing here decides pass or fail.
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from grader import wire
from grader.worker import REPLY_FD, describe_exception, load_learner, send, warm_up

SHARD_FD = 3


class LearnerFailure(Exception):
    """Learner code raised: kept apart from communication errors, which are usually a consequence."""

    def __init__(self, error: BaseException, seconds: float) -> None:
        super().__init__(str(error))
        self.error = error
        self.seconds = seconds


def main(config: dict[str, Any]) -> None:
    """Torch, the grader's go with this rank's shard, the learner's file, the process group, the ring; then wait."""
    import torch
    import torch.distributed as dist

    # N ranks share the machine's cores: one rank per core's worth of threads avoids oversubscription.
    torch.set_num_threads(config["threads"])
    warm_up(torch)
    send(REPLY_FD, {"kind": "torch-ready"})
    reader = wire.MessageReader(SHARD_FD, 16 << 20)
    body, shard = reader.read()  # from the grader: trusted
    if body.get("kind") != "go":
        os._exit(0)
    learner = Path(config["learner"])
    module, load_error = load_learner(learner)
    if load_error:
        _flush()
        send(REPLY_FD, {"kind": "load-error", **load_error})
        _wait_for_stop(reader)
        return
    device = config["device"]
    if device.startswith("cuda"):
        torch.cuda.set_device(device)
    query, key, value = (tensor.tensor.to(device) for tensor in shard)
    try:
        dist.init_process_group(config["backend"], store=dist.FileStore(config["store"], config["world_size"]),
                                rank=config["rank"], world_size=config["world_size"],
                                timeout=timedelta(seconds=config["comm_timeout"]))
    except Exception as error:  # noqa: BLE001  (a peer never arrived: the grader names which)
        _flush()
        send(REPLY_FD, _communication_error(error, "joining the process group"))
        _wait_for_stop(reader)
        return
    send(REPLY_FD, {"kind": "ready"})
    tensors: list[Any] = []
    try:
        reply = run_ring(module, query, key, value, config, tensors)
    except LearnerFailure as failure:
        reply = {**describe_exception(failure.error, learner, failure.seconds, device), "phase": "learner"}
    except Exception as error:  # noqa: BLE001  (gloo/NCCL errors: a peer failed or timed out)
        reply = _communication_error(error, "exchanging shards")
    _flush()
    send(REPLY_FD, reply, tensors=tensors)
    # Stay in the group until the grader has every reply: leaving early could cut a peer's last receive.
    _wait_for_stop(reader)


def run_ring(module: Any, query: Any, key: Any, value: Any, config: dict[str, Any], tensors: list) -> dict[str, Any]:
    """N steps: post the next shard's send/recv, compute and merge on the current one, then wait."""
    import torch
    import torch.distributed as dist

    rank, world = config["rank"], config["world_size"]
    shards = config["shards"]
    timeout = timedelta(seconds=config["comm_timeout"])
    stats_fn = _function(module, "attention_chunk_stats")
    merge_fn = _function(module, "merge_chunk_stats")
    send_to, receive_from = (rank + 1) % world, (rank - 1) % world
    current_key, current_value = key, value
    state = None
    steps = []
    started = time.perf_counter()
    for step in range(world):
        step_started = time.perf_counter()
        works, sent, received = [], 0, 0
        if step < world - 1:
            # At step s rank r holds rank (r - s)'s shard, so the next one is rank (r - s - 1)'s.
            length = shards[(rank - step - 1) % world]
            next_key = current_key.new_empty((*current_key.shape[:-2], length, current_key.shape[-1]))
            next_value = current_value.new_empty((*current_value.shape[:-2], length, current_value.shape[-1]))
            operations = [dist.P2POp(dist.isend, current_key, send_to), dist.P2POp(dist.isend, current_value, send_to),
                          dist.P2POp(dist.irecv, next_key, receive_from),
                          dist.P2POp(dist.irecv, next_value, receive_from)]
            works = dist.batch_isend_irecv(operations)
            sent = _nbytes(current_key) + _nbytes(current_value)
            received = _nbytes(next_key) + _nbytes(next_value)
        # Compute on the shard in hand while it is being sent on: the overlap ring attention relies on.
        stats = _call(stats_fn, "attention_chunk_stats", started, query, current_key, current_value)
        state = stats if state is None else _call(merge_fn, "merge_chunk_stats", started, *state, *stats)
        if query.device.type == "cuda":
            torch.cuda.synchronize()
        for work in works:
            work.wait(timeout)
        steps.append({"seconds": time.perf_counter() - step_started, "sent": sent, "received": received})
        if step < world - 1:
            current_key, current_value = next_key, next_value
    try:  # the merged state's shapes come from learner code, so a mismatch here is the learner's
        output = state[0] / state[1]
        tensors.append(output.detach().cpu())
    except Exception as error:  # noqa: BLE001
        raise LearnerFailure(error, time.perf_counter() - started) from None
    return {"kind": "returned", "value": {"type": "tensor", "ref": 0, "device": str(output.device)}, "steps": steps,
            "seconds": time.perf_counter() - started, "phase": "learner"}


def _function(module: Any, name: str) -> Any:
    function = getattr(module, name, None)
    if not callable(function):
        raise LearnerFailure(AttributeError(f"your file has no function named {name}"), 0.0)
    return function


def _call(function: Any, name: str, started: float, *args: Any) -> Any:
    """Call learner code; anything it raises, or a result the ring cannot use, is the learner's failure."""
    import torch

    try:
        result = function(*args)
    except BaseException as error:  # noqa: BLE001  (every way out of learner code is reported)
        raise LearnerFailure(error, time.perf_counter() - started) from None
    if not (isinstance(result, tuple) and len(result) == 3 and all(isinstance(t, torch.Tensor) for t in result)):
        shown = type(result).__name__ + (f" of {len(result)}" if isinstance(result, (tuple, list)) else "")
        raise LearnerFailure(TypeError(f"{name} returned a {shown}; expected a tuple of 3 tensors"),
                             time.perf_counter() - started)
    return result


def _nbytes(tensor: Any) -> int:
    return tensor.numel() * tensor.element_size()


def _communication_error(error: BaseException, doing: str) -> dict[str, Any]:
    text = str(error).splitlines()[0] if str(error) else ""
    if "] " in text:  # gloo prefixes its messages with a source path that means nothing to a learner
        text = text.split("] ", 1)[1]
    return {"kind": "raised", "phase": "communication", "exception": type(error).__name__,
            "message": f"while {doing}: {text[:500]}", "traceback": ""}


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001  (the learner may have replaced or closed it)
            pass


def _wait_for_stop(reader: wire.MessageReader) -> None:
    try:
        reader.read()
    except (wire.ChannelClosed, wire.BadMessage, OSError):
        pass


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
