"""The interface between the grader and an exercise: subclass `Checker` in the exercise's own checker.py.

The grader knows no exercise. An exercise folder holds a `checker.py` that defines one subclass of
`Checker`, saying for each function the learner writes its argument and output names and which
case keys it takes, how to build a case's inputs from those keys, and the exact (float64) answer.
The grader does everything else: runs the learner's function in a sandbox, compares what comes
back within the exercise's tolerances, judges the rules the exercise declares, and reports.

A minimal checker, for `softmax(x, dim)` (an exercise imports these names from `grader.api`):

    import torch
    from grader.api import DTYPES, Checker, Function, Inputs

    class SoftmaxChecker(Checker):
        functions = {"softmax": Function(arguments=("x", "dim"), outputs=("output",),
                                         keys={"shape", "dim", "dtype", "seed"})}

        def build_inputs(self, function, params):
            generator = torch.Generator().manual_seed(int(params.get("seed", 0)))
            x = torch.randn(*params["shape"], generator=generator, dtype=torch.float64)
            dtype = DTYPES[params.get("dtype", "float64")]
            return Inputs([x.to(dtype), params["dim"]], summary=f"x {tuple(x.shape)}, {dtype}")

        def expected(self, function, inputs):
            x, dim = inputs.args
            return (torch.softmax(x.to(torch.float64), dim),)

Everything a checker computes runs in the grader's own process: it is trusted code, and it is
loaded, with the rest of what the grader trusts, before any learner code runs.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from grader.course.yamlfile import Key, KeyTable
from grader.errors import ConfigError

# The dtypes a case's `dtype` names, by name.
DTYPES = {"float64": torch.float64, "float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
HALF_DTYPES = (torch.bfloat16, torch.float16)  # the half precisions, whose bound is the reference's own error


@dataclass(frozen=True)
class Function:
    """One function the learner writes: its argument names, its output names, the case keys it takes, and
    which of the learner's other functions it is meant to call (`uses`), so that a report can say that its
    failures may follow from theirs."""

    arguments: tuple[str, ...]  # its arguments' names, in order, for messages ("modified its input x")
    outputs: tuple[str, ...]  # one name: a single tensor is returned; several: a tuple of that many tensors
    keys: frozenset[str] = frozenset()  # the case keys it takes beside every case's own (grader/course/cases.py)
    uses: tuple[str, ...] = ()  # the learner's other functions it calls, whose failures may explain its own

    def __post_init__(self) -> None:
        object.__setattr__(self, "arguments", tuple(self.arguments))
        object.__setattr__(self, "outputs", tuple(self.outputs))
        object.__setattr__(self, "keys", frozenset(self.keys))
        object.__setattr__(self, "uses", tuple(self.uses))


@dataclass
class Inputs:
    """A case's arguments, as the learner's function receives them, and how to describe them."""

    args: list[Any]          # tensors, lists or tuples of tensors, ints, floats, bools, None
    summary: str = ""        # shown with a failing visible case: shapes, sizes, dtype
    dtype: torch.dtype | None = None  # the dtype every output must have; default: the first tensor argument's
    layout: str = "contiguous"        # or "transposed": each tensor stored with its last two dims swapped

    def output_dtype(self) -> torch.dtype:
        """The dtype every output must have: `dtype`, else the first tensor argument's."""
        if self.dtype is not None:
            return self.dtype
        return next(tensors(self.args)).dtype


def tensors(value: Any):
    """Every tensor in a nested argument list, in order."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from tensors(item)


@dataclass(frozen=True)
class Tolerance:
    """How close an output must be to the float64 answer.

    float64 and float32: at most this fraction of the largest expected value. bfloat16 and float16
    (FlashAttention's rule): `half_factor` times the reference solution's own error in the same
    dtype on the same inputs, plus the rounding of the exact answer and one unit in the last place.
    """

    float64: float = 1e-9
    float32: float = 1e-4
    half_factor: float = 2.0

    # What a case may set (`tolerance: {float32: 2e-4}`), so that no case quietly stops testing anything.
    LIMITS = {"float64": (1e-15, 1e-6), "float32": (1e-8, 1e-2), "half_factor": (1.0, 8.0)}

    def override(self, changes: Any) -> "Tolerance":
        """This tolerance with a case's changes; ValueError for an unknown key or a value out of limits."""
        if not isinstance(changes, dict):
            raise ValueError(f"tolerance must be a mapping such as {{float32: 2e-4}}, not {changes!r}")
        values = {"float64": self.float64, "float32": self.float32, "half_factor": self.half_factor}
        for key, value in changes.items():
            if key not in self.LIMITS:
                raise ValueError(f"tolerance has no key {key!r} (known: {', '.join(self.LIMITS)})")
            low, high = self.LIMITS[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
                raise ValueError(f"tolerance {key} must be a number from {low:g} to {high:g}, not {value!r}")
            values[key] = float(value)
        return Tolerance(**values)


_MEANINGS = {"float64": "the bound in float64, as a fraction of the largest expected value",
             "float32": "the bound in float32, as a fraction of the largest expected value",
             "half_factor": "in bfloat16 and float16: this many times the reference's own error, plus the rounding"}
# A case's `tolerance` keys, each within Tolerance.LIMITS, its default the checker's (Tolerance's unless it says).
TOLERANCE = KeyTable("a case's tolerance", tuple(
    Key(name, f"number from {low:g} to {high:g}", _MEANINGS[name], getattr(Tolerance, name), "the checker's "
        f"({getattr(Tolerance, name):g} unless it sets its own)") for name, (low, high) in Tolerance.LIMITS.items()))


class Checker:
    """Subclass this in an exercise's checker.py; override `build_inputs` and `expected` at least."""

    functions: dict[str, Function] = {}  # each function the learner writes, by name
    tolerance: Tolerance = Tolerance()   # the error bound per dtype, which a case may loosen or tighten
    span_unit: str = ""                  # what `span` counts, for messages: "keys"
    rule_reasons: dict[str, str] = {}    # the exercise's own words on a broken rule, by kind: "inputs-modified",
                                         # "forbidden", "materialization", "peak-memory"

    def validate(self, function: str, params: dict[str, Any]) -> None:
        """Raise ValueError naming the first case key that is unknown or out of range.

        The default checks the keys against the function's `keys` and a `dtype` against the four
        float dtypes; override it (and call this one) to check values too.
        """
        allowed = self.functions[function].keys
        unknown = sorted(set(params) - allowed - {"audit"})  # audit is the grader's, shown for checks like span
        if unknown:
            raise ValueError(f"unknown key {unknown[0]!r} for {function} (allowed: {', '.join(sorted(allowed))})")
        if "dtype" in params and params["dtype"] not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, not {params['dtype']!r}")

    def build_inputs(self, function: str, params: dict[str, Any]) -> Inputs:
        """A case's inputs, generated from its keys (a seed, sizes, a dtype)."""
        raise NotImplementedError

    def expected(self, function: str, inputs: Inputs) -> tuple[torch.Tensor, ...]:
        """The exact answer, one float64 tensor per output, computed from the (already rounded) inputs."""
        raise NotImplementedError

    def baseline(self, function: str, inputs: Inputs, reference: Any) -> tuple[torch.Tensor, ...] | None:
        """For half precision: the reference solution's own answer in the same dtype (what it can achieve)."""
        if inputs.output_dtype() not in HALF_DTYPES:
            return None
        copies = [_clone(arg) for arg in inputs.args]
        result = getattr(reference, function)(*copies)
        return result if isinstance(result, tuple) else (result,)

    def output_shapes(self, function: str, inputs: Inputs) -> tuple[tuple[int, ...], ...] | None:
        """The shape of each output on these inputs, that `expected` is held to before it judges anyone; None: not
        declared."""
        return None

    def memory_budget(self, function: str, inputs: Inputs) -> int | None:
        """Bytes a call may hold at once above torch's own, for cases with `audit: [memory]`; None: no such rule."""
        return None

    def span(self, function: str, inputs: Inputs) -> int:
        """A size no tensor in a correct call has on any dimension (the whole key sequence, say); 0: none.

        Only explains a memory failure ("it built tensors spanning all N keys"); never decides one.
        """
        return 0

    def input_names(self, function: str, inputs: Inputs) -> list[str]:
        """A name for each input tensor, in order, for messages: `key_chunks[0]` for a list argument."""
        names = []
        for name, arg in zip(self.functions[function].arguments, inputs.args):
            if isinstance(arg, torch.Tensor):
                names.append(name)
            elif isinstance(arg, (list, tuple)):
                names += [f"{name}[{index}]" for index, item in enumerate(arg) if isinstance(item, torch.Tensor)]
        return names

    def suites(self) -> dict[str, Any]:
        """Extra suites by option name, such as {"ring": a DistributedSuite}: `grader run --ring N` runs it."""
        return {}


def _clone(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_clone(item) for item in value)
    return value


def load_checker(path: Path) -> Checker:
    """The one Checker subclass an exercise's checker.py defines, instantiated; ConfigError if there is none."""
    if not path.is_file():
        raise ConfigError("the exercise's checker is missing", path)
    spec = importlib.util.spec_from_file_location(f"checker_{path.parent.name.replace('-', '_')}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # noqa: BLE001  (instructor code: say where it broke, in one line)
        from grader.course.blame import course_frame, where

        # Where it broke, from the exercise's folder: the checker's own line, or another file it imported.
        found, described = course_frame(error, path.parent), where(error, path.parent)
        if found and found[0].resolve() == path.resolve():
            raise ConfigError(f"the checker could not be loaded: {described.split(': ', 1)[1]}", path, found[1]) \
                from None
        raise ConfigError(f"the checker could not be loaded: {described}", path) from None
    found = [value for value in vars(module).values()
             if isinstance(value, type) and issubclass(value, Checker) and value is not Checker
             and value.__module__ == module.__name__]
    if len(found) != 1:
        raise ConfigError(f"the checker must define exactly one subclass of grader.course.checker.Checker, "
                          f"found {len(found)}", path)
    checker = found[0]()
    if not checker.functions:
        raise ConfigError("the checker names no functions (its `functions` is empty)", path)
    for name, function in checker.functions.items():
        unknown = [used for used in function.uses if used not in checker.functions or used == name]
        if unknown:
            raise ConfigError(f"{name} uses {unknown[0]!r}, which is not another of the checker's functions", path)
    return checker


def laid_out(args: list[Any], layout: str) -> list[Any]:
    """Inputs as the learner receives them: contiguous, or the same values stored transposed."""
    import torch

    def one(value: Any) -> Any:
        if isinstance(value, list):
            return [one(item) for item in value]
        if isinstance(value, torch.Tensor) and layout == "transposed" and value.dim() >= 2:
            # Same values, but stored transposed: strides that a learner's code must not assume.
            return value.transpose(-2, -1).contiguous().transpose(-2, -1)
        return value

    return [one(value) for value in args]
