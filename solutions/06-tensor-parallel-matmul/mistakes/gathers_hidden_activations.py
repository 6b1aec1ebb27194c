"""Mistake: the hidden activations are all-gathered so that every rank holds the whole hidden layer."""

TITLE = "All-gathers the hidden activations"
RATIONALE = (
    "The values come out right, but every rank receives every other rank's hidden activations, a "
    "tensor as wide as the whole hidden layer (usually four times the model's width, and here 16 or "
    "more times the output's), only to multiply its own slice of it. This is a column-parallel layer "
    "that gathers its output followed by a row-parallel layer that splits it again: the gather "
    "buys nothing, because the hidden units a rank computes are exactly the rows of W2 it holds."
)
HELP = (
    "Keep the hidden activations where they are made: relu(x @ w1_shard) @ w2_shard is this rank's "
    "partial sum of the output, and one all-reduce of that sum (dist.all_reduce(partial, "
    "group=group)) is the only communication the MLP needs."
)
VIOLATES = "communication"


def parallel_mlp(x: torch.Tensor, w1_shard: torch.Tensor, w2_shard: torch.Tensor, group) -> torch.Tensor:
    hidden = torch.relu(x @ w1_shard)
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    # Shards may differ in width, and all_gather wants equal sizes: share the widths, pad to the widest.
    width = torch.tensor([hidden.shape[-1]])
    widths = [torch.zeros_like(width) for _ in range(world)]
    dist.all_gather(widths, width, group=group)
    widths = [int(w) for w in widths]
    padded = torch.nn.functional.pad(hidden, (0, max(widths) - hidden.shape[-1])).contiguous()
    gathered = [torch.empty_like(padded) for _ in range(world)]
    dist.all_gather(gathered, padded, group=group)
    whole = torch.cat([piece[..., :w] for piece, w in zip(gathered, widths)], dim=-1)
    start = sum(widths[:rank])
    partial = whole[..., start:start + widths[rank]] @ w2_shard
    dist.all_reduce(partial, group=group)
    return partial
