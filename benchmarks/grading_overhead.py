"""How long `grader run` and `grader submit` take next to `python -c "import torch"`, as ratios.

Usage, from the repository root with the package installed:
    python benchmarks/grading_overhead.py [--runs 5] [--ring 4]

The commands are run in turn (A, B, C, A, B, C, ...) so that drift in the machine's speed
affects all of them alike; the medians and their ratios to importing torch are printed.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

SOLUTION = "solutions/07-ring-attention/ring_attention.py"


def wall_seconds(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--ring", type=int, help="also time `grader submit --ring N`")
    args = parser.parse_args()
    grader = [sys.executable, "-m", "grader"]
    commands = {
        "import torch": [sys.executable, "-c", "import torch"],
        "grader run": grader + ["run", "--file", SOLUTION, "--no-record", "--device", "cpu"],
        "grader submit": grader + ["submit", "--file", SOLUTION, "--no-record", "--device", "cpu"],
    }
    if args.ring:
        commands[f"grader submit --ring {args.ring}"] = commands["grader submit"] + ["--ring", str(args.ring)]
    for command in commands.values():  # warm-up: caches, bytecode
        wall_seconds(command)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(args.runs):
        for name, command in commands.items():
            times[name].append(wall_seconds(command))
    base = statistics.median(times["import torch"])
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<28} median {median:6.2f} s  (min {min(values):.2f}, max {max(values):.2f})  "
              f"{median / base:5.2f}x import torch")


if __name__ == "__main__":
    main()
