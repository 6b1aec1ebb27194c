"""What each rank of exercise 06's distributed suite does: call the learner's parallel_mlp once, on its own shards.

Run by the grader inside the sandbox as `run(learner, [x, w1_shard, w2_shard], config)`, once every rank has
joined the default process group. Every rank holds the same x and its own shards of the two weights; the
learner's code does all of the communication itself, over the group it is given.
"""

import time

import torch
import torch.distributed as dist

from grader.api import call_learner, learner_function


def _one_tensor(result):
    if isinstance(result, torch.Tensor):
        return None
    shown = type(result).__name__ + (f" of {len(result)}" if isinstance(result, (tuple, list)) else "")
    return f"returned a {shown}; expected one tensor"


def run(learner, tensors, config):
    """This rank's output of parallel_mlp, and how long the call took."""
    x, w1_shard, w2_shard = tensors
    parallel_mlp = learner_function(learner, "parallel_mlp")
    started = time.perf_counter()
    output = call_learner(parallel_mlp, "parallel_mlp", started, x, w1_shard, w2_shard, dist.group.WORLD,
                          check=_one_tensor)
    if output.device.type == "cuda":
        torch.cuda.synchronize()
    return output, [{"seconds": time.perf_counter() - started}]
