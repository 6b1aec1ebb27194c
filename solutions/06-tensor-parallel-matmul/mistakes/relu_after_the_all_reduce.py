"""Mistake: relu is applied once, after the all-reduce, instead of to the hidden activations."""

TITLE = "Applies relu after the all-reduce instead of to the hidden activations"
RATIONALE = (
    "The MLP is relu(x @ W1) @ W2: the nonlinearity acts on the hidden units, between the two layers. "
    "Moved after the second layer and the all-reduce, it acts on the output instead, and the two "
    "layers collapse into one linear map x @ W1 @ W2, so every rank returns the same wrong values. "
    "relu on each rank's own hidden units is exact, since each unit's relu needs no other unit."
)
HELP = (
    "Apply relu to x @ w1_shard, on each rank, before multiplying by w2_shard; then all-reduce the "
    "partial sums and return them as they are."
)


def parallel_mlp(x: torch.Tensor, w1_shard: torch.Tensor, w2_shard: torch.Tensor, group) -> torch.Tensor:
    partial = (x @ w1_shard) @ w2_shard
    dist.all_reduce(partial, group=group)
    return torch.relu(partial)
