"""Every shell transcript of the docs, run as a reader would run it and compared with what the page shows; and the
staff page's table of gradebook files and columns, held to what a graded cohort's gradebook holds.

Each page runs once, in a copy of the course of its own (docs/transcripts.py), the first time one of its
transcripts is asked for; a test per ```console block then says whether each of its commands printed what the
page says, masked where the machine decides (times, uids, paths, the containment line).
"""

from __future__ import annotations

import csv
import dataclasses
import difflib
import json
import shutil
import subprocess
import types
import typing
from pathlib import Path

import pytest
from conftest import REPO
from test_docs import DOCS, docs_module

transcripts = docs_module("transcripts")
PAGES = sorted(DOCS.rglob("*.md"))
BLOCKS = [(page, block) for page in PAGES
          for block in sorted({step.block for step in transcripts.steps(page) if step.expected is not None})]
STAFF = DOCS / "staff" / "index.md"
TABLE = "## The gradebook: every file and column"


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """page -> (its course, what each of its transcript commands printed), each page run once."""
    done: dict[Path, tuple[Path, list]] = {}

    def run(page: Path) -> tuple[Path, list]:
        if page not in done:
            root = transcripts.make_course(tmp_path_factory.mktemp(page.parent.name) / "course")
            done[page] = (root, transcripts.run_page(page, root))
        return done[page]
    return run


@pytest.mark.parametrize(("page", "block"), BLOCKS, ids=[f"{page.relative_to(DOCS)}:{block}" for page, block in BLOCKS])
def test_the_transcript_prints_what_the_page_shows(ran, page: Path, block: int) -> None:
    root, outcomes = ran(page)
    wrong = [outcome for outcome in outcomes if outcome.step.block == block and not outcome.ok]
    said = []
    for outcome in wrong:
        expected = transcripts.mask("\n".join(outcome.step.expected), root).splitlines()
        diff = difflib.unified_diff(expected, outcome.printed.splitlines(), "the page", "printed", lineterm="")
        said.append(f"{page.relative_to(REPO)}:{outcome.step.line}: $ {outcome.step.command}\n" + "\n".join(diff))
    assert not wrong, "\n\n".join(said) + "\n(python docs/transcripts.py --update PAGE writes what was printed)"


def table_rows() -> set[tuple[str, str]]:
    """(file, column or field) of every row of the staff page's gradebook table; '—' is the file itself."""
    text = STAFF.read_text(encoding="utf-8")
    section = text[text.index(TABLE):].split("\n## ", 1)[0]
    rows = set()
    for line in section.splitlines():
        cells = [cell.strip().strip("`") for cell in line.strip().strip("|").split("|")]
        if line.startswith("| `"):
            rows.add((cells[0], cells[1]))
    return rows


def written(book: Path, suites: set[str], leaves: set[str]) -> set[tuple[str, str]]:
    """(file, column or field) of everything a gradebook's folder holds, a submission's or learner's id as ID."""
    found = set()
    for path in sorted(file for file in book.rglob("*") if file.is_file()):
        parts = path.relative_to(book).parts
        name = "/".join([*parts[:-1], "ID" + "".join(Path(parts[-1]).suffixes[-1:])]) if len(parts) > 1 else parts[0]
        found.add((name, "—"))
        if path.suffix == ".csv":
            header = next(csv.reader(path.open(encoding="utf-8")))
            for index, column in enumerate(header):
                if name == "canvas.csv" and index == len(header) - 1:
                    column = "ASSIGNMENT"
                elif name == "grades.csv" and column in suites - {"examples", "hidden"}:
                    column = "SUITE"
                found.add((name, column))
        elif path.suffix == ".json":
            found |= {(name, field) for field in json_paths(json.loads(path.read_text(encoding="utf-8")), "", leaves)}
    return found


def json_paths(value, path: str, leaves: set[str]) -> set[str]:
    """Every field's path in a JSON value (`tests[].name`), down to the table's own rows or a value."""
    if path in leaves:
        return {path}
    if isinstance(value, dict):
        return set().union(*[json_paths(item, f"{path}.{key}" if path else key, leaves) for key, item in value.items()])
    if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        return set().union(*[json_paths(item, f"{path}[]", leaves) for item in value])
    return {path}


def declared(record: type, path: str, leaves: set[str]) -> set[str]:
    """Every field's path a typed record declares (grader/results/), down to the table's own rows."""
    if path in leaves or not dataclasses.is_dataclass(record):
        return {path}
    found = set()
    for name, kind in typing.get_type_hints(record).items():
        if typing.get_origin(kind) in (typing.Union, types.UnionType):  # X | None: the X
            kind = next(arg for arg in typing.get_args(kind) if arg is not type(None))
        if typing.get_origin(kind) is list and typing.get_args(kind) and dataclasses.is_dataclass(
                typing.get_args(kind)[0]):
            found |= declared(typing.get_args(kind)[0], f"{path}.{name}[]" if path else f"{name}[]", leaves)
        else:
            found |= declared(kind, f"{path}.{name}" if path else name, leaves)
    return found


def test_the_gradebook_table_holds_every_file_and_column_and_nothing_else(ran, tmp_path) -> None:
    """The worked example's gradebook (a roster, its exports), the same graded without a roster, and every field
    the results model declares: each in the table, and each row of the table in one of them."""
    from grader.results.book import BookFile, ShardFile
    from grader.results.file import ResultsFile

    root, _ = ran(STAFF)
    book, plain = root / "book", tmp_path / "plain"
    shutil.copytree(book / "results", plain / "results")  # graded already: kept, and the gradebook written again
    done = subprocess.run(["grader", "grade", "subs/", "--exercise", "01", "--out", str(plain)], cwd=root,
                          env=transcripts.environment(root), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "(0 done now, 4 kept from earlier runs)" in done.stdout, done.stdout + done.stderr
    rows = table_rows()
    leaves = {column for _, column in rows}
    suites = {test["extra_data"]["suite"] for path in (book / "results").glob("*.json")
              for test in json.loads(path.read_text(encoding="utf-8"))["tests"]}
    found = written(book, suites, leaves) | written(plain, suites, leaves)
    records = {"results/ID.json": ResultsFile, "shard.json": ShardFile, "gradebook.json": BookFile}
    fields = {(name, field) for name, record in records.items() for field in declared(record, "", leaves)}
    assert sorted(found - rows) == [] and sorted(fields - rows) == []
    # SUITE is held where the exercise graded has a distributed suite; exercise 01 has none.
    unheld = rows - found - fields - {(file, column) for file, column in rows if column == "SUITE"}
    assert sorted(unheld) == []
    assert ("grades.csv", "in_roster") in found and ("results/ID.json", "extra_data.submission.sha256") in found
