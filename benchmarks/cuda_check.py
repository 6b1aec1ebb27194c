"""Every CUDA path of the grader, on this machine's own torch: one table of what ran, what it showed, ok or FAILED.

Usage, from the repository root:
    python benchmarks/cuda_check.py [--json PATH]

Nothing is installed and nothing of the checkout changes: the checkout's grader is put on the import path, the
interpreter running this script (and its torch) grades, and every command runs on a private copy of the course in
a temporary folder. Without a CUDA device it says so, names the torch it found, and exits 0. With one, it runs:

  - `grader run` and `grader submit --device cuda` on each exercise's reference and on one catalogued mistake;
  - each exercise's distributed suite with `--ranks N --device cuda`: NCCL where N GPUs are present, else the
    grader's own fallback (gloo on the CPU), said in the table;
  - a learner file that lists `/dev/nvidia*` and asks torch for its GPUs from inside the sandbox;
  - a learner file that allocates on CUDA without end: it must be reported as out of memory;
  - a learner file whose first case makes a device-side assert (an index past the end, on the GPU): that case is
    an error, the worker is restarted, and the next cases pass.

It takes a minute or two on one GPU; each command is given at most four minutes. Exit status 0 when every check
is ok (or there is no GPU), 1 when one failed, 2 when this interpreter has no torch.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
COMMAND_LIMIT = 240  # seconds for one grader command
# One catalogued mistake per exercise; an exercise not listed here gets the first of its catalogue.
MISTAKES = {"01-stable-softmax": "no_max_subtraction", "06-tensor-parallel-matmul": "forgets_the_all_reduce",
            "07-ring-attention": "add_without_rescale"}
PROBE_EXERCISE, PROBE_CASE = "01-stable-softmax", "tiny-by-hand"  # the learner files below are softmaxes
CUDA_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset")

LISTS_DEVICES = '''import glob
import torch


def softmax(x, dim):
    nodes = ",".join(sorted(glob.glob("/dev/nvidia*")))
    raise RuntimeError(f"CUDA-CHECK nodes=[{nodes}] available={torch.cuda.is_available()} "
                       f"count={torch.cuda.device_count()} on={x.device}")
'''
ALLOCATES_WITHOUT_END = '''import torch

kept = []


def softmax(x, dim):
    while True:  # a GiB at a time, every block kept alive
        kept.append(torch.empty(1 << 30, dtype=torch.uint8, device=x.device))
'''
ASSERTS_ON_DEVICE = '''import torch


def softmax(x, dim):
    if tuple(x.shape) == (1, 3):  # tiny-by-hand: an index past the end, read on the GPU (a device-side assert)
        index = torch.tensor([x.shape[-1] + 5], device=x.device)
        return x[:, index].expand_as(x).clone()
    shifted = x - x.amax(dim=dim, keepdim=True)
    exps = shifted.exp()
    return exps / exps.sum(dim=dim, keepdim=True)
'''


@dataclass
class Check:
    check: str
    ran: str
    showed: str
    ok: bool


@dataclass
class Graded:
    """One grader command: its exit status, what it printed, its results file (None if none was written)."""

    status: int
    out: str
    results: dict | None
    seconds: float

    @property
    def tests(self) -> list[dict]:
        return (self.results or {}).get("tests", [])

    @property
    def notes(self) -> list[str]:
        return (self.results or {}).get("extra_data", {}).get("notes", [])

    def outcomes(self, device: str | None = None) -> dict[str, int]:
        counts: dict[str, int] = {}
        for test in self.tests:
            if device is None or test["extra_data"]["device"] == device:
                outcome = test["extra_data"]["outcome"]
                counts[outcome] = counts.get(outcome, 0) + 1
        return counts

    def said(self) -> str:
        """The command's last line (its count), or why there is none."""
        lines = [line for line in self.out.splitlines() if line.strip()]
        return lines[-1].strip() if lines else f"nothing printed (exit status {self.status})"


class Course:
    """A private copy of the course, and the grader run on it as a learner runs it."""

    def __init__(self, folder: Path) -> None:
        self.root = folder / "course"
        for part in ("exercises", "solutions", "hints"):
            if (REPO / part).is_dir():
                shutil.copytree(REPO / part, self.root / part, ignore=shutil.ignore_patterns("__pycache__", ".grader"))
        self.files = folder / "files"
        self.files.mkdir()
        self.runs = 0
        path = os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH"))))
        self.env = {**os.environ, "GRADER_ROOT": str(self.root), "PYTHONPATH": path, "NO_COLOR": "1",
                    "COLUMNS": "120"}

    def file(self, name: str, text: str) -> Path:
        path = self.files / name
        path.write_text(text, encoding="utf-8")
        return path

    def grader(self, *args: str) -> Graded:
        self.runs += 1
        results = self.files / f"results-{self.runs}.json"
        command = [sys.executable, "-m", "grader", *args, "--no-record", "--json", str(results)]
        started = time.monotonic()
        try:
            done = subprocess.run(command, cwd=self.root, env=self.env, capture_output=True, text=True,
                                  timeout=COMMAND_LIMIT, stdin=subprocess.DEVNULL)
            status, out = done.returncode, done.stdout + done.stderr
        except subprocess.TimeoutExpired as stopped:
            status, out = -1, f"{_text(stopped.stdout)}\nstill running after {COMMAND_LIMIT} s: stopped"
        loaded = json.loads(results.read_text(encoding="utf-8")) if results.is_file() else None
        return Graded(status, out, loaded, time.monotonic() - started)


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else (value or "")


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{number} {outcome}" for outcome, number in sorted(counts.items())) or "no cases"


def _grader_failed(graded: Graded) -> str:
    """Why a command proves nothing (no results, a grader error, not graded, stopped), or ''."""
    if graded.status == -1:
        return graded.said()
    if graded.results is None:
        return f"exit status {graded.status}: {graded.said()}"
    extra = graded.results.get("extra_data", {})
    if extra.get("not_graded"):
        return f"not graded: {extra['not_graded']}"
    if "grader error" in graded.out:
        return next(line for line in graded.out.splitlines() if "grader error" in line)
    return ""


def check_exercise(course: Course, exercise: Any, gpus: int) -> list[Check]:
    """The reference and one mistake, each with `run` and `submit --device cuda`; the distributed suite."""
    checks = []
    reference = str(exercise.solution)
    mistakes = sorted(exercise.mistakes.glob("*.py")) if exercise.mistakes.is_dir() else []
    chosen = next((path for path in mistakes if path.stem == MISTAKES.get(exercise.name)), mistakes[0] if mistakes else None)
    plain_names: set[str] = set()
    files = [("reference", reference)]
    if chosen is not None:
        from grader.course.mistakes import as_submission

        # A mistake file holds only what differs from the reference: composed, it is a whole learner's file.
        files.append((f"mistake {chosen.stem}", str(as_submission(chosen, exercise.solution, course.files))))
    for label, file in files:
        for mode in ("run", "submit"):
            graded = course.grader(mode, exercise.name, "--file", file, "--device", "cuda")
            problem = _grader_failed(graded)
            on_cuda, on_cpu = graded.outcomes("cuda"), graded.outcomes("cpu")
            shown = f"on cuda: {_counts(on_cuda)}" + (f"; on the CPU: {_counts(on_cpu)}" if on_cpu else "")
            diagnoses = sorted({test["extra_data"]["diagnosis"]["mistake"] for test in graded.tests
                                if test["extra_data"].get("diagnosis")})
            if diagnoses:
                shown += f"; named: {', '.join(diagnoses)}"
            if label == "reference":
                ok = not problem and graded.status == 0 and bool(on_cuda) and set(on_cuda) == {"passed"}
                if mode == "run":
                    plain_names = {test["extra_data"]["case"] for test in graded.tests}
            elif mode == "run":  # a mistake may pass every example: what counts is that they ran on CUDA
                ok = not problem and graded.status in (0, 1) and bool(on_cuda) and "crashed" not in on_cuda
            else:
                ok = not problem and graded.status == 1 and graded.results["extra_data"]["status"] != "passed"
            checks.append(Check(f"{exercise.name} {label}", f"{mode} --device cuda ({graded.seconds:.0f} s)",
                                problem or shown, ok))
    if exercise.distributed is not None:
        checks.append(check_distributed(course, exercise, reference, plain_names, gpus))
    return checks


def check_distributed(course: Course, exercise: Any, reference: str, plain_names: set[str], gpus: int) -> Check:
    """The suite that `submit` runs, asked for alone: NCCL on CUDA where a GPU per rank exists."""
    ranks = exercise.distributed.ranks
    graded = course.grader("run", exercise.name, "--file", reference, "--device", "cuda", "--ranks", str(ranks))
    problem = _grader_failed(graded)
    suite = [test for test in graded.tests if test["extra_data"]["case"] not in plain_names]
    devices = {test["extra_data"]["device"] for test in suite}
    outcomes = {test["extra_data"]["outcome"] for test in suite}
    nccl = gpus >= ranks
    backend = f"NCCL on {', '.join(f'cuda:{n}' for n in range(ranks))}" if devices == {"cuda"} else \
        "gloo on the CPU" if devices == {"cpu"} else f"devices {sorted(devices)}"
    fallback = "" if nccl else f" (the grader's fallback: {gpus} GPU for {ranks} ranks)"
    ok = not problem and bool(suite) and outcomes == {"passed"} and devices == ({"cuda"} if nccl else {"cpu"})
    shown = problem or f"{len(suite)} cases, {_counts(Graded(0, '', {'tests': suite}, 0).outcomes())}; {backend}{fallback}"
    return Check(f"{exercise.name} distributed", f"run --ranks {ranks} --device cuda ({graded.seconds:.0f} s)", shown, ok)


def check_device_nodes(course: Course, gpus: int) -> Check:
    expected = sorted(glob.glob("/dev/nvidia[0-9]*")) + [node for node in CUDA_NODES if os.path.exists(node)]
    graded = course.grader("run", PROBE_EXERCISE, "--file", str(course.file("lists_devices.py", LISTS_DEVICES)),
                           "--device", "cuda", "-k", PROBE_CASE)
    found = re.search(r"CUDA-CHECK nodes=\[([^\]]*)\] available=(\w+) count=(\d+) on=(\S+)",
                      "\n".join(test["output"] for test in graded.tests))
    if not found:
        return Check("device nodes in the sandbox", "run: a file listing /dev/nvidia*", _grader_failed(graded)
                     or f"the probe's message was not in the report: {graded.said()}", False)
    inside = [node for node in found.group(1).split(",") if node]
    missing = [node for node in expected if node not in inside]
    hidden = sorted(set(glob.glob("/dev/nvidia*")) - set(inside))
    shown = f"{', '.join(inside) or 'none'}; torch inside sees {found.group(3)} GPU(s), the case ran on {found.group(4)}"
    if missing:
        shown += f"; missing: {', '.join(missing)}"
    elif hidden:
        shown += f"; not shown (unneeded without MIG): {', '.join(hidden)}"
    ok = not missing and found.group(2) == "True" and int(found.group(3)) == gpus and found.group(4).startswith("cuda")
    return Check("device nodes in the sandbox", "run: a file listing /dev/nvidia*", shown, ok)


def check_out_of_memory(course: Course) -> Check:
    graded = course.grader("run", PROBE_EXERCISE, "--file", str(course.file("allocates.py", ALLOCATES_WITHOUT_END)),
                           "--device", "cuda", "-k", PROBE_CASE)
    problem = _grader_failed(graded)
    first = graded.tests[0]["extra_data"] if graded.tests else {}
    shown = problem or f"{first.get('outcome', 'no result')}: {first.get('message', '')}"[:120]
    return Check("CUDA out of memory", f"run: 1 GiB blocks kept without end ({graded.seconds:.0f} s)", shown,
                 not problem and first.get("outcome") == "out of memory")


def check_device_error(course: Course) -> Check:
    graded = course.grader("run", PROBE_EXERCISE, "--file", str(course.file("asserts.py", ASSERTS_ON_DEVICE)),
                           "--device", "cuda")
    problem = _grader_failed(graded)
    results = [test["extra_data"] for test in graded.tests]
    first, rest = (results[0], results[1:]) if results else ({}, [])
    cuda_error = first.get("outcome") == "error" and re.search(r"CUDA error|AcceleratorError|device-side assert",
                                                               "\n".join(test["output"] for test in graded.tests[:1]))
    shown = problem or (f"{first.get('case')}: {first.get('outcome')} ({first.get('message', '')[:80]}); "
                        f"then {_counts(Graded(0, '', {'tests': graded.tests[1:]}, 0).outcomes())}")
    ok = not problem and bool(cuda_error) and bool(rest) and all(result["outcome"] == "passed" for result in rest)
    return Check("CUDA error, then a fresh worker", "run: an index past the end on the GPU in the first case", shown, ok)


def print_table(checks: list[Check], header: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=header, title_justify="left", show_lines=False)
    for column in ("check", "what ran", "what it showed", "result"):
        table.add_column(column, overflow="fold")
    for check in checks:
        table.add_row(check.check, check.ran, check.showed, "ok" if check.ok else "FAILED")
    # Piped into a log, as wide as a long line; on a terminal, its width.
    console = Console(highlight=False, soft_wrap=False)
    if not console.is_terminal:
        console = Console(highlight=False, soft_wrap=False, width=160)
    console.print(table)


def main() -> int:
    parser = argparse.ArgumentParser(description="Run every CUDA path of the grader on this machine's own torch.")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the table as JSON")
    args = parser.parse_args()
    try:
        import torch
    except ImportError as error:
        print(f"No torch for {sys.executable} ({error}): install the course's environment first.")
        return 2
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    found = {"torch": torch.__version__, "cuda": torch.version.cuda, "python": sys.executable, "gpus": gpus,
             "names": [torch.cuda.get_device_name(n) for n in range(gpus)]}
    build = f"built for CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
    started = time.monotonic()
    checks: list[Check] = []
    if not gpus:
        print(f"No GPU here: torch {torch.__version__} ({build}, {sys.executable}) finds no CUDA device "
              f"(torch.cuda.is_available() is False). Nothing to check.")
    else:
        names = ", ".join(sorted(set(found["names"])))
        checks.append(Check("torch and CUDA", "import torch in this interpreter",
                            f"torch {torch.__version__} {build}; {gpus} GPU(s): {names}", True))
        from grader.course.exercise import load_course

        with tempfile.TemporaryDirectory(prefix="grader-cuda-check-") as folder:
            course = Course(Path(folder))
            checks.append(check_device_nodes(course, gpus))
            checks.append(check_out_of_memory(course))
            checks.append(check_device_error(course))
            for exercise in load_course(course.root):
                checks.extend(check_exercise(course, exercise, gpus))
        seconds = time.monotonic() - started
        failed = sum(not check.ok for check in checks)
        print_table(checks, f"CUDA paths of the grader: {len(checks) - failed} ok, {failed} FAILED, {seconds:.0f} s")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"gpu": bool(gpus), **found, "seconds": round(time.monotonic() - started, 1),
                                         "checks": [asdict(check) for check in checks]}, indent=2) + "\n")
    return 0 if all(check.ok for check in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
