"""Correct variant: x flattened to a matrix with reshape, products by addmm/mm, written into a preallocated output."""

import torch
import torch.distributed as dist


def _rows(x: torch.Tensor) -> torch.Tensor:
    # reshape (not view): it copies when the leading dims cannot be merged in place, as in a transposed x.
    return x.reshape(-1, x.shape[-1])


def column_parallel_linear(x: torch.Tensor, weight_shards: list[torch.Tensor]) -> torch.Tensor:
    rows = _rows(x)
    widths = [shard.shape[-1] for shard in weight_shards]
    out = torch.empty(rows.shape[0], sum(widths), dtype=x.dtype, device=x.device)
    start = 0
    for shard, width in zip(weight_shards, widths):
        out[:, start:start + width] = torch.mm(rows, shard)  # each shard fills its own block of columns
        start += width
    return out.reshape(*x.shape[:-1], out.shape[-1])


def row_parallel_linear(x_shards: list[torch.Tensor], weight_shards: list[torch.Tensor]) -> torch.Tensor:
    total = torch.mm(_rows(x_shards[0]), weight_shards[0])
    for x, w in zip(x_shards[1:], weight_shards[1:]):
        total = torch.addmm(total, _rows(x), w)  # total + x @ w, out of place
    return total.reshape(*x_shards[0].shape[:-1], total.shape[-1])


def parallel_mlp(x: torch.Tensor, w1_shard: torch.Tensor, w2_shard: torch.Tensor, group) -> torch.Tensor:
    hidden = torch.nn.functional.relu(torch.mm(_rows(x), w1_shard))
    partial = torch.mm(hidden, w2_shard)
    dist.all_reduce(partial, group=group)
    return partial.reshape(*x.shape[:-1], partial.shape[-1])
