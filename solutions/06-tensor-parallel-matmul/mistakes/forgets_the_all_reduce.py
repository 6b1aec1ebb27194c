"""Mistake: parallel_mlp returns this rank's partial sum without the all-reduce."""

TITLE = "Returns this rank's partial sum without the all-reduce"
RATIONALE = (
    "relu(x @ w1_shard) @ w2_shard has the output's shape, but it is only the part of the output that "
    "this rank's hidden units contribute: the second layer is row-parallel, so every rank holds a "
    "partial sum, and the answer is their total. Without the all-reduce every rank returns a "
    "different, wrong output."
)
HELP = (
    "Add the partial sums of every rank: dist.all_reduce(partial, group=group) sums in place, so "
    "each rank ends with the whole output. Pass the group you were given."
)


def parallel_mlp(x: torch.Tensor, w1_shard: torch.Tensor, w2_shard: torch.Tensor, group) -> torch.Tensor:
    return torch.relu(x @ w1_shard) @ w2_shard
