"""Correct variant: the all-reduce done as its two halves, a reduce-scatter then an all-gather of the output."""

import torch
import torch.distributed as dist


def column_parallel_linear(x: torch.Tensor, weight_shards: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([torch.matmul(x, shard) for shard in weight_shards], dim=-1)


def row_parallel_linear(x_shards: list[torch.Tensor], weight_shards: list[torch.Tensor]) -> torch.Tensor:
    total = None
    for x, w in zip(x_shards, weight_shards):
        partial = torch.matmul(x, w)
        total = partial if total is None else total + partial
    return total


def parallel_mlp(x: torch.Tensor, w1_shard: torch.Tensor, w2_shard: torch.Tensor, group) -> torch.Tensor:
    partial = torch.relu(x @ w1_shard) @ w2_shard
    world = dist.get_world_size(group)
    # Both collectives want a flat tensor that splits into `world` equal pieces: pad it to a multiple.
    flat = partial.reshape(-1)
    piece = -(-flat.numel() // world)
    flat = torch.nn.functional.pad(flat, (0, piece * world - flat.numel()))
    # Reduce-scatter: rank r ends with piece r of the sum over every rank.
    mine = flat.new_empty(piece)
    dist.reduce_scatter_tensor(mine, flat, group=group)
    # All-gather: every rank receives every piece, so every rank holds the whole sum.
    whole = flat.new_empty(piece * world)
    dist.all_gather_into_tensor(whole, mine, group=group)
    return whole[:partial.numel()].reshape(partial.shape)
