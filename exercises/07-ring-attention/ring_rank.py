"""What each rank of exercise 07's distributed ring does with the learner's two chunk functions.

Run by grader/sandboxed/rank.py inside the sandbox: `run(learner, [query, key, value], config)`. Rank r
keeps its queries; at step s it holds rank (r - s)'s key/value shard, posts the send of that
shard to rank r + 1 and the receive of the next one from rank r - 1, and meanwhile computes
the shard's statistics and merges them into its running state, so that communication overlaps
compute, as ring attention does on GPUs. After N steps it normalizes once.
"""

import time
from datetime import timedelta

import torch
import torch.distributed as dist

from grader.api import call_learner, learner_function


def _three_tensors(result):
    # A tuple (a named one too) or a list: the same that the ordinary cases accept.
    if isinstance(result, (tuple, list)) and len(result) == 3 and all(isinstance(t, torch.Tensor) for t in result):
        return None
    shown = type(result).__name__ + (f" of {len(result)}" if isinstance(result, (tuple, list)) else "")
    return f"returned a {shown}; expected a tuple of 3 tensors"


def run(learner, tensors, config):
    """N steps of compute-while-communicating; returns the normalized output and what each step moved."""
    query, key, value = tensors
    rank, world = config["rank"], config["world_size"]
    shards = config["shards"]
    timeout = timedelta(seconds=config["comm_timeout"])
    stats_fn = learner_function(learner, "attention_chunk_stats")
    merge_fn = learner_function(learner, "merge_chunk_stats")
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
        stats = call_learner(stats_fn, "attention_chunk_stats", started, query, current_key, current_value,
                             check=_three_tensors)
        state = stats if state is None else call_learner(merge_fn, "merge_chunk_stats", started, *state, *stats,
                                                         check=_three_tensors)
        if query.device.type == "cuda":
            torch.cuda.synchronize()
        for work in works:
            work.wait(timeout)
        steps.append({"seconds": time.perf_counter() - step_started, "sent": sent, "received": received})
        if step < world - 1:
            current_key, current_value = next_key, next_value
    # The merged state's shapes come from learner code, so a mismatch here is the learner's.
    output = call_learner(lambda: state[0] / state[1], "the merged state", started)
    return output, steps


def _nbytes(tensor):
    return tensor.numel() * tensor.element_size()
