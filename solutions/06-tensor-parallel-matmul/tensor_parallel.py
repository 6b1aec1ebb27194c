"""Reference solution for exercise 06: tensor-parallel linear layers, and an MLP with one all-reduce.

Read it top to bottom: a weight split by output columns gives slices of the output, which are
concatenated; a weight split by input rows gives partial sums of the whole output, which are added;
and an MLP that splits its first layer by columns and its second by rows needs only that one sum.
"""

import torch
import torch.distributed as dist


def column_parallel_linear(x: torch.Tensor, weight_shards: list[torch.Tensor]) -> torch.Tensor:
    """cat([x @ w_i], dim=-1): every shard makes its own columns of the output from the whole x."""
    # x @ w broadcasts over any leading dims of x, and keeps x's dtype and device (the shards share them).
    # Each product is a new tensor, so nothing is written into x or into a shard.
    return torch.cat([x @ shard for shard in weight_shards], dim=-1)


def row_parallel_linear(x_shards: list[torch.Tensor], weight_shards: list[torch.Tensor]) -> torch.Tensor:
    """sum_i x_i @ w_i: every shard turns its slice of x's features into a partial sum of the whole output."""
    # Each partial already has the output's full shape (..., d_out). The first is a new tensor, so adding
    # the others into it in place writes into nothing the caller owns.
    total = x_shards[0] @ weight_shards[0]
    for x_shard, weight_shard in zip(x_shards[1:], weight_shards[1:]):
        total += x_shard @ weight_shard
    return total


def parallel_mlp(x: torch.Tensor, w1_shard: torch.Tensor, w2_shard: torch.Tensor, group) -> torch.Tensor:
    """all_reduce_sum(relu(x @ w1_shard) @ w2_shard): the MLP's output on every rank of `group`."""
    # First layer, column-parallel: this rank's hidden units, from the whole x. relu acts on each
    # hidden unit alone, so it can be applied to this rank's units without seeing the others.
    hidden = torch.relu(x @ w1_shard)
    # Second layer, row-parallel: those hidden units are exactly the input rows this rank's w2 shard
    # holds, so the product is this rank's partial sum of the whole output.
    partial = hidden @ w2_shard
    # The only communication: add the partial sums of every rank, in place, so that each rank ends
    # with the whole output. It moves one output's worth of data, never the (wider) hidden layer.
    dist.all_reduce(partial, op=dist.ReduceOp.SUM, group=group)
    return partial
