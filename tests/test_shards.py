"""Shards that always merge: an empty shard's gradebook, a merge that names every missing or clashing shard, exit
statuses a job scheduler can read, and --jobs from the CPUs this process may use."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, make_course
from test_cohort import small_cohort

from grader.cli import main
from grader.staff import cpus
from grader.staff.cohort import in_shard

IDS = ["alice.py", "bob", "one_copy_short.py"]  # the small cohort's ids: of 3 shards, 1/3 holds none of them


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[int, str]]]:
    """The small cohort graded as shards 1/3 (empty), 2/3 and 3/3: (the folder holding them, [(exit, output)])."""
    base = tmp_path_factory.mktemp("shards")
    root = make_course(base / "course", ["02-scale"], FIXTURES / "courses")
    folder = small_cohort(root, base / "cohort")
    assert [[i for i in IDS if in_shard(i, (k, 3))] for k in (1, 2, 3)] == [[], ["one_copy_short.py"],
                                                                             ["alice.py", "bob"]]
    runs = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GRADER_ROOT", str(root))
        patch.setenv("NO_COLOR", "1")
        patch.chdir(base)
        for k in (1, 2, 3):
            runs.append(_run(["grade", str(folder), "--out", f"shard-{k}", "--jobs", "1", "--shard", f"{k}/3"]))
    return base, runs


def _run(argv: list[str]) -> tuple[int, str]:
    import contextlib
    import io

    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        code = main(argv)
    assert "Traceback" not in output.getvalue()
    return code, output.getvalue()


def merge(base: Path, *folders: str) -> tuple[int, list[str]]:
    code, out = _run(["gradebook", "merge", *(str(base / name) for name in folders), "--out", str(base / "merged")])
    return code, out.strip().splitlines()


def test_an_empty_shard_writes_an_empty_gradebook_and_the_shards_merge(shards):
    base, runs = shards
    assert [code for code, _ in runs] == [0, 0, 0], runs
    assert "02-scale: 0 submissions" in runs[0][1] and "score: nothing graded" in runs[0][1]
    empty = base / "shard-1"
    assert (empty / "results").is_dir() and list((empty / "results").iterdir()) == []
    assert (empty / "grades.csv").read_text().splitlines() == ["submission,score,max_score,status,diagnosis,reason,similar_to"]
    record = json.loads((empty / "shard.json").read_text())
    assert record["shard"] == "1/3" and record["submissions"] == [] and record["cohort_size"] == 3
    assert record["exercise"] == "02-scale" and record["settings"]["course"]
    code, lines = merge(base, "shard-1", "shard-2", "shard-3")
    assert code == 0 and "02-scale: 3 submissions" in lines[0], lines
    with open(base / "merged/grades.csv", newline="") as handle:
        assert {row["submission"]: row["status"] for row in csv.DictReader(handle)} == {
            "alice.py": "passed", "bob": "passed", "one_copy_short.py": "failed"}
    merged = json.loads((base / "merged/shard.json").read_text())
    assert merged["shard"] == "1/1" and merged["submissions"] == sorted(IDS) and merged["to_retry"] == 0
    code, lines = merge(base, "merged")  # a merged gradebook is a gradebook of one shard, merged again as it is
    assert code == 0


def copy(base: Path, name: str, new: str) -> Path:
    target = base / new
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(base / name, target)
    return target


def edit_record(folder: Path, **changes) -> None:
    path = folder / "shard.json"
    data = json.loads(path.read_text())
    for key, value in changes.items():
        if key == "course":
            data["settings"]["course"] = value
        else:
            data[key] = value
    path.write_text(json.dumps(data))


def test_a_merge_names_every_missing_or_clashing_shard_one_line_each(shards):
    base, _ = shards
    code, lines = merge(base, "shard-2", "shard-3")
    assert code == 2 and lines == ["error: the 2 folders are not one cohort's shards (1 problem):",
                                   "  shard 1/3 is missing"], lines

    code, lines = merge(base, "shard-1", "shard-2", "shard-3", "shard-3")
    assert code == 2 and lines[1:] == [
        f"  shard 3/3 is in more than one folder: {base / 'shard-3'}, {base / 'shard-3'}",
        f"  {base / 'shard-3'} and {base / 'shard-3'} both hold alice.py, bob: shards must not overlap"], lines

    other = copy(base, "shard-2", "other-course")
    edit_record(other, course="0123456789abcdef0123")
    code, lines = merge(base, "shard-1", "other-course", "shard-3")
    assert code == 2 and len(lines) == 2 and lines[1].startswith(
        f"  {other}: graded with course version 0123456789ab, where {base / 'shard-1'} was graded with course "
        f"version "), lines

    other = copy(base, "shard-2", "other-exercise")
    edit_record(other, exercise="07-ring-attention")
    code, lines = merge(base, "shard-1", "other-exercise", "shard-3")
    assert code == 2 and lines[1:] == [f"  {other}: exercise 07-ring-attention, where {base / 'shard-1'} has "
                                       f"02-scale"], lines

    other = copy(base, "shard-2", "other-split")
    edit_record(other, shard="2/4")
    code, lines = merge(base, "shard-1", "other-split", "shard-3")
    assert code == 2 and lines[1:] == ["  the folders are shards of different splits (of 3, of 4): merge the shards "
                                       "of one --shard K/N run"], lines

    other = copy(base, "shard-3", "half-done")
    (other / "results/bob.json").unlink()  # a shard killed before its last results file was written
    edit_record(other, cohort="f" * 64, cohort_size=4)  # and graded before a late submission came in
    code, lines = merge(base, "shard-1", "shard-2", "half-done")
    assert code == 2 and lines[1:] == [
        f"  the shards were graded from different sets of submissions ({base / 'shard-1'} 3, {base / 'shard-2'} 3, "
        f"{other} 4): run every shard again on the same folder (what is graded already is skipped)",
        f"  {other}: no results file for bob: run its shard again"], lines

    code, lines = merge(base, "shard-1", "cohort")
    assert code == 2 and len(lines) == 1 and "cohort: no shard.json here: not a gradebook of `grader grade`" in lines[0]


def test_an_entry_that_cannot_be_graded_leaves_the_shard_complete_a_grader_error_does_not(
        tmp_path, monkeypatch, capsys):
    root = make_course(tmp_path / "course", ["02-scale"], FIXTURES / "courses")
    monkeypatch.setenv("GRADER_ROOT", str(root))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "cohort"
    folder.mkdir()
    for name in ("alice.py", "bob.py"):  # two files: a folder of submissions, not one learner's folder
        shutil.copy(root / "solutions/02-scale/scale.py", folder / name)
    (folder / "notes.txt").write_text("my answer is elsewhere\n")
    code, out = _run(["grade", str(folder), "--out", "book", "--jobs", "1"])
    assert code == 0, out
    assert ("complete: every submission has its verdict; 1 of them cannot be graded as handed in (the reason column "
            "of grades.csv says why; exit status 0)") in " ".join(out.split())
    record = json.loads((tmp_path / "book/shard.json").read_text())
    assert (record["not_graded"], record["to_retry"]) == (1, 0)

    from grader.grading import pipeline

    real = pipeline.grade

    def tripped(run, listener=None):
        raise RuntimeError("the grader tripped")

    monkeypatch.setattr(pipeline, "grade", tripped)
    code, out = _run(["grade", str(folder), "--out", "book", "--jobs", "1", "--force"])
    assert code == 1 and "incomplete: 2 submissions got no verdict that stands" in " ".join(out.split()), out
    assert json.loads((tmp_path / "book/shard.json").read_text())["to_retry"] == 2
    code, lines = merge(tmp_path, "book")
    assert code == 1 and any(line.startswith("incomplete: 2 submissions") for line in lines), lines
    monkeypatch.setattr(pipeline, "grade", real)
    code, out = _run(["grade", str(folder), "--out", "book", "--jobs", "1"])
    assert code == 0 and "1 already graded, skipped" in out


def test_jobs_default_to_the_cpus_this_process_may_use(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cpus.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3, 4, 5})
    v2 = tmp_path / "v2"
    (v2 / "job/step").mkdir(parents=True)
    (v2 / "cpu.max").write_text("max 100000\n")
    (v2 / "job/cpu.max").write_text("250000 100000\n")  # 2.5 CPUs: three graded at once
    (v2 / "job/step/cpu.max").write_text("max 100000\n")
    (tmp_path / "v2.cgroup").write_text("0::/job/step\n")
    assert cpus.usable_cpus(v2, tmp_path / "v2.cgroup") == (
        3, "6 CPUs in this process's affinity mask, 3 by its cgroup's CPU quota")
    v1 = tmp_path / "v1"
    (v1 / "cpu,cpuacct/slurm").mkdir(parents=True)
    (v1 / "cpu,cpuacct/slurm/cpu.cfs_quota_us").write_text("-1\n")
    (v1 / "cpu,cpuacct/slurm/cpu.cfs_period_us").write_text("100000\n")
    (tmp_path / "v1.cgroup").write_text("4:memory:/slurm\n3:cpu,cpuacct:/slurm\n")
    assert cpus.usable_cpus(v1, tmp_path / "v1.cgroup") == (6, "6 CPUs in this process's affinity mask")
    (v1 / "cpu,cpuacct/slurm/cpu.cfs_quota_us").write_text("50000\n")  # half a CPU is still one at a time
    assert cpus.usable_cpus(v1, tmp_path / "v1.cgroup")[0] == 1
    assert cpus.cgroup_quota(tmp_path / "none", tmp_path / "missing") is None

    monkeypatch.setattr(cpus, "usable_cpus", lambda: (1, "1 CPU in this process's affinity mask"))
    root = make_course(tmp_path / "course", ["02-scale"], FIXTURES / "courses")
    monkeypatch.setenv("GRADER_ROOT", str(root))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs/notes.txt").write_text("nothing")
    (tmp_path / "subs/other.txt").write_text("nothing")
    code, out = _run(["grade", "subs", "--out", "book"])
    assert code == 0 and out.startswith("grading 2 submissions, 1 at a time (--jobs 1: 1 CPU in this process's "
                                        "affinity mask)\n"), out
    code, out = _run(["grade", "subs", "--out", "book", "--jobs", "2", "--force"])
    assert out.startswith("grading 2 submissions, 1 at a time\n"), out  # given, it is not explained
