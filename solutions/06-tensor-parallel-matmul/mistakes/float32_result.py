"""Mistake: the products are computed in float32 and returned in float32, whatever x's dtype."""

TITLE = "Returns float32 whatever the input's dtype"
RATIONALE = (
    "Computing in float32 (x.float() @ w.float()) is a fine way to multiply half-precision tensors "
    "accurately, but the result must go back to x's dtype: a float64 caller gets float32 numbers "
    "(with float32's range and precision), and a bfloat16 or float16 caller gets a tensor twice the "
    "size in a dtype it did not ask for."
)
HELP = (
    "Return x's dtype: cast back at the end with .to(x.dtype), or multiply in x's own dtype from the "
    "start."
)


def column_parallel_linear(x: torch.Tensor, weight_shards: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([x.float() @ shard.float() for shard in weight_shards], dim=-1)


def row_parallel_linear(x_shards: list[torch.Tensor], weight_shards: list[torch.Tensor]) -> torch.Tensor:
    total = x_shards[0].float() @ weight_shards[0].float()
    for x, w in zip(x_shards[1:], weight_shards[1:]):
        total = total + x.float() @ w.float()
    return total
