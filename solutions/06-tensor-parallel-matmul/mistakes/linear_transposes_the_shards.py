"""Mistake: F.linear is given the (d_in, d_out) shards, so every shard is used transposed."""

TITLE = "Uses F.linear, which multiplies by the transpose of each shard"
RATIONALE = (
    "torch.nn.functional.linear(x, w) computes x @ w.T, because nn.Linear stores its weight as "
    "(d_out, d_in). The shards here are stored (d_in, d_out), the way x @ w reads them, so F.linear "
    "multiplies by their transpose: it fails on most shapes, and gives wrong values without a word "
    "when a shard happens to be square."
)
HELP = (
    "Multiply with x @ w (or torch.matmul(x, w)). If you prefer F.linear, pass it w.T: "
    "F.linear(x, w.T) is x @ w."
)


def column_parallel_linear(x: torch.Tensor, weight_shards: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([torch.nn.functional.linear(x, shard) for shard in weight_shards], dim=-1)


def row_parallel_linear(x_shards: list[torch.Tensor], weight_shards: list[torch.Tensor]) -> torch.Tensor:
    total = torch.nn.functional.linear(x_shards[0], weight_shards[0])
    for x, w in zip(x_shards[1:], weight_shards[1:]):
        total = total + torch.nn.functional.linear(x, w)
    return total
