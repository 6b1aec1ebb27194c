"""Mistake: x is divided in place by a power of two to keep the products small, then the output scaled back."""

import math

TITLE = "Rescales x in place before the product"
RATIONALE = (
    "Dividing x by a power of two before multiplying, and multiplying the output by it afterwards, "
    "changes no value (both steps are exact), and it can keep float16 products from overflowing. "
    "But x.div_() writes into the caller's tensor: whoever passed x in now holds a scaled copy of "
    "their activations."
)
HELP = (
    "Scale into a new tensor, x / scale (or multiply the output instead). In-place operations are "
    "fine on tensors you created yourself, never on an argument."
)
VIOLATES = "inputs-modified"


def column_parallel_linear(x: torch.Tensor, weight_shards: list[torch.Tensor]) -> torch.Tensor:
    largest = float(x.abs().max()) if x.numel() else 0.0
    scale = 2.0 ** math.ceil(math.log2(largest)) if largest > 0 else 1.0
    x.div_(scale)
    return torch.cat([(x @ shard) * scale for shard in weight_shards], dim=-1)

