"""Exercise 06: tensor-parallel linear layers, and an MLP that needs a single all-reduce.

Write the three functions below. Run `grader run` to check them against the examples,
`grader hint` when you are stuck, and `grader submit` to run every test (parallel_mlp runs
there on a real process group of 2 ranks; `--ranks 3` or `--ranks 4` for more).

A linear layer computes y = x @ W, with W of shape (d_in, d_out). Tensor parallelism cuts W
into shards, one per GPU, and each GPU multiplies by its own shard only:

    column parallel: W split by output columns, W = cat(w_0, w_1, ..., dim=1); every GPU
                     holds the whole x and makes its own columns of y.
    row parallel:    W split by input rows, W = cat(w_0, w_1, ..., dim=0), and x split the
                     same way along its last dimension; every GPU makes a partial sum with
                     the full shape of y, and the partial sums are added.

For every function:
    - x (and every x shard) may have any number of leading dimensions, none included: the
      product acts on the last dimension only, as x @ W does.
    - shards arrive in rank order: shard 0 first.
    - the result has x's dtype and device (float64, float32, bfloat16 or float16).
    - no input is modified: x, its shards and every weight shard come back as they were.
"""

import torch
import torch.distributed as dist


def column_parallel_linear(x: torch.Tensor, weight_shards: list[torch.Tensor]) -> torch.Tensor:
    """x @ W for W split by output columns.

    Args:
        x: (..., d_in), the whole input, which every shard sees.
        weight_shards: shard i has shape (d_in, d_out_i); the widths d_out_i may differ.

    Returns:
        (..., d_out_0 + d_out_1 + ...): shard 0's output columns first, then shard 1's, and so on.
    """
    raise NotImplementedError("column_parallel_linear is not written yet")


def row_parallel_linear(x_shards: list[torch.Tensor], weight_shards: list[torch.Tensor]) -> torch.Tensor:
    """x @ W for W split by input rows and x split the same way along its last dimension.

    Args:
        x_shards: shard i has shape (..., d_in_i): its slice of x's features (every shard
            has the same leading dimensions).
        weight_shards: shard i has shape (d_in_i, d_out): the rows of W for those features.

    Returns:
        (..., d_out): the sum over i of x_shards[i] @ weight_shards[i].
    """
    raise NotImplementedError("row_parallel_linear is not written yet")


def parallel_mlp(x: torch.Tensor, w1_shard: torch.Tensor, w2_shard: torch.Tensor, group) -> torch.Tensor:
    """relu(x @ W1) @ W2 on one rank of a tensor-parallel group; called once on every rank.

    Args:
        x: (..., d_in), the same on every rank.
        w1_shard: (d_in, h_r), this rank's output columns of W1 (column parallel).
        w2_shard: (h_r, d_out), this rank's input rows of W2 (row parallel): the rows that
            match the hidden units this rank computes.
        group: the torch.distributed process group every rank belongs to; pass it to every
            collective you call (dist.all_reduce(tensor, group=group)).

    Returns:
        (..., d_out): the whole MLP's output, the same on every rank.

    Between ranks, move what one all-reduce of the output moves and nothing more: gathering
    the hidden activations, or reducing twice, is refused even when the values are right.
    """
    raise NotImplementedError("parallel_mlp is not written yet")
