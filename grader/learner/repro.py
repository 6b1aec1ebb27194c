"""`grader repro`: one example's inputs, saved as the grader builds them, and a script calling the learner's function."""

from __future__ import annotations

import re
from pathlib import Path

from grader.course import examples
from grader.course.exercise import Exercise
from grader.inert import inert
from grader.learner.state import STATE_DIR, StateError

SCRIPT = '''\
# Example {case} of {exercise}{about}
# Written by `grader repro`, with the inputs in {data} built exactly as the grader builds them:
#     {python} -i {script}       then look at inputs, result and expected
#     {python} -m pdb {script}   to step into your function
# ({python}: the Python the grader runs in, which has torch.)
# The verdict, with the exercise's tolerance and rules: grader run {exercise} -k {case}
# This script runs your code directly in this Python, with no sandbox and no limits, on purpose: it is a
# tool for debugging your own code, not a grading (grader run and grader submit grade in a sandbox).
import importlib.util
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]  # the course: this script is in ROOT/{folder}/
LEARNER = {learner}

# Your file, imported by its path as the grader imports it (its own folder first on the import path).
sys.path.insert(0, str(LEARNER.parent))
spec = importlib.util.spec_from_file_location({module!r}, LEARNER)
learner = importlib.util.module_from_spec(spec)
spec.loader.exec_module(learner)

saved = torch.load(Path(__file__).with_suffix(".pt"), weights_only=True)
inputs = saved["inputs"]      # {arguments}
expected = saved["expected"]  # the exact answer, in float64: {outputs}
print("inputs:", saved["summary"])

result = {call}(*inputs)
print("result:", result)

outputs = result if isinstance(result, tuple) else (result,)
if len(outputs) != len(expected):
    print(f"returned {{len(outputs)}} values; the exercise expects {{len(expected)}}")
for name, output, answer in zip(saved["outputs"], outputs, expected):
    if not isinstance(output, torch.Tensor):
        print(f"{{name}}: a {{type(output).__name__}}, not a tensor")
    elif output.shape != answer.shape:
        print(f"{{name}}: shape {{tuple(output.shape)}}, {{output.dtype}}; expected shape {{tuple(answer.shape)}}")
    else:
        error = (output.detach().cpu().double() - answer).abs().max().item() if answer.numel() else 0.0
        print(f"{{name}}: shape {{tuple(output.shape)}}, {{output.dtype}}; largest error against the exact answer "
              f"{{error:.3g}}")
'''


def write(exercise: Exercise, name: str, learner: Path) -> tuple[Path, Path]:
    """Write .grader/repro/<case>.pt (the inputs and the exact answer) and .grader/repro/<case>.py; both paths.

    Only an example can be written out: a hidden case's name is refused as an unknown one is, before torch is
    imported wherever the examples file says so."""
    examples.check_name_at_once(exercise, name)
    import torch

    from grader.course.checker import laid_out
    from grader.grading.case import Judge
    from grader.grading.pipeline import load_reference

    checker = examples.examples_checker(exercise)
    case = examples.find(exercise, name, checker)
    # The judge's own preparation: the same inputs, in the same layout, that grading hands the learner's function.
    # A learner bundle ships no reference: its stored examples need none.
    reference = None if exercise.precomputed is not None else load_reference(exercise)
    inputs, expected, _ = Judge(exercise, checker, learner.name, reference).prepare(case)
    function = checker.functions[case.function]
    folder = exercise.root / STATE_DIR / "repro"
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", case.name).lstrip(".") or "case"
    data, script = folder / f"{stem}.pt", folder / f"{stem}.py"
    text = SCRIPT.format(
        case=_comment(case.name), exercise=_comment(exercise.name), data=data.name,
        about=f": {_comment(case.about)}" if case.about else "", folder=f"{STATE_DIR}/repro",
        script=_shown(script, exercise.root), python=python_command(exercise.root), learner=_path_code(learner, exercise.root), module=learner.stem,
        arguments=", ".join(function.arguments), outputs=", ".join(function.outputs),
        call=f"learner.{case.function}" if case.function.isidentifier() else f"getattr(learner, {case.function!r})")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        torch.save({"function": case.function, "outputs": list(function.outputs), "summary": inputs.summary,
                    "inputs": laid_out(inputs.args, inputs.layout), "expected": list(expected)}, data)
        script.write_text(text, encoding="utf-8")
    except OSError as error:
        raise StateError(f"{_shown(folder, exercise.root)} could not be written ({error.strerror or error})") \
            from None
    return script, data


def python_command(base: Path | None = None) -> str:
    """How to start the Python the grader runs in, which has torch: `python` where the shell's python is this one
    (an activated virtual environment), else this interpreter's path (from `base`, or the current folder)."""
    import os
    import shlex
    import shutil
    import sys

    executable = Path(sys.executable).absolute()  # not resolved: a venv's python is a link to the system's
    found = shutil.which("python")
    if found and Path(found).absolute().parent == executable.parent:
        return "python"
    relative = os.path.relpath(executable, base or Path.cwd())
    if relative.startswith(".."):
        return shlex.quote(str(executable))
    return shlex.quote(relative if os.sep in relative else f".{os.sep}{relative}")  # `python` alone: the shell's


def _comment(text: str) -> str:
    """Course text on one line of a comment: nothing in it can end the comment or reach the terminal raw."""
    return " ".join(inert(text).split())


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def _path_code(path: Path, root: Path) -> str:
    """The learner's file as the script names it: from the course root when it is inside, so the checkout may move."""
    try:
        return f"ROOT / {path.relative_to(root).as_posix()!r}"
    except ValueError:
        return f"Path({str(path)!r})"
