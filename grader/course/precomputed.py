"""A learner bundle's examples stored whole (inputs, answers, baselines, bounds), and the Checker that serves them."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from grader.channel import wire
from grader.course.cases import Case
from grader.course.checker import Checker, Function, Inputs, Tolerance
from grader.errors import ConfigError

FORMAT = "grader-precomputed-examples/1"
MAX_FILE_BYTES = 256 << 20  # examples are small; a bound keeps a damaged file from filling memory
SPECIAL_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


# ---------------------------------------------------------------- writing (`grader export learner`)

def encode_examples(exercise: str, checker: Checker, judge: Any, cases: list[Case]) -> bytes:
    """The examples as wire.py's message: a JSON header and raw tensor bytes; never pickle.

    Inputs, answers and baselines come from `judge.prepare`, the very values a course run judges with.
    """
    tensors: list[torch.Tensor] = []
    records = []
    for case in cases:
        inputs, expected, baseline = judge.prepare(case)
        tolerance = judge.tolerance(case)
        records.append({
            "name": case.name, "function": case.function, "about": case.about, "time_limit": case.time_limit,
            "audit": list(case.audit), "points": case.points, "visibility": case.visibility,
            "required": case.required, "nonfinite_answer": case.nonfinite_answer,
            "inputs": {"args": _tree(inputs.args, tensors), "summary": inputs.summary, "layout": inputs.layout,
                       "dtype": wire.dtype_name(inputs.output_dtype())},
            "input_names": checker.input_names(case.function, inputs),
            "expected": _tree(list(expected), tensors),
            "baseline": None if baseline is None else _tree(list(baseline), tensors),
            "tolerance": {"float64": tolerance.float64, "float32": tolerance.float32,
                          "half_factor": tolerance.half_factor},
            "memory_budget": checker.memory_budget(case.function, inputs) if "memory" in case.audit else None,
            "span": checker.span(case.function, inputs)})
    body = {"format": FORMAT, "exercise": exercise, "span_unit": checker.span_unit,
            "rule_reasons": dict(checker.rule_reasons),
            "tolerance": {"float64": checker.tolerance.float64, "float32": checker.tolerance.float32,
                          "half_factor": checker.tolerance.half_factor},
            "functions": {name: {"arguments": list(spec.arguments), "outputs": list(spec.outputs),
                                 "uses": list(spec.uses)} for name, spec in checker.functions.items()},
            "cases": records}
    return wire.encode(body, tensors)


def _tree(value: Any, tensors: list[torch.Tensor]) -> Any:
    """An argument as JSON: a tensor by its position in `tensors`, tuples marked, non-finite floats spelled out."""
    if isinstance(value, torch.Tensor):
        tensors.append(value)
        return {"tensor": len(tensors) - 1}
    if isinstance(value, tuple):
        return {"tuple": [_tree(item, tensors) for item in value]}
    if isinstance(value, list):
        return [_tree(item, tensors) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": str(value)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"an argument of type {type(value).__name__} cannot be stored")


# ---------------------------------------------------------------- reading (a bundle's `grader run`)

@dataclass
class StoredInputs(Inputs):
    """A case's inputs as stored, with the name of the case they belong to."""

    case: str = ""


@dataclass
class StoredCase:
    """Everything judging one example needs, as `grader export learner` computed it in the course."""

    case: Case
    inputs: StoredInputs
    input_names: list[str]
    expected: tuple[torch.Tensor, ...]
    baseline: tuple[torch.Tensor, ...] | None
    memory_budget: int | None
    span: int


class PrecomputedChecker(Checker):
    """Serves a bundle's stored examples: what the course's checker and reference computed, read back."""

    def __init__(self, path: Path, body: dict[str, Any], tensors: list[torch.Tensor]) -> None:
        # `uses` only names which failures may follow from which; a bundle written before it had none.
        self.functions = {name: Function(spec["arguments"], spec["outputs"], uses=spec.get("uses", ()))
                          for name, spec in body["functions"].items()}
        self.tolerance = Tolerance(**body["tolerance"])
        self.span_unit = str(body["span_unit"])
        self.rule_reasons = {str(kind): str(text) for kind, text in body["rule_reasons"].items()}
        self.stored: dict[str, StoredCase] = {}
        for number, record in enumerate(body["cases"], start=1):
            stored = _stored_case(record, tensors, f"{path}:{number}", self.tolerance)
            if stored.case.function not in self.functions or stored.case.name in self.stored:
                raise ValueError(f"case {stored.case.name!r} names an unknown function or is stored twice")
            self.stored[stored.case.name] = stored

    def cases(self) -> list[Case]:
        """The stored examples, in the order the course's examples file gives them."""
        return [stored.case for stored in self.stored.values()]

    def build_inputs(self, function: str, params: dict[str, Any]) -> Inputs:
        return self.stored[params["case"]].inputs

    def expected(self, function: str, inputs: Inputs) -> tuple[torch.Tensor, ...]:
        return self.stored[inputs.case].expected

    def baseline(self, function: str, inputs: Inputs, reference: Any) -> tuple[torch.Tensor, ...] | None:
        return self.stored[inputs.case].baseline  # no reference solution in a bundle: its answer was stored

    def memory_budget(self, function: str, inputs: Inputs) -> int | None:
        return self.stored[inputs.case].memory_budget

    def span(self, function: str, inputs: Inputs) -> int:
        return self.stored[inputs.case].span

    def input_names(self, function: str, inputs: Inputs) -> list[str]:
        return list(self.stored[inputs.case].input_names)


def _stored_case(record: dict[str, Any], tensors: list[torch.Tensor], source: str, base: Tolerance) -> StoredCase:
    name = str(record["name"])
    resolved = {key: float(record["tolerance"][key]) for key in ("float64", "float32", "half_factor")}
    # The case keeps only what it changed: the judge resolves it against the exercise's tolerance again.
    changes = {key: value for key, value in resolved.items() if value != getattr(base, key)}
    time_limit = record["time_limit"]
    case = Case(name, "examples", str(record["function"]), str(record["about"]), {"case": name},
                None if time_limit is None else float(time_limit), source, tuple(map(str, record["audit"])),
                float(record["points"]), str(record["visibility"]), bool(record["required"]), changes,
                bool(record.get("nonfinite_answer", False)))
    stored = record["inputs"]
    inputs = StoredInputs(_untree(stored["args"], tensors), str(stored["summary"]),
                          wire.dtype_from_name(stored["dtype"]), str(stored["layout"]), case=name)
    baseline = record["baseline"]
    budget = record["memory_budget"]
    return StoredCase(case, inputs, [str(item) for item in record["input_names"]],
                      tuple(_untree(record["expected"], tensors)),
                      None if baseline is None else tuple(_untree(baseline, tensors)),
                      None if budget is None else int(budget), int(record["span"]))


def _untree(value: Any, tensors: list[torch.Tensor]) -> Any:
    if isinstance(value, dict):
        if set(value) == {"tensor"}:
            return tensors[value["tensor"]]
        if set(value) == {"tuple"}:
            return tuple(_untree(item, tensors) for item in value["tuple"])
        if set(value) == {"float"}:
            return SPECIAL_FLOATS[value["float"]]
        raise ValueError(f"unknown stored value {sorted(value)}")
    if isinstance(value, list):
        return [_untree(item, tensors) for item in value]
    return value


def load_precomputed(path: Path) -> PrecomputedChecker:
    """The checker serving the examples stored at `path`; a missing or damaged file is one line naming it."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        raise ConfigError(f"the precomputed examples could not be read ({error.strerror or error})", path) from None
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(f"the precomputed examples are over {MAX_FILE_BYTES >> 20} MiB", path)
    try:
        body, received = wire.decode(wire.unframe(data))
        if not isinstance(body, dict) or body.get("format") != FORMAT:
            raise ValueError(f"it is not in the format {FORMAT}")
        return PrecomputedChecker(path, body, [item.tensor for item in received])
    except (wire.BadMessage, ValueError, TypeError, KeyError, IndexError, AttributeError) as error:
        raise ConfigError(f"the precomputed examples are damaged ({type(error).__name__}: {error}); "
                          f"export the bundle again", path) from None
