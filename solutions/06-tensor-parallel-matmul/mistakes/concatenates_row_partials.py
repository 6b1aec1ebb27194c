"""Mistake: the row shards' partial sums are concatenated instead of added."""

TITLE = "Concatenates the row shards' partial sums instead of adding them"
RATIONALE = (
    "With the weight cut by input rows, each x_i @ w_i already has the output's full width d_out: it "
    "is the part of every output that comes from shard i's features. The output is their sum; "
    "concatenating them returns a tensor as many times too wide as there are shards."
)
HELP = (
    "Add the partial sums: start from the first, add each of the others (torch.stack(...).sum(0) "
    "works too). The result is (..., d_out)."
)


def row_parallel_linear(x_shards: list[torch.Tensor], weight_shards: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([x @ w for x, w in zip(x_shards, weight_shards)], dim=-1)
