"""Mistake: the column shards' outputs are added together, as a row-parallel layer's partial sums are."""

TITLE = "Adds the column shards' outputs instead of concatenating them"
RATIONALE = (
    "With the weight cut by output columns, shard i computes different outputs than shard j: its "
    "product is the block of columns d_out_i of the answer, complete as it is. Adding the blocks mixes "
    "unrelated outputs into one narrower tensor (and fails outright when the shards differ in width). "
    "Adding is right only for a weight cut by input rows, where each shard holds part of every output."
)
HELP = (
    "Put the blocks side by side with torch.cat(..., dim=-1): the result has d_out_0 + d_out_1 + ... "
    "columns, shard 0's first."
)


def column_parallel_linear(x: torch.Tensor, weight_shards: list[torch.Tensor]) -> torch.Tensor:
    total = x @ weight_shards[0]
    for shard in weight_shards[1:]:
        total = total + x @ shard
    return total
