"""Mistake: parallel_mlp all-reduces the partial sums, then all-reduces the total again."""

TITLE = "All-reduces the output twice"
RATIONALE = (
    "One all-reduce already leaves the whole output, the sum of every rank's partial sum, on every rank. "
    "A second one adds those identical totals together, so every rank returns world_size times the "
    "answer, and the ranks move twice the bytes the MLP needs."
)
HELP = (
    "Call dist.all_reduce once, on this rank's partial sum relu(x @ w1_shard) @ w2_shard, and return it "
    "as it is: after that one call every rank already holds the whole output."
)


def parallel_mlp(x: torch.Tensor, w1_shard: torch.Tensor, w2_shard: torch.Tensor, group) -> torch.Tensor:
    partial = torch.relu(x @ w1_shard) @ w2_shard
    dist.all_reduce(partial, op=dist.ReduceOp.SUM, group=group)
    dist.all_reduce(partial, op=dist.ReduceOp.SUM, group=group)
    return partial
