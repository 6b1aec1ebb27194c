"""Gradescope's default memory: exercise 07's reference graded by `run_autograder` in a Docker-like container, under a
hard memory limit and without one, in turn; the ratio of the times is what the limit costs.

Usage, as root on Linux, from the repository root with the package installed:
    python benchmarks/gradescope_memory.py [--runs 3] [--limit-mb 768] [--exercise 07] [--python PYTHON]

PYTHON (by default this one) must have torch and the grader's dependencies and be readable by every user, as
Gradescope's setup.sh leaves its Python: the container's learner code runs as a uid of its own, and the grader
grades nothing where that uid could not run its Python (a virtual environment under /root, say). A venv of
Debian's Python does: `/usr/bin/python3 -m venv /tmp/venv && /tmp/venv/bin/pip install torch==2.13.0 -e .`.

The container is tests/fixtures/levels/confine.py's (a mount namespace whose cgroup hierarchies are read-only,
CAP_SYS_ADMIN dropped, namespaces refused by a Docker-like seccomp filter: what Gradescope's gives). Each run
starts with the page cache dropped, as a fresh container's is, in a memory cgroup of its own made here (v1's
memory controller or v2's): with the limit, `limit-mb` for everything in it, as Gradescope sets 768 MB by
default. Printed per run: wall seconds, the score, the cgroup's peak and how often the limit was hit (v1's
failcnt, v2's memory.events `max`); then the median of each and the ratio of the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONFINE = REPO / "tests" / "fixtures" / "levels" / "confine.py"
V1, V2 = Path("/sys/fs/cgroup/memory"), Path("/sys/fs/cgroup")


def autograder(root: Path, exercise: str) -> Path:
    """/autograder as Gradescope lays it out, for the exercise's reference: source/, submission/, results/."""
    sys.path.insert(0, str(REPO))
    from grader.course.exercise import find_exercise

    found = find_exercise(REPO, exercise)
    zip_path = root / "autograder.zip"
    subprocess.run([sys.executable, "-m", "grader", "export", "gradescope", found.name, "-o", str(zip_path)],
                   check=True, cwd=REPO, stdout=subprocess.DEVNULL)
    tree = root / "autograder"
    with zipfile.ZipFile(zip_path) as archive:
        archive.extractall(tree / "source")
    for name in ("setup.sh", "run_autograder"):
        (tree / "source" / name).chmod(0o755)
    (tree / "submission").mkdir(parents=True)
    shutil.copy(found.solution, tree / "submission" / found.stub.name)
    return tree


class MemoryGroup:
    """A memory cgroup of this benchmark's own, with or without a hard limit; removed by `close`."""

    def __init__(self, name: str, limit: int | None) -> None:
        self.v1 = V1.is_dir()
        self.path = (V1 if self.v1 else V2) / name
        self.path.mkdir()
        if limit is not None:
            (self.path / ("memory.limit_in_bytes" if self.v1 else "memory.max")).write_text(str(limit))
        if not self.v1:
            (self.path / "memory.swap.max").write_text("0")

    def enter(self) -> None:
        """Move the calling process in (run in the child before it execs)."""
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def figures(self) -> tuple[int, int]:
        """(peak bytes, times the limit was hit)."""
        if self.v1:
            return (int((self.path / "memory.max_usage_in_bytes").read_text()),
                    int((self.path / "memory.failcnt").read_text()))
        events = dict(line.split() for line in (self.path / "memory.events").read_text().splitlines())
        peak = self.path / "memory.peak"
        return int(peak.read_text()) if peak.exists() else 0, int(events.get("max", 0))

    def anonymous(self) -> dict[str, int]:
        """Anonymous memory of every process in the group now (its proportional share: a page forked processes
        share counts once in all), summed by command name."""
        found: dict[str, int] = {}
        for pid in (self.path / "cgroup.procs").read_text().split():
            try:
                name = Path(f"/proc/{pid}/comm").read_text().strip()
                rollup = Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()
            except OSError:
                continue
            kib = next((int(line.split()[1]) for line in rollup if line.startswith("Pss_Anon:")), 0)
            found[name] = found.get(name, 0) + kib * 1024
        return found

    def close(self) -> None:
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.1)


def one_run(tree: Path, limit: int | None, number: int, python: str) -> dict:
    """Grade the submission once in a fresh memory cgroup, the page cache dropped first."""
    results = tree / "results"
    shutil.rmtree(results, ignore_errors=True)
    results.mkdir()
    subprocess.run(["sync"], check=False)
    Path("/proc/sys/vm/drop_caches").write_text("3\n")
    group = MemoryGroup(f"grader-gradescope-memory-{os.getpid()}-{number}", limit)
    empty = Path(tempfile.mkdtemp(prefix="grader-bench-bind-"))
    env = {**os.environ, "GRADER_AUTOGRADER_ROOT": str(tree), "GRADER_PYTHON": python,
           "PYTHONPATH": str(tree / "source")}
    env.pop("GRADER_ROOT", None)
    started = time.monotonic()
    most: dict[str, int] = {}
    stop = threading.Event()

    def sample() -> None:  # the anonymous memory at its highest, and by whom it was held then
        while not stop.wait(0.1):
            now = group.anonymous()
            if sum(now.values()) > sum(most.values()):
                most.clear()
                most.update(now)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        done = subprocess.run([sys.executable, str(CONFINE), "container", str(empty), str(empty), str(empty), "--",
                               "/usr/bin/env", *[f"{key}={value}" for key, value in env.items()
                                                  if key.startswith(("GRADER_", "PYTHON"))],
                               "bash", str(tree / "source" / "run_autograder")],
                              preexec_fn=group.enter, capture_output=True, text=True, timeout=600)
        seconds = time.monotonic() - started
        peak, hits = group.figures()
    finally:
        stop.set()
        sampler.join()
        group.close()
        shutil.rmtree(empty, ignore_errors=True)
    data = json.loads((results / "results.json").read_text()) if (results / "results.json").exists() else {}
    return {"seconds": seconds, "score": data.get("score"), "peak": peak, "hits": hits, "code": done.returncode,
            "anonymous": most,
            "tail": (done.stdout + done.stderr).strip().splitlines()[-12:]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--limit-mb", type=int, default=768)
    parser.add_argument("--exercise", default="07")
    parser.add_argument("--python", default=sys.executable, help="the Python run_autograder runs the grader with")
    parser.add_argument("--verbose", action="store_true", help="print the end of each run's summary for staff")
    args = parser.parse_args()
    if os.geteuid() != 0 or not (V1.is_dir() or (V2 / "cgroup.controllers").is_file()):
        print("needs root and a writable memory cgroup hierarchy (v1 or v2)")
        return 2
    root = Path(tempfile.mkdtemp(prefix="grader-gradescope-memory-"))
    root.chmod(0o755)
    try:
        tree = autograder(root, args.exercise)
        runs: dict[str, list[dict]] = {"no limit": [], f"{args.limit_mb} MiB": []}
        for number in range(args.runs):
            for label, limit in (("no limit", None), (f"{args.limit_mb} MiB", args.limit_mb << 20)):
                run = one_run(tree, limit, number * 2 + (limit is not None), args.python)
                runs[label].append(run)
                print(f"{label:>9}: {run['seconds']:6.1f} s, score {run['score']}, peak {run['peak'] >> 20} MiB, "
                      f"limit hit {run['hits']:,} times (exit {run['code']}); anonymous at its most "
                      f"{sum(run['anonymous'].values()) >> 20} MiB ("
                      + ", ".join(f"{name} {size >> 20}" for name, size in sorted(run["anonymous"].items(),
                                                                               key=lambda item: -item[1]))
                      + ")", flush=True)
                if run["score"] is None or args.verbose:
                    print("   " + "\n   ".join(run["tail"]))
        medians = {label: statistics.median(run["seconds"] for run in found) for label, found in runs.items()}
        free, limited = medians.values()
        print(f"median: {free:.1f} s without the limit, {limited:.1f} s with it: {limited / free:.2f}x")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
