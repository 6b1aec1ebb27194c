"""Cohort grading: finding submissions, the gradebook, resuming, shards and their merge, the report page."""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO, check_gradescope, make_course, own_processes, survivors

from grader.cli import main
from grader.course import mistakes
from grader.report.cohort_csv import grades_csv
from grader.results.cohort import Entry
from grader.staff import cohort
from grader.staff.intake import find_submissions, make_ids

COURSES = FIXTURES / "courses"
HOSTILE_NAME = "<img src=x onerror=alert(1)>.py"
HOSTILE_TEXT = "<script>alert('graded')</script>\x1b[31m"


@pytest.fixture
def scale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A course of the small test exercise 02-scale alone, the grader's root; the working folder is tmp_path."""
    root = make_course(tmp_path / "course", ["02-scale"], COURSES)
    monkeypatch.setenv("GRADER_ROOT", str(root))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.chdir(tmp_path)
    return root


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, int, str]:
    """The full cohort graded once, shared by the tests that only read its gradebook: (folder, book, exit, output)."""
    base = tmp_path_factory.mktemp("whole")
    root = make_course(base / "course", ["02-scale"], COURSES)
    folder = full_cohort(root, base / "cohort")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GRADER_ROOT", str(root))
        patch.setenv("NO_COLOR", "1")
        output = io.StringIO()
        with contextlib.redirect_stdout(output):
            code = main(["grade", str(folder), "--out", str(base / "book"), "--jobs", "2"])
    return folder, base / "book", code, output.getvalue()


def small_cohort(root: Path, folder: Path) -> Path:
    """A reference copy, a learner's folder and a composed mistake: three graded, quickly."""
    solution = root / "solutions/02-scale/scale.py"
    folder.mkdir()
    shutil.copy(solution, folder / "alice.py")
    (folder / "bob").mkdir()
    shutil.copy(solution, folder / "bob" / "scale.py")
    mistakes.as_submission(root / "solutions/02-scale/mistakes/one_copy_short.py", solution, folder)
    return folder


def full_cohort(root: Path, folder: Path) -> Path:
    """The small cohort and everything that cannot be graded, or fails to import, or is hostile."""
    small_cohort(root, folder)
    (folder / "syntax.py").write_text("def scale(x, factor)\n    return x\n")
    (folder / "notes.txt").write_text("my answer is in the other file\n")
    (folder / "two").mkdir()
    for name in ("first.py", "second.py"):
        (folder / "two" / name).write_text("def scale(x, factor):\n    return x\n")
    (folder / "bundle.zip").write_bytes(b"PK\x05\x06" + bytes(18))
    (folder / HOSTILE_NAME).write_text(f"print({HOSTILE_TEXT!r})\n\ndef scale(x, factor):\n"
                                       f"    raise ValueError({HOSTILE_TEXT!r})\n")
    return folder


def grade(capsys, *argv: str) -> tuple[int, str]:
    code = main(["grade", *argv])
    out = capsys.readouterr().out
    assert "Traceback" not in out, out
    return code, out


def rows(book: Path) -> dict[str, dict[str, str]]:
    with open(book / "grades.csv", newline="") as handle:
        return {row["submission"]: row for row in csv.DictReader(handle)}


def test_a_cohort_is_graded_into_a_gradebook(whole):
    folder, book, code, out = whole
    # Some entries cannot be graded as handed in: their rows say why, and the gradebook is complete (exit status 0).
    assert code == 0, out
    assert "3 of them cannot be graded as handed in" in " ".join(out.split())
    assert "Traceback" not in out
    found = rows(book)
    hostile = next(name for name in found if name.startswith("_img_src_x_onerror_alert_1_.py-"))
    assert {name: row["status"] for name, row in found.items()} == {
        "alice.py": "passed", "bob": "passed", "one_copy_short.py": "failed", "syntax.py": "error",
        "notes.txt": "not graded", "two": "not graded", "bundle.zip": "not graded", hostile: "failed"}
    assert list(found["alice.py"]) == ["submission", "score", "max_score", "examples", "hidden", "status",
                                       "diagnosis", "reason", "similar_to"]
    # Two copies of one file are flagged alike, from the fingerprints each results file keeps; the rest are not.
    assert (found["alice.py"]["similar_to"], found["bob"]["similar_to"]) == ("bob (100%)", "alice.py (100%)")
    tiny = ("syntax.py", hostile)  # a few lines of their own: too few to compare, and named as such
    assert {row["similar_to"] for name, row in found.items() if name not in ("alice.py", "bob", *tiny)} == {""}
    assert {found[name]["similar_to"] for name in tiny} == {"not compared: too little code of its own"}
    assert (book / "similarity.csv").read_text().splitlines()[1] == "1,alice.py,bob,100%,8,yes,yes"
    assert (book / "feedback/alice.py.md").is_file() and (book / "feedback/notes.txt.html").is_file()
    assert [found["alice.py"][key] for key in ("score", "max_score", "examples", "hidden")] == ["10", "10", "3.3333",
                                                                                                "6.6667"]
    # The mistake fails the required case: 0 in total, whatever its examples earned; named by the diagnosis.
    mistake = found["one_copy_short.py"]
    assert (mistake["score"], mistake["examples"], mistake["diagnosis"]) == ("0", "1.6667", "Adds one copy too few")
    assert found["syntax.py"]["score"] == "0" and found["syntax.py"]["reason"] == ""
    assert found["notes.txt"]["score"] == "" and found["notes.txt"]["reason"] == "not a Python file (.txt)"
    assert found["two"]["reason"] == "more than one candidate file (first.py, second.py) and none called scale.py"
    assert found["bundle.zip"]["reason"] == "archive: has no manifest.json"
    # Every submission has a results file in Gradescope's format, with the hash of exactly what was graded.
    data = json.loads((book / "results/bob.json").read_text())
    assert data["score"] == 10.0 and len(data["tests"]) == 4 and data["extra_data"]["status"] == "passed"
    about = data["extra_data"]["submission"]
    assert about["sha256"] == hashlib.sha256((folder / "bob/scale.py").read_bytes()).hexdigest()
    assert about["name"] == "bob" and about["settings"]["exercise"] == "02-scale"
    assert json.loads((book / "results/syntax.py.json").read_text())["tests"][0]["output"].startswith(
        "error: syntax.py:1: your file could not be imported")  # named as found, not by a passing copy
    assert sorted(path.name for path in (book / "results").iterdir()) == sorted(f"{n}.json" for n in found)
    for path in (book / "results").iterdir():  # graded or not, each one a file Gradescope accepts
        check_gradescope(json.loads(path.read_text()))
    assert "[8/8]" in out
    assert "status: 2 passed, 2 failed, 1 error, 3 not graded" in out
    assert "1  Adds one copy too few" in out  # the mistakes most often diagnosed


def test_a_rerun_skips_everything_force_regrades_and_a_killed_run_is_finished(scale, capsys, tmp_path):
    folder = small_cohort(scale, tmp_path / "cohort")
    (folder / "one_copy_short.py").unlink()
    (folder / "notes.txt").write_text("not code")
    book = tmp_path / "book"
    code, out = grade(capsys, str(folder), "--out", str(book), "--jobs", "2")
    assert code == 0 and "grading 3 submissions" in out
    first = {path.name: path.read_bytes() for path in (book / "results").iterdir()}
    csv_before = (book / "grades.csv").read_text()

    code, out = grade(capsys, str(folder), "--out", str(book), "--jobs", "2")
    assert "3 already graded, skipped" in out and not any(line.startswith("grading") for line in out.splitlines())
    assert {path.name: path.read_bytes() for path in (book / "results").iterdir()} == first
    assert (book / "grades.csv").read_text() == csv_before

    # What a run killed halfway leaves: a missing results file and a temporary one never renamed.
    (book / "results/bob.json").unlink()
    (book / "results/.alice.py.json.4242.deadbeef.tmp").write_text('{"half": ')
    code, out = grade(capsys, str(folder), "--out", str(book), "--jobs", "2")
    assert "2 already graded, skipped" in out and "grading 1 submission," in out and "[1/1] bob: 10 of 10" in out
    assert set(rows(book)) == {"alice.py", "bob", "notes.txt"}

    # A changed file is graded again; so is everything under other limits, or with --force.
    shutil.copy(scale / "exercises/02-scale/scale.py", folder / "bob/scale.py")  # the stub: not attempted
    code, out = grade(capsys, str(folder), "--out", str(book), "--jobs", "2")
    assert "grading 1 submission," in out and rows(book)["bob"]["status"] == "failed"
    code, out = grade(capsys, str(folder), "--out", str(book), "--jobs", "2", "--force")
    assert "grading 3 submissions" in out and "skipped" not in out
    code, out = grade(capsys, str(folder), "--out", str(book), "--jobs", "2", "--time-limit", "4")
    assert "grading 3 submissions, 2 at a time" in out


def test_a_grader_error_is_recorded_and_tried_again(scale, capsys, tmp_path, monkeypatch):
    from grader.grading import pipeline

    folder = small_cohort(scale, tmp_path / "cohort")
    real = pipeline.grade

    def flaky(run, listener=None):
        if run.display == "bob":
            raise RuntimeError("the grader tripped")
        return real(run, listener)

    monkeypatch.setattr(pipeline, "grade", flaky)
    code, out = grade(capsys, str(folder), "--out", "book", "--jobs", "1")
    assert code == 1 and "bob: not graded: grader error: RuntimeError: the grader tripped" in out
    recorded = json.loads((tmp_path / "book/results/bob.json").read_text())["extra_data"]["submission"]
    assert recorded["key"] == "" and "RuntimeError" in recorded["traceback"]
    monkeypatch.setattr(pipeline, "grade", real)
    code, out = grade(capsys, str(folder), "--out", "book", "--jobs", "1")
    assert code == 0 and "2 already graded, skipped" in out and "[1/1] bob: 10 of 10, passed" in out


def test_the_report_page_escapes_learner_text_and_holds_the_plots(whole):
    page = (whole[1] / "report.html").read_text()
    assert page.startswith("<!doctype html>") and "<script" not in page and "<img" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;.py" in page  # the hostile name, as text
    assert "ValueError: &lt;script&gt;alert(&#x27;graded&#x27;)&lt;/script&gt;\\x1b[31m" in page  # its message, inert
    assert "\x1b" not in page and "://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert page.count("<svg") == 1  # the histogram; the bars are table rows, their labels wrapped, never cut
    for label in ("score histogram", "mistakes most often diagnosed", "scale examples: cases failed"):
        assert f'aria-label="{label}"' in page
    assert "Adds one copy too few: 1 of 5" in page  # a bar of the mistakes chart, with its count
    assert "scale-by-one-is-required [cpu]: 2/4 (50%)" in page  # the import error is left out of the rates
    assert "3 scored 0 to 1" in page and "2 scored 9 to 10" in page  # histogram bins, 0 and full marks


def test_two_shards_merged_are_one_run(whole, capsys, tmp_path, monkeypatch):
    folder, book, _, _ = whole
    monkeypatch.setenv("GRADER_ROOT", str(folder.parent / "course"))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.chdir(tmp_path)
    for k in (1, 2):
        grade(capsys, str(folder), "--out", f"shard-{k}", "--jobs", "2", "--shard", f"{k}/2")
    parts = [{path.name for path in (tmp_path / f"shard-{k}/results").iterdir()} for k in (1, 2)]
    assert all(parts) and not parts[0] & parts[1]
    assert parts[0] | parts[1] == {path.name for path in (book / "results").iterdir()}
    code = main(["gradebook", "merge", "shard-1", "shard-2", "--out", "merged"])
    out = capsys.readouterr().out
    assert code == 0 and "02-scale: 8 submissions" in out
    for name in ("grades.csv", "report.html"):
        assert (tmp_path / "merged" / name).read_text() == (book / name).read_text()
    assert {p.name for p in (tmp_path / "merged/results").iterdir()} == parts[0] | parts[1]


def test_no_entry_ends_the_run_each_bad_one_is_its_own_row(scale, capsys, tmp_path, monkeypatch):
    from grader.files import SOURCE_LIMIT

    folder = small_cohort(scale, tmp_path / "cohort")
    solution = scale / "solutions/02-scale/scale.py"
    (folder / "link.py").symlink_to(solution)  # the reference, through a link
    (folder / "linked").mkdir()
    (folder / "linked" / "scale.py").symlink_to(solution)
    os.mkfifo(folder / "pipe.py")
    with open(folder / "huge.py", "wb") as handle:
        handle.truncate(16 << 30)  # sparse: never read, never in memory
    strange = os.fsdecode(b"d\xffve.py")  # a name that is not UTF-8
    shutil.copy(solution, folder / strange)
    (folder / "oom.py").write_text("def scale(x, factor):\n    return x\n")
    real = cohort.read_graded

    def short_of_memory(submission, *args):
        if submission.name == "oom.py":
            raise MemoryError
        return real(submission, *args)

    monkeypatch.setattr(cohort, "read_graded", short_of_memory)
    code, out = grade(capsys, str(folder), "--out", "book", "--jobs", "1")
    found = rows(tmp_path / "book")  # the gradebook is written, every entry in it
    weird = next(name for name in found if name.startswith("d_ve.py-"))
    assert weird.isascii() and found[weird]["status"] == "passed" and found[weird]["score"] == "10", out
    assert {name: found[name]["status"] for name in ("alice.py", "bob", "one_copy_short.py")} == {
        "alice.py": "passed", "bob": "passed", "one_copy_short.py": "failed"}
    assert {name: found[name]["reason"] for name in ("link.py", "linked", "pipe.py", "huge.py", "oom.py")} == {
        "link.py": "a symbolic link", "linked": "scale.py is a symbolic link", "pipe.py": "not a regular file",
        "huge.py": f"too large (17,179,869,184 bytes; the limit is {SOURCE_LIMIT:,})",
        "oom.py": "unreadable: the grader ran out of memory reading it"}
    assert code == 1 and "link.py: not graded: a symbolic link" in out
    page = (tmp_path / "book/report.html").read_text(encoding="utf-8")
    assert "d\\udcffve.py" in page  # the learner's name, shown as it is, escaped
    monkeypatch.setattr(cohort, "read_graded", real)
    code, out = grade(capsys, str(folder), "--out", "book", "--jobs", "1")
    # What lasts while the entry does is not looked at again; the memory failure is.
    assert "8 already graded, skipped" in out and "grading 1 submission," in out and "[1/1] oom.py: " in out


def test_one_line_and_status_2_for_what_cannot_be_done(scale, capsys, tmp_path):
    folder = small_cohort(scale, tmp_path / "cohort")
    (tmp_path / "empty").mkdir()
    (tmp_path / "afile").write_text("")
    for argv, words in [
        ([str(folder), "--out", "b", "--shard", "3/2"], "error: --shard '3/2': K must be from 1 to N"),
        ([str(folder), "--out", "b", "--shard", "one"], "error: --shard 'one': expected K/N, such as 2/8"),
        ([str(folder), "--out", "b", "--jobs", "0"], "error: --jobs must be at least 1, not 0"),
        ([str(tmp_path / "empty"), "--out", "b"], "error: no submissions in"),
        ([str(folder), "--out", "afile"], "error: --out afile: not a folder"),
        ([str(folder), "--out", "b", "--exercise", "nope"], "error: no exercise called 'nope'"),
    ]:
        code, out = grade(capsys, *argv)
        assert code == 2 and out.startswith(words) and len(out.strip().splitlines()) == 1, out
    code = main(["gradebook", "merge", str(tmp_path / "empty"), "--out", "m"])
    out = capsys.readouterr().out
    assert code == 2 and "no shard.json here" in out and len(out.strip().splitlines()) == 1


def test_ids_are_safe_unique_file_names(tmp_path):
    names = ["a b.py", "a_b.py", "Alice.py", "alice.py", "-rf.py", "..hidden.py", "ok.py"]
    paths = [tmp_path / "c" / name for name in names] + [tmp_path / "c" / "deep" / "x.py"]
    ids = {path.name if path.parent.name == "c" else "deep/x.py": made for path, (made, _) in make_ids(paths).items()}
    assert ids["ok.py"] == "ok.py" and ids["deep/x.py"] == "deep__x.py"
    assert ids["a b.py"].startswith("a_b.py-") and ids["a_b.py"].startswith("a_b.py-")  # they would collide
    assert ids["Alice.py"] != ids["alice.py"] and ids["alice.py"].startswith("alice.py-")  # case-folded alike
    assert ids["-rf.py"].startswith("rf.py-") and ids["..hidden.py"].startswith("hidden.py-")
    assert len(set(ids.values())) == len(ids)
    assert all(made.replace(".", "").replace("_", "").replace("-", "").isalnum() for made in ids.values())


def test_what_counts_as_one_submission(tmp_path):
    learner = tmp_path / "learner"  # holds the stub's name: one submission, helpers and all
    learner.mkdir()
    (learner / "scale.py").write_text("")
    (learner / "helper.py").write_text("")
    single = tmp_path / "single"  # exactly one .py: one submission whatever its name
    single.mkdir()
    (single / "mine.py").write_text("")
    found = find_submissions([learner, single, tmp_path / "gone.py"], "scale.py")
    assert [(s.id, s.file and s.file.name, s.problem) for s in found] == [
        ("gone.py", None, "missing: no such file or folder"), ("learner", "scale.py", ""), ("single", "mine.py", "")]
    assert not found[0].lasting  # a missing file is looked for again on the next run
    cohort_folder = tmp_path / "cohort"  # several .py and folders: a folder of submissions
    for name in ("a", "b"):
        (cohort_folder / name).mkdir(parents=True)
        (cohort_folder / name / "scale.py").write_text("")
    (cohort_folder / "c.py").write_text("")
    (cohort_folder / "__pycache__").mkdir()
    (cohort_folder / ".DS_Store").write_text("")
    (cohort_folder / "book").mkdir()  # the gradebook, written inside the submissions' folder
    assert [s.id for s in find_submissions([cohort_folder], "scale.py", exclude=(cohort_folder / "book",))] == [
        "a", "b", "c.py"]


def test_submission_archives_are_graded_once_verified(scale, capsys, tmp_path):
    import zipfile

    from grader.results.archive import write_submission

    solution = (scale / "solutions/02-scale/scale.py").read_bytes()
    folder = tmp_path / "cohort"  # one folder per learner, holding the archive their bundle wrote
    good = write_submission(folder / "alice", "02-scale", {"scale.py": solution}).path
    write_submission(folder / "bob", "01-stable-softmax", {"scale.py": solution})
    write_submission(folder / "carol", "02-scale", {"mine.py": solution})
    changed = write_submission(folder / "dan", "02-scale", {"scale.py": solution}).path
    with zipfile.ZipFile(changed) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    with zipfile.ZipFile(changed, "w") as archive:  # the file edited after its manifest was written
        for name, data in members.items():
            archive.writestr(name, data.replace(b"factor", b"fact0r", 1) if name == "scale.py" else data)
    (folder / "erin").mkdir()
    for name in ("one.zip", "two.zip"):
        shutil.copy(good, folder / "erin" / name)
    code, out = grade(capsys, str(folder), "--out", "book", "--jobs", "1")
    found = rows(tmp_path / "book")
    assert code == 0 and found["alice"]["status"] == "passed" and found["alice"]["score"] == "10", out
    about = json.loads((tmp_path / "book/results/alice.json").read_text())["extra_data"]["submission"]
    assert about["sha256"] == hashlib.sha256(solution).hexdigest()  # the graded file's, not the archive's
    assert found["bob"]["reason"] == "archive: is a submission for '01-stable-softmax', not '02-scale'"
    assert found["carol"]["reason"] == "archive: holds mine.py, not scale.py"
    assert found["dan"]["reason"].startswith("archive: scale.py does not match its hash in the manifest")
    assert found["erin"]["reason"] == "more than one candidate file (one.zip, two.zip) and none called scale.py"
    assert str(tmp_path) not in (tmp_path / "book/grades.csv").read_text()
    code, out = grade(capsys, str(folder), "--out", "book", "--jobs", "1")
    assert "5 already graded, skipped" in out


def test_csv_cells_are_never_formulas():
    entry = Entry("x.py", "x.py", "02-scale", "not graded", 0.0, 10.0, "=HYPERLINK(\"http://e\")", {}, [])
    assert grades_csv([entry]).splitlines()[1].endswith(",not graded,,\"'=HYPERLINK(\"\"http://e\"\")\"")


def test_shards_split_by_id_alone():
    ids = [f"learner-{number}.py" for number in range(200)]
    shards = [[i for i in ids if cohort.in_shard(i, (k, 3))] for k in (1, 2, 3)]
    assert sorted(sum(shards, [])) == sorted(ids) and all(40 < len(shard) < 95 for shard in shards)


def test_exercise_07_reference_and_a_catalogued_mistake(course, capsys, tmp_path):
    solution = course / "solutions/07-ring-attention/ring_attention.py"
    folder = tmp_path / "cohort07"
    folder.mkdir()
    shutil.copy(solution, folder / "reference.py")
    mistakes.as_submission(course / "solutions/07-ring-attention/mistakes/add_without_rescale.py", solution, folder)
    code = main(["grade", str(folder), "--out", str(tmp_path / "book07"), "--jobs", "2"])
    out = capsys.readouterr().out
    assert code == 0, out
    found = rows(tmp_path / "book07")
    assert found["reference.py"]["status"] == "passed" and found["reference.py"]["score"] == "100"
    assert found["add_without_rescale.py"]["status"] == "failed"
    assert found["add_without_rescale.py"]["diagnosis"] == "Adds chunk statistics without rescaling"


SLOW = "import time\n\ndef scale(x, factor):\n    time.sleep(20)\n    return x\n"


def test_sigterm_stops_every_grading_process_and_the_next_run_finishes(scale, capsys, tmp_path):
    folder = small_cohort(scale, tmp_path / "cohort")
    for name in ("slow1.py", "slow2.py"):
        (folder / name).write_text(SLOW)
    before = own_processes()
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    process = subprocess.Popen([sys.executable, "-m", "grader", "grade", str(folder), "--out", "book", "--jobs",
                                "2"], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(list((tmp_path / "book/results").glob("*.json"))) < 3:
        time.sleep(0.2)
    time.sleep(1.0)  # the slow ones are inside their grades now
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 143 and out.rstrip().endswith("interrupted"), out + err
    assert "Traceback" not in out + err
    assert survivors(before) == []  # grading processes, workers and sandboxes all gone
    done = {path.name for path in (tmp_path / "book/results").iterdir()}
    assert "slow1.py.json" not in done or "slow2.py.json" not in done
    for path in (tmp_path / "book/results").glob("*.json"):
        json.loads(path.read_text())  # whole files only
    # The next run grades what has no results file yet, and only that.
    for name in ("slow1.py", "slow2.py"):
        shutil.copy(scale / "solutions/02-scale/scale.py", folder / name)
    code, out = grade(capsys, str(folder), "--out", "book", "--jobs", "2")
    assert code == 0 and f"{len(done)} already graded, skipped" in out
    assert f"grading {5 - len(done)} submission" in out and set(rows(tmp_path / "book")) == {
        "alice.py", "bob", "one_copy_short.py", "slow1.py", "slow2.py"}


def test_a_time_budget_applies_to_each_submission_and_is_part_of_the_verdicts_key(scale, capsys, tmp_path) -> None:
    folder = small_cohort(scale, tmp_path / "cohort")
    code, out = grade(capsys, str(folder), "--out", str(tmp_path / "book"), "--jobs", "1", "--time-budget", "0.001")
    found = rows(tmp_path / "book")
    assert {name: row["status"] for name, row in found.items()} == {
        "alice.py": "failed", "bob": "failed", "one_copy_short.py": "failed"}
    outputs = [test["output"] for test in json.loads((tmp_path / "book/results/bob.json").read_text())["tests"]]
    assert any("the time budget of 0.001 s of CPU for the whole command was used up" in text for text in outputs)
    # Graded again without the budget: a different setting, so nothing is skipped as already graded.
    grade(capsys, str(folder), "--out", str(tmp_path / "book"), "--jobs", "1")
    assert rows(tmp_path / "book")["bob"]["status"] == "passed"
    code, out = grade(capsys, str(folder), "--out", str(tmp_path / "other"), "--time-budget", "0")
    assert code == 2 and out.strip() == "error: --time-budget must be a positive number of seconds, not 0"
