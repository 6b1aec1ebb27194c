"""Two graders side by side on one machine, many times: neither ever hangs, and neither's verdicts cross the other's.

Usage, from the repository root with the package installed:
    python benchmarks/side_by_side.py [--times 20] [--levels auto,off] [--timeout 180] [--json PATH]

Each repetition starts two grader commands at once, each running a distributed suite on a private copy of
the course: exercise 06's submit (its 2-rank tensor-parallel suite) and exercise 07's run with `--ring 2`.
One of the two files is right and the other a catalogued mistake (06: the all-reduce forgotten; 07: chunk
statistics added without rescaling), swapped every repetition. A grader that has not finished after
`--timeout` seconds has hung; one whose results (each case's outcome and the mistake named, the exit status)
differ from what the same file got graded alone, at the same level, has crossed. Levels:

  auto  what this machine allows (namespaces where it has them: each sandbox its own loopback and ports)
  off   GRADER_SANDBOX=off: no namespaces, the machine's own loopback and ports, the ranks meeting through a
        file in their sandbox's folder (a container without namespaces grades so)

Exit status 0 when every repetition at every level was clean (neither hung nor crossed).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TP, RING = "06-tensor-parallel-matmul", "07-ring-attention"
FILES = {  # (exercise, right or mistake) -> the file graded, in the course copy
    (TP, "right"): f"solutions/{TP}/tensor_parallel.py", (TP, "mistake"): f"mistakes/{TP}/forgets_the_all_reduce.py",
    (RING, "right"): f"solutions/{RING}/ring_attention.py", (RING, "mistake"): f"mistakes/{RING}/add_without_rescale.py",
}
LEVELS = {"auto": {}, "off": {"GRADER_SANDBOX": "off"}}


def course_copy(folder: Path) -> Path:
    """Exercises 06 and 07 with their solutions and hints, a course file of their own, and the two mistakes written
    as submissions (the reference with the mistake's definitions after it)."""
    sys.path.insert(0, str(REPO))
    from grader.course.mistakes import as_submission

    for name in (TP, RING):
        for part in ("exercises", "solutions", "hints"):
            shutil.copytree(REPO / part / name, folder / part / name, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "exercises" / "course.yaml").write_text(f"course: side by side\nexercises:\n  - exercises/{TP}\n"
                                                      f"  - exercises/{RING}\n")
    for (name, kind), file in FILES.items():
        if kind == "mistake":
            reference = next(path for path in (folder / "solutions" / name).glob("*.py"))
            (folder / file).parent.mkdir(parents=True, exist_ok=True)
            written = as_submission(folder / "solutions" / name / "mistakes" / Path(file).name, reference,
                                    (folder / file).parent)
            assert written == folder / file
    return folder


def command(course: Path, name: str, kind: str, out: Path) -> list[str]:
    verb = ["submit", name] if name == TP else ["run", name, "--ring", "2"]
    return [sys.executable, "-m", "grader", *verb, "--file", str(course / FILES[(name, kind)]), "--device", "cpu",
            "--no-record", "--json", str(out)]


def verdict(status: int, results: Path) -> list:
    """What must not change whoever else grades at the same time: the exit status and every case's outcome and
    diagnosis."""
    try:
        tests = json.loads(results.read_text())["tests"]
    except (OSError, ValueError, KeyError):
        return [status, "no results file"]
    found = sorted((test["extra_data"]["case"], test["extra_data"]["outcome"],
                    (test["extra_data"].get("diagnosis") or {}).get("mistake")) for test in tests)
    return [status, found]


def start(course: Path, env: dict[str, str], name: str, kind: str, out: Path) -> subprocess.Popen:
    return subprocess.Popen(command(course, name, kind, out), cwd=course, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)


def finish(process: subprocess.Popen, timeout: float) -> tuple[int | None, str]:
    """Its exit status (None: hung, and killed with everything in its session) and what it printed."""
    try:
        output, _ = process.communicate(timeout=timeout)
        return process.returncode, output.decode(errors="replace")
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return None, output.decode(errors="replace")


def level_run(course: Path, level: str, times: int, timeout: float, say) -> dict:
    env = {**os.environ, **LEVELS[level], "GRADER_ROOT": str(course), "NO_COLOR": "1"}
    scratch = course / ".side_by_side"
    scratch.mkdir(exist_ok=True)
    alone = {}
    for key in FILES:
        out = scratch / f"alone-{key[0]}-{key[1]}.json"
        status, _ = finish(start(course, env, *key, out), timeout)
        alone[key] = verdict(status, out)
    say(f"{level}: graded alone: " + "; ".join(f"{name[:2]} {kind} exit {found[0]}" for (name, kind), found in
                                               alone.items()))
    hung = crossed = 0
    slowest = 0.0
    for repetition in range(times):
        pair = [(TP, "right"), (RING, "mistake")] if repetition % 2 == 0 else [(TP, "mistake"), (RING, "right")]
        outs = [scratch / f"{repetition}-{index}.json" for index in range(2)]
        started = time.monotonic()
        processes = [start(course, env, *key, out) for key, out in zip(pair, outs)]
        words = []
        for key, process, out in zip(pair, processes, outs):
            status, output = finish(process, max(timeout - (time.monotonic() - started), 1.0))
            seconds = time.monotonic() - started
            slowest = max(slowest, seconds)
            if status is None:
                hung += 1
                words.append(f"{key[0][:2]} {key[1]} HUNG after {seconds:.0f} s: {output.strip()[-300:]!r}")
            elif verdict(status, out) != alone[key]:
                crossed += 1
                words.append(f"{key[0][:2]} {key[1]} CROSSED: {verdict(status, out)} against {alone[key]}; it said: "
                             f"{output.strip()[-500:]!r}")
            else:
                words.append(f"{key[0][:2]} {key[1]} ok ({seconds:.1f} s)")
        say(f"{level} {repetition + 1}/{times}: " + " | ".join(words))
    return {"level": level, "times": times, "hung": hung, "crossed": crossed, "slowest_seconds": round(slowest, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--times", type=int, default=20)
    parser.add_argument("--levels", default="auto,off", help="comma-separated: auto, off")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds a grader may take before it hung")
    parser.add_argument("--json", type=Path, help="write the summary there too")
    args = parser.parse_args()
    levels = [level for level in args.levels.split(",") if level]
    unknown = [level for level in levels if level not in LEVELS]
    if unknown:
        parser.error(f"unknown level {unknown[0]} (known: {', '.join(LEVELS)})")
    folder = Path(tempfile.mkdtemp(prefix="side-by-side-"))
    try:
        course = course_copy(folder / "course")
        summary = [level_run(course, level, args.times, args.timeout, lambda line: print(line, flush=True))
                   for level in levels]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    for found in summary:
        print(f"{found['level']}: {found['times']} times side by side, {found['hung']} hung, {found['crossed']} "
              f"crossed; the slowest grader took {found['slowest_seconds']} s")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1) + "\n")
    return 0 if all(not found["hung"] and not found["crossed"] for found in summary) else 1


if __name__ == "__main__":
    sys.exit(main())
