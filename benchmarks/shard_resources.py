"""What one shard of `grader grade` needs from a scheduler: peak memory of its whole process tree, CPU and wall time.

Usage, from the repository root with the package installed:
    python benchmarks/shard_resources.py [--jobs 1] [--keep DIR]

The cohort is exercise 07's reference, one correct variant, two catalogued mistakes composed with the reference,
one file whose function allocates until it is stopped and one whose function never returns: the two costliest
kinds of submission beside ordinary ones. It is graded as one shard (`--shard 1/1`) while every process of the
tree is sampled four times a second; printed: the peak of the tree's memory (proportional set size, which counts
a page shared by forked processes once, and resident set size, which counts it in each), CPU seconds (user and
system, as the kernel counted them), wall seconds, and each submission's line as the grader printed it.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXERCISE = "07-ring-attention"
HOG = "\n\ndef ring_attention(query, key_chunks, value_chunks):\n    import torch\n    kept = []\n" \
      "    while True:\n        kept.append(torch.ones(1 << 24))\n"
LOOP = "\n\ndef ring_attention(query, key_chunks, value_chunks):\n    while True:\n        pass\n"


def build_cohort(folder: Path) -> None:
    sys.path.insert(0, str(REPO))
    from grader.course.mistakes import as_submission

    solutions = REPO / "solutions" / EXERCISE
    reference = solutions / "ring_attention.py"
    folder.mkdir(parents=True)
    shutil.copy(reference, folder / "reference.py")
    shutil.copy(solutions / "variants/log_sum_exp.py", folder / "variant_log_sum_exp.py")
    for name in ("add_without_rescale", "normalize_each_chunk"):
        as_submission(solutions / f"mistakes/{name}.py", reference, folder).rename(folder / f"mistake_{name}.py")
    (folder / "memory_hog.py").write_text(reference.read_text() + HOG)
    (folder / "endless_loop.py").write_text(reference.read_text() + LOOP)


def tree_memory(root: int) -> tuple[int, int]:
    """(PSS, RSS) in bytes, summed over `root` and every process below it now."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                children.setdefault(int(fields[1]), []).append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    pss = rss = 0
    todo = [root]
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    pss += int(line.split()[1]) * 1024
                elif line.startswith("Rss:"):
                    rss += int(line.split()[1]) * 1024
        except (OSError, ValueError):
            continue
    return pss, rss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="leave the cohort and the gradebook in this folder")
    args = parser.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="grader-shard-"))
    build_cohort(base / "subs")
    command = [sys.executable, "-m", "grader", "grade", str(base / "subs"), "--exercise", EXERCISE,
               "--out", str(base / "book"), "--jobs", str(args.jobs), "--shard", "1/1"]
    load = os.getloadavg()[0]
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak_pss = peak_rss = 0
    while process.poll() is None:
        pss, rss = tree_memory(process.pid)
        peak_pss, peak_rss = max(peak_pss, pss), max(peak_rss, rss)
        time.sleep(0.25)
    wall = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    output = process.stdout.read() if process.stdout else ""
    print(output.rstrip())
    print(f"\nexit status {process.returncode}; --jobs {args.jobs}; load average {load:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after")
    print(f"peak memory of the process tree: {peak_pss / 2**20:.0f} MiB PSS, {peak_rss / 2**20:.0f} MiB RSS "
          f"(largest single process: {usage.ru_maxrss / 1024:.0f} MiB)")
    print(f"CPU {usage.ru_utime + usage.ru_stime:.1f} s, wall {wall:.1f} s")
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
