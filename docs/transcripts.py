"""Runs the shell transcripts of the docs, each page in a course of its own, and compares what they print.

A page's transcripts are its ```console blocks: each `$ COMMAND` line runs (bash, from the root of a private copy
of this repository's course: exercises/, solutions/, hints/), and the lines under it, up to the next command, are
what it must print (stdout and stderr together, piped, no colour, no CUDA). A line `...` alone stands for any
lines. A block whose opening line has `title="PATH"` (```python title="exercises/02-scale/checker.py") is written to
PATH in the page's course when the page reaches it, and `<!-- run: COMMAND -->` runs a command unseen (setting a
file's time, say). What depends on the machine is masked alike in what is written and in what is printed: the
course's path, the containment line, times and durations, uids, digests.

    python docs/transcripts.py PAGE...           run them, say which differ
    python docs/transcripts.py --update PAGE...  write what each command printed into the page instead
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
COURSE_PARTS = ("exercises", "solutions", "hints")
SHOWN_ROOT = "~/course"  # where the pages say the course lies
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*(\S*)(.*)$")
TITLE = re.compile(r'title="([^"]+)"')
RUN = re.compile(r"^\s*<!-- run: (.*) -->\s*$")
ANY = "..."
MASKS = (
    (re.compile(r"^(\s*(?:containment: |note: sandbox: )?)(?:no )?sandbox \(.*$", re.M), r"\1<containment>"),
    (re.compile(r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:\d\d)?"), "<time>"),
    (re.compile(r"\b\d{8}[-T]\d{6}\b"), "<stamp>"),
    (re.compile(r"\b\d+(?:\.\d+)? s\b"), "<seconds>"),
    (re.compile(r"\buid \d+"), "uid <uid>"),
    (re.compile(r'("execution_time": )[\d.]+'), r"\1<seconds>"),
    (re.compile(r"\b[0-9a-f]{12,64}\b"), "<digest>"),
)
TIMEOUT = 300


@dataclass
class Step:
    """One thing a page does, in order: write a file, run a command unseen, or run a transcript's command."""

    line: int                  # the page's line it is written on
    command: str = ""          # a command to run (a transcript's, or a `<!-- run: -->`)
    expected: list[str] | None = None  # what it must print; None: run unseen
    path: str = ""             # a file to write instead, with `text`
    text: str = ""
    block: int = 0             # the page line of the ```console block it belongs to


@dataclass
class Outcome:
    """What one transcript command printed, masked, beside what the page says; `ok` when they agree."""

    step: Step
    printed: str               # masked, as compared
    raw: str = ""              # as printed, but for the course's path
    ok: bool = field(default=False)


def steps(page: Path) -> list[Step]:
    """Every file, unseen command and transcript command of a page, in the order the page writes them."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Step] = []
    index = 0
    while index < len(lines):
        fence, ran = FENCE.match(lines[index]), RUN.match(lines[index])
        if ran:
            found.append(Step(index + 1, command=ran.group(1)))
        if not fence:
            index += 1
            continue
        indent, mark, info, rest = fence.groups()
        end = next((at for at in range(index + 1, len(lines)) if lines[at].strip() == mark), len(lines))
        body = [line[len(indent):] if line.startswith(indent) else line.lstrip() for line in lines[index + 1:end]]
        title = TITLE.search(rest)
        if title:
            found.append(Step(index + 1, path=title.group(1), text="\n".join(body) + "\n"))
        elif info == "console":
            found += _transcript(body, index + 1)
        index = end + 1
    return found


def _transcript(body: list[str], start: int) -> list[Step]:
    commands: list[Step] = []
    for offset, line in enumerate(body, start=1):
        if line.startswith("$ "):
            commands.append(Step(start + offset, command=line[2:], expected=[], block=start))
        elif commands:
            commands[-1].expected.append(line)
    return commands


def mask(text: str, root: Path) -> str:
    """`text` with what depends on the machine replaced by a name for it, trailing spaces and blank ends dropped."""
    text = text.replace(str(root), SHOWN_ROOT)
    for pattern, name in MASKS:
        text = pattern.sub(name, text)
    return "\n".join(line.rstrip() for line in text.splitlines()).strip("\n")


def agrees(expected: list[str], printed: str, root: Path) -> bool:
    """Whether the printed text is what the page says, `...` standing for any lines."""
    parts = mask("\n".join(expected), root).split("\n") if expected else []
    pattern = "".join(r"(?:.*\n)*?" if line == ANY else re.escape(line) + r"\n" for line in parts)
    return re.fullmatch(pattern, printed + "\n" if printed else "") is not None


def make_course(root: Path) -> Path:
    """A private copy of this repository's course, its own home beside it."""
    for part in COURSE_PARTS:
        shutil.copytree(REPO / part, root / part, ignore=shutil.ignore_patterns("__pycache__", ".grader"))
    (root.parent / "home").mkdir(exist_ok=True)
    return root


def environment(root: Path) -> dict[str, str]:
    """What each command runs with: this Python's `grader` and `python` first, plain piped output, no CUDA."""
    keep = {key: value for key, value in os.environ.items() if key in ("TMPDIR", "GRADER_SANDBOX")}
    return {**keep, "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(root.parent / "home"), "NO_COLOR": "1", "CUDA_VISIBLE_DEVICES": "", "TZ": "UTC",
            "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}


def run_page(page: Path, root: Path) -> list[Outcome]:
    """Every step of `page` in the course at `root`; what each transcript command printed, and whether it agrees."""
    env, outcomes = environment(root), []
    for step in steps(page):
        if step.path:
            target = root / step.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(step.text, encoding="utf-8")
            continue
        done = subprocess.run(["bash", "-c", step.command], cwd=root, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, errors="replace", timeout=TIMEOUT)
        if step.expected is not None:
            printed = mask(done.stdout, root)
            raw = "\n".join(line.rstrip() for line in done.stdout.replace(str(root), SHOWN_ROOT).splitlines())
            outcomes.append(Outcome(step, printed, raw.strip("\n"), agrees(step.expected, printed, root)))
    return outcomes


def update(page: Path, outcomes: list[Outcome]) -> int:
    """Write what each disagreeing command printed into the page, in place of what it said; how many changed."""
    lines = page.read_text(encoding="utf-8").splitlines()
    changed = 0
    for outcome in sorted((o for o in outcomes if not o.ok), key=lambda o: -o.step.line):
        start, count = outcome.step.line, len(outcome.step.expected or [])
        lines[start:start + count] = outcome.raw.splitlines() if outcome.raw else []
        changed += 1
    page.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return changed


def main(argv: list[str]) -> int:
    """Run (or, with --update, rewrite) the transcripts of each page named; 1 where any disagrees."""
    updating = "--update" in argv
    failed = 0
    for name in [arg for arg in argv if arg != "--update"]:
        page = Path(name).resolve()
        with tempfile.TemporaryDirectory(prefix="grader-docs-") as folder:
            root = make_course(Path(folder) / "course")
            outcomes = run_page(page, root)
            for outcome in outcomes:
                if not outcome.ok:
                    failed += 1
                    print(f"{name}:{outcome.step.line}: $ {outcome.step.command}\n{outcome.printed}\n")
            if updating:
                print(f"{name}: {update(page, outcomes)} transcripts rewritten")
    return 1 if failed and not updating else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
