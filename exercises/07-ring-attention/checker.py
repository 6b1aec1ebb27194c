"""Exercise 07's checker: inputs and float64 answers for attention_chunk_stats, merge_chunk_stats and ring_attention.

Loaded by the grader through grader/course/checker.py's interface; its distributed suite (--ring N) is in
ring.py beside it.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import torch

from grader.api import DTYPES, HALF_DTYPES, Checker, Function, Inputs

OUTPUT_NAMES = {
    "attention_chunk_stats": ("chunk_output", "chunk_sum", "chunk_max"),
    "merge_chunk_stats": ("output", "sum", "max"),
    "ring_attention": ("output",),
}
ARGUMENTS = {
    "attention_chunk_stats": ("query", "key_chunk", "value_chunk"),
    "merge_chunk_stats": tuple(f"acc_{name}" for name in OUTPUT_NAMES["merge_chunk_stats"])
    + tuple(f"chunk_{name}" for name in OUTPUT_NAMES["merge_chunk_stats"]),
    "ring_attention": ("query", "key_chunks", "value_chunks"),
}
# ring_attention folds the other two over the chunks (hint 3 describes that loop): when they fail, it fails too.
USES = {"ring_attention": ("attention_chunk_stats", "merge_chunk_stats")}
ANSWER_BLOCK = 1 << 20  # scores the grader holds at once while it works out an answer (8 MiB in float64)
WIDE_DRAW_LIMIT = 1 << 20  # numbers per tensor up to which keys and values are drawn in float64; beyond
# (the memory cases), drawn in float32 and widened: still exact float64 values, in a quarter of the time
_COMMON = {"batch", "lq", "d", "dv", "dtype", "seed", "scale", "layout", "values"}
_ALLOWED = {
    "attention_chunk_stats": _COMMON | {"lk", "score_shift", "row_scale"},
    "merge_chunk_stats": _COMMON | {"max_offset", "max_spread", "same_state", "swap"},
    "ring_attention": _COMMON | {"chunks", "score_shift", "chunk_shift", "row_scale"},
}


class RingAttentionChecker(Checker):
    """The three functions of exercise 07; see the module functions below for how each case is built."""

    functions = {name: Function(ARGUMENTS[name], OUTPUT_NAMES[name], _ALLOWED[name], USES.get(name, ()))
                 for name in OUTPUT_NAMES}
    span_unit = "keys"
    rule_reasons = {
        "inputs-modified": "a chunk from a ring neighbour is passed on as it came",
        "materialization": (
            "In ring attention no device ever holds every key: each holds one chunk and passes it on, because the "
            "concatenated keys and values, or a full row of scores, would not fit in one GPU's memory. Work on one "
            "chunk at a time and keep only the running output, sum and max."),
        "peak-memory": (
            "Memory grew with the sequence: something as large as the scores against every key was alive at once "
            "(a list of score blocks, the full score matrix, in torch or NumPy). Keep only the running statistics "
            "(output, sum, max) between chunks and let each chunk's scores be freed before the next one arrives."),
    }

    def validate(self, function: str, params: dict[str, Any]) -> None:
        super().validate(function, params)
        validate(function, params)

    def build_inputs(self, function: str, params: dict[str, Any]) -> Inputs:
        return build_inputs(function, params)

    def expected(self, function: str, inputs: Inputs) -> tuple[torch.Tensor, ...]:
        return expected(function, inputs.args)

    def memory_budget(self, function: str, inputs: Inputs) -> int | None:
        return memory_budget(function, inputs.args) if function == "ring_attention" else None

    def span(self, function: str, inputs: Inputs) -> int:
        return total_key_length(function, inputs.args)

    def suites(self) -> dict[str, Any]:
        sys.path.insert(0, str(Path(__file__).parent))
        try:
            from ring import RingSuite
        finally:
            sys.path.remove(str(Path(__file__).parent))
        return {"ring": RingSuite(self, Path(__file__).parent)}


# ---------------------------------------------------------------- validation

def validate(function: str, params: dict[str, Any]) -> None:
    """Raise ValueError naming the first value that is out of range (keys are checked by the base class)."""
    batch = params.get("batch", [])
    if not (isinstance(batch, list) and all(_positive_int(size) for size in batch)):
        raise ValueError(f"batch must be a list of positive integers, not {batch!r}")
    for key in ("lq", "d", "dv", "lk"):
        if key in params and not _positive_int(params[key]):
            raise ValueError(f"{key} must be a positive integer, not {params[key]!r}")
    if params.get("layout", "contiguous") not in ("contiguous", "transposed"):
        raise ValueError("layout must be 'contiguous' or 'transposed'")
    if "memory" in _as_list(params.get("audit", [])):
        if function != "ring_attention":
            raise ValueError(f"audit 'memory' applies to ring_attention only, not {function}")
        _check_audit_length(params)
    if function == "ring_attention" and "values" not in params:
        lengths = chunk_lengths(params, torch.Generator().manual_seed(0))
        shifts = params.get("chunk_shift")
        if shifts is not None and len(shifts) != len(lengths):
            raise ValueError(f"chunk_shift has {len(shifts)} entries for {len(lengths)} chunks")
    if "values" in params:
        build_inputs(function, params)  # explicit values must have consistent shapes


def _check_audit_length(params: dict[str, Any]) -> None:
    """The memory audit explains itself by spotting the total key length in shapes: a prime found nowhere else."""
    lengths = chunk_lengths(params, torch.Generator().manual_seed(int(params.get("seed", 0))))
    total = sum(lengths)
    if total < 2 or any(total % factor == 0 for factor in range(2, math.isqrt(total) + 1)):
        raise ValueError(f"audit memory needs a prime total key length; chunks add up to {total}")
    d = params.get("d", 8)
    others = {"batch": params.get("batch", []), "lq": [params.get("lq", 4)], "d": [d],
              "dv": [params.get("dv", d)], "chunks": lengths}
    for key, sizes in others.items():
        if total in sizes:
            raise ValueError(f"audit memory: {key} also has length {total}, the total key length; "
                             f"a tensor of that size would be flagged although it does not span the keys")


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _as_list(value: Any) -> list:
    return value if isinstance(value, list) else [value]


def chunk_lengths(params: dict[str, Any], generator: torch.Generator) -> list[int]:
    """The split of the key sequence: explicit lengths, a fixed size, or random boundaries."""
    chunks = params.get("chunks", [8])
    if isinstance(chunks, list):
        if not chunks or not all(_positive_int(length) for length in chunks):
            raise ValueError(f"chunks must be a non-empty list of positive lengths, not {chunks!r}")
        return list(chunks)
    if not isinstance(chunks, dict) or not _positive_int(chunks.get("total")):
        raise ValueError("chunks must be a list of lengths or {total: N, size: S} or {total: N, random: K}")
    total = chunks["total"]
    if set(chunks) == {"total", "size"} and _positive_int(chunks["size"]):
        size = chunks["size"]
        return [size] * (total // size) + ([total % size] if total % size else [])
    if set(chunks) == {"total", "random"} and _positive_int(chunks["random"]) and chunks["random"] <= total:
        count = chunks["random"]
        cuts = sorted((torch.randperm(total - 1, generator=generator)[: count - 1] + 1).tolist())
        bounds = [0, *cuts, total]
        return [end - start for start, end in zip(bounds, bounds[1:])]
    raise ValueError(f"chunks {dict(chunks)!r}: use {{total: N, size: S}} or {{total: N, random: K}} with K <= N")


# ---------------------------------------------------------------- inputs

def build_inputs(function: str, params: dict[str, Any]) -> Inputs:
    """Generate (or read) a case's inputs: float64 first, then rounded once to the case dtype."""
    dtype = DTYPES[params.get("dtype", "float64")]
    generator = torch.Generator().manual_seed(int(params.get("seed", 0)))
    layout = params.get("layout", "contiguous")
    if function == "merge_chunk_stats":
        tensors = _merge_inputs(params, generator)
        args = [tensor.to(dtype) for tensor in tensors]
        lq, dv = args[0].shape[-2], args[0].shape[-1]
        summary = f"merge of two states: batch {tuple(args[0].shape[:-2])}, Lq {lq}, Dv {dv}"
        if "max_offset" in params:
            summary += f", max offsets {params['max_offset']}"
    else:
        query, keys, values, lengths = _attention_inputs(function, params, generator)
        query, keys, values = query.to(dtype), keys.to(dtype), values.to(dtype)
        if function == "attention_chunk_stats":
            args = [query, keys, values]
        else:
            args = [query, list(keys.split(lengths, dim=-2)), list(values.split(lengths, dim=-2))]
        summary = (f"query {tuple(query.shape)}, keys {tuple(keys.shape)}, values {tuple(values.shape)}"
                   + (f", chunks {lengths}" if function == "ring_attention" else ""))
    summary += f", {params.get('dtype', 'float64')}"
    if layout == "transposed":
        summary += ", non-contiguous (transposed views)"
    return Inputs(args, summary, layout=layout)


def _attention_inputs(function: str, params: dict[str, Any], generator: torch.Generator):
    values = params.get("values")
    if values is not None:
        query = torch.tensor(values["query"], dtype=torch.float64)
        keys = torch.tensor(values["key"], dtype=torch.float64)
        vals = torch.tensor(values["value"], dtype=torch.float64)
        if query.dim() < 2 or keys.shape[:-1] != vals.shape[:-1] or keys.shape[-1] != query.shape[-1]:
            raise ValueError("values: query (..., Lq, D), key (..., Lk, D), value (..., Lk, Dv) do not fit")
        lengths = params.get("chunks", [keys.shape[-2]]) if function == "ring_attention" else [keys.shape[-2]]
        if sum(lengths) != keys.shape[-2]:
            raise ValueError(f"chunks {lengths} do not add up to the {keys.shape[-2]} keys given")
        return query, keys, vals, lengths
    batch = list(params.get("batch", []))
    lq, d = params.get("lq", 4), params.get("d", 8)
    dv = params.get("dv", d)
    lengths = chunk_lengths(params, generator) if function == "ring_attention" else [params.get("lk", 8)]
    total = sum(lengths)
    query = torch.randn(*batch, lq, d, generator=generator, dtype=torch.float64) * float(params.get("scale", 1.0))
    keys = _draw([*batch, total, d], generator)
    vals = _draw([*batch, total, dv], generator)
    row = params.get("row_scale")
    if row is not None:
        query[..., int(row["row"]), :] *= float(row["factor"])
    shift = float(params.get("score_shift", 0.0))
    per_chunk = params.get("chunk_shift")
    if shift or per_chunk:
        # Query coordinate 0 is set to 1, so adding s*sqrt(D) to a key's coordinate 0 adds s to its scores.
        query[..., 0] = 1.0
        key_shift = torch.full((total,), shift, dtype=torch.float64)
        if per_chunk:
            key_shift += torch.tensor([float(s) for s, n in zip(per_chunk, lengths) for _ in range(n)],
                                      dtype=torch.float64)
        keys[..., 0] += key_shift * math.sqrt(d)
    return query, keys, vals, lengths


def _draw(shape: list[int], generator: torch.Generator) -> torch.Tensor:
    """Standard normal float64 numbers; a large tensor's drawn in float32 (drawing is most of a memory case's set-up)."""
    if math.prod(shape) <= WIDE_DRAW_LIMIT:
        return torch.randn(*shape, generator=generator, dtype=torch.float64)
    return torch.randn(*shape, generator=generator, dtype=torch.float32).to(torch.float64)


def _merge_inputs(params: dict[str, Any], generator: torch.Generator) -> list[torch.Tensor]:
    values = params.get("values")
    if values is not None:
        names = OUTPUT_NAMES["merge_chunk_stats"]
        keys = [f"acc_{name}" for name in names] + [f"chunk_{name}" for name in names]
        missing = [key for key in keys if key not in values]
        if missing:
            raise ValueError(f"values needs {', '.join(keys)}; missing {', '.join(missing)}")
        return [torch.tensor(values[key], dtype=torch.float64) for key in keys]
    batch = list(params.get("batch", []))
    lq, dv = params.get("lq", 4), params.get("dv", params.get("d", 8))
    spread = float(params.get("max_spread", 1.0))
    offsets = params.get("max_offset", [0.0, 0.0])

    def state(offset: float) -> list[torch.Tensor]:
        output = torch.randn(*batch, lq, dv, generator=generator, dtype=torch.float64)
        total = 1.0 + 4.0 * torch.rand(*batch, lq, 1, generator=generator, dtype=torch.float64)
        row_max = torch.randn(*batch, lq, 1, generator=generator, dtype=torch.float64) * spread + float(offset)
        return [output, total, row_max]

    acc = state(offsets[0])
    chunk = [tensor.clone() for tensor in acc] if params.get("same_state") else state(offsets[1])
    if params.get("swap"):
        acc, chunk = chunk, acc
    return acc + chunk


# ---------------------------------------------------------------- expected values

def expected(function: str, args: list[Any]) -> tuple[torch.Tensor, ...]:
    """The exact answer, computed in float64 from the (already rounded) inputs."""
    wide = _to_float64(args)
    if function == "attention_chunk_stats":
        return _stats(*wide)
    if function == "merge_chunk_stats":
        acc_output, acc_sum, acc_max, chunk_output, chunk_sum, chunk_max = wide
        new_max = torch.maximum(acc_max, chunk_max)
        acc_scale, chunk_scale = torch.exp(acc_max - new_max), torch.exp(chunk_max - new_max)
        return (acc_output * acc_scale + chunk_output * chunk_scale,
                acc_sum * acc_scale + chunk_sum * chunk_scale, new_max)
    query, key_chunks, value_chunks = wide
    if query.numel() // query.shape[-1] * total_key_length(function, args) <= ANSWER_BLOCK:
        keys, values = torch.cat(key_chunks, dim=-2), torch.cat(value_chunks, dim=-2)
        scores = query @ keys.transpose(-2, -1) / math.sqrt(query.shape[-1])
        return (torch.softmax(scores, dim=-1) @ values,)
    return (_two_pass(query, key_chunks, value_chunks),)


def _two_pass(query: torch.Tensor, key_chunks: list, value_chunks: list) -> torch.Tensor:
    """Softmax attention a block of keys at a time (chunks joined up to ANSWER_BLOCK scores): each row's max first,
    then the sums. The grader's own memory stays near one block where the whole matrix would be hundreds of MiB
    (the memory cases, against a 768 MB autograder); in float64 the answer is the whole matrix's, to rounding."""
    rows = query.numel() // query.shape[-1]
    blocks, start = [], 0
    while start < len(key_chunks):
        end, keys = start, 0
        while end < len(key_chunks) and (end == start or (keys + key_chunks[end].shape[-2]) * rows <= ANSWER_BLOCK):
            keys += key_chunks[end].shape[-2]
            end += 1
        blocks.append((start, end))
        start = end
    scale = math.sqrt(query.shape[-1])

    def scores(start: int, end: int) -> torch.Tensor:
        return query @ torch.cat(key_chunks[start:end], dim=-2).transpose(-2, -1) / scale

    top = torch.stack([scores(*block).amax(dim=-1, keepdim=True) for block in blocks]).amax(dim=0)
    output, total = 0, 0
    for start, end in blocks:
        weights = torch.exp(scores(start, end) - top)
        output = output + weights @ torch.cat(value_chunks[start:end], dim=-2)
        total = total + weights.sum(dim=-1, keepdim=True)
    return output / total


def _stats(query: torch.Tensor, keys: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, ...]:
    scores = query @ keys.transpose(-2, -1) / math.sqrt(query.shape[-1])
    row_max = scores.amax(dim=-1, keepdim=True)
    weights = torch.exp(scores - row_max)
    return weights @ values, weights.sum(dim=-1, keepdim=True), row_max


def _to_float64(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(torch.float64)
    return [_to_float64(item) for item in value]


def total_key_length(function: str, args: list[Any]) -> int:
    """The length of the whole key sequence a case attends over."""
    if function == "ring_attention":
        return sum(chunk.shape[-2] for chunk in args[1])
    if function == "attention_chunk_stats":
        return args[1].shape[-2]
    return 0


def memory_budget(function: str, args: list[Any]) -> int:
    """Memory a ring_attention call may hold at once, above torch's own, as the kernel measures it.

    budget = 16 MiB                                        -- the learner's working objects, allocator slack
           + 2 x the query and the largest key and value chunk -- a working copy of what one step uses (a cast)
           + 4 x one score block of the largest chunk      -- scores, weights and their temporaries, in float64
           + 2 x each chunk's output and statistics        -- keeping those for a second pass is fine
    Not allowed: anything that grows with the whole sequence at once, such as the scores against every key
    (the full attention matrix, or every chunk's score block kept alive) or every key and value gathered
    in one place: on the audited cases each is several times this budget.
    """
    query, key_chunks, value_chunks = args
    rows = query.numel() // query.shape[-1]
    step = (query.numel() + max(chunk.numel() for chunk in key_chunks)
            + max(chunk.numel() for chunk in value_chunks)) * 8
    block = rows * max(chunk.shape[-2] for chunk in key_chunks) * 8
    per_chunk = rows * (value_chunks[0].shape[-1] + 2) * 8
    return (16 << 20) + 2 * step + 4 * block + 2 * per_chunk * len(key_chunks)
