"""`grader export learner`: a bundle with everything a learner needs, nothing that reveals answers, and a grader
that works in it as in the course (its own copy, run in a subprocess from the bundle)."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import pytest
import torch
import yaml
from conftest import REPO, SUBMISSIONS, make_course, ring_exercise

from grader.cli import main
from grader.course import mistakes
from grader.results import archive

EXERCISES = ("07-ring-attention", "01-stable-softmax")
HAND_IN = "upload the zip to the course site under Submissions"
# Added to the course's own examples (in the test's copy), so that the bundle has to store what these need too:
# a half-precision baseline, a case's own tolerance, time limit, points and a required flag, and a memory rule.
EXTRA_EXAMPLES = {
    "01-stable-softmax": """
  - name: extra-bfloat16-example
    about: a bfloat16 matrix, judged against the reference's own bfloat16 error
    shape: [4, 16]
    dim: -1
    dtype: bfloat16
    seed: 7
    tolerance: {half_factor: 3.0}
    time_limit: 20
    points: 2
    required: true
  - name: extra-float32-own-tolerance
    about: a float32 case with a tolerance of its own
    shape: [3, 5]
    dim: 0
    dtype: float32
    seed: 8
    tolerance: {float32: 2.0e-4}
""",
    "07-ring-attention": """
  - name: extra-memory-rule-example
    function: ring_attention
    about: a small sequence under the memory rule
    lq: 4
    d: 8
    chunks: {total: 4099, size: 512}
    audit: [memory]
    seed: 9
""",
}


# ---------------------------------------------------------------- fixtures and helpers

@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A course of exercises 07 and 01 (with the extra examples above) and its learner bundle."""
    ring_exercise()
    if not (REPO / "exercises" / EXERCISES[1]).is_dir():
        pytest.skip(f"the repository has no exercise {EXERCISES[1]}")
    course = make_course(tmp_path_factory.mktemp("course"), list(EXERCISES))
    for name, extra in EXTRA_EXAMPLES.items():
        with open(course / "exercises" / name / "cases" / "examples.yaml", "a", encoding="utf-8") as file:
            file.write(extra)
    bundle = tmp_path_factory.mktemp("exported") / "bundle"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GRADER_ROOT", str(course))
        patch.setenv("NO_COLOR", "1")
        assert main(["export", "learner", *EXERCISES, "-o", str(bundle), "--hand-in", HAND_IN]) == 0
    return course, bundle


@pytest.fixture
def bundle(exported: tuple[Path, Path], tmp_path: Path) -> Path:
    """A fresh copy of the bundle, for a test that changes the learner's file or progress."""
    return Path(shutil.copytree(exported[1], tmp_path / "bundle"))


def in_bundle(bundle: Path, *argv: str) -> subprocess.CompletedProcess:
    """The bundle's own grader, run from the bundle as a learner runs it."""
    env = {**os.environ, "GRADER_ROOT": str(bundle), "PYTHONPATH": str(bundle), "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "grader", *argv], cwd=bundle, env=env, capture_output=True,
                          text=True, timeout=300)


def example_names(course: Path, name: str) -> list[str]:
    data = yaml.safe_load((course / "exercises" / name / "cases" / "examples.yaml").read_text())
    return [case["name"] for case in data["cases"]]


def reference(course: Path, name: str) -> Path:
    return next((course / "solutions" / name).glob("*.py"))


def all_files(folder: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


# ---------------------------------------------------------------- what is in, what is out

def test_bundle_holds_what_a_learner_needs(exported) -> None:
    course, bundle = exported
    listing = yaml.safe_load((bundle / "exercises" / "course.yaml").read_text())
    assert listing["exercises"] == [f"exercises/{name}" for name in EXERCISES]
    assert listing["hand_in"] == HAND_IN
    readme = (bundle / "README.md").read_text()
    assert "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/grader run" in readme
    assert HAND_IN in readme and all(name in readme for name in EXERCISES)
    assert (bundle / "pyproject.toml").read_bytes() == (REPO / "pyproject.toml").read_bytes()
    package = {path.relative_to(REPO / "grader"): data for path, data in all_files(REPO / "grader").items()
               if "__pycache__" not in path.parts}
    assert {path.relative_to(bundle / "grader"): data for path, data in all_files(bundle / "grader").items()} == package
    for name in EXERCISES:
        folder, source = bundle / "exercises" / name, course / "exercises" / name
        settings = yaml.safe_load((folder / "exercise.yaml").read_text())
        stub = settings["stub"]
        assert settings["precomputed"] == "cases/examples.grader" and (folder / "cases" / "examples.grader").is_file()
        assert (folder / stub).read_bytes() == (source / "starter" / stub).read_bytes()
        assert (folder / "starter" / stub).read_bytes() == (source / "starter" / stub).read_bytes()
        assert (folder / "README.md").read_bytes() == (source / "README.md").read_bytes()
        hints = sorted(path.name for path in (course / "hints" / name).glob("*.md"))
        assert hints and sorted(path.name for path in (bundle / "hints" / name).iterdir()) == hints
        original = yaml.safe_load((source / "exercise.yaml").read_text())
        for key in ("name", "title", "time_limit", "memory_limit_mb", "max_score"):
            assert settings[key] == original[key]
        assert settings["rules"]["forbidden"] == original["rules"].get("forbidden", [])


def secrets(course: Path) -> tuple[dict[Path, bytes], set[str], set[str]]:
    """The files that must stay behind, the hidden case names, and the strings a mistake or variant shows."""
    files: dict[Path, bytes] = {}
    names: set[str] = set()
    texts: set[str] = set()
    for name in EXERCISES:
        folder = course / "exercises" / name
        # validate's record (solutions/EX/validated.json) names hidden cases and mistakes, both checked below.
        files.update({path: data for path, data in all_files(course / "solutions" / name).items()
                      if path.name != "validated.json"})
        files.update({path: data for path, data in all_files(folder).items()
                      if path.suffix == ".py" and "starter" not in path.parts and path.name != _stub(folder)})
        for path in [*(folder / "cases" / "hidden").glob("*.yaml"), *(folder / "cases").glob("ring*.yaml")]:
            files[path] = path.read_bytes()
            names |= {case["name"] for case in yaml.safe_load(path.read_text())["cases"]}
        for path in (course / "solutions" / name).rglob("*.py"):
            for node in ast.parse(path.read_text()).body:
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) \
                        and any(getattr(target, "id", "") in ("TITLE", "RATIONALE", "HELP") for target in node.targets):
                    texts.add(node.value.value)
    assert names and texts and any(path.name == "ring.py" for path in files) and len(texts) > 30
    return files, names, texts


def _stub(folder: Path) -> str:
    return yaml.safe_load((folder / "exercise.yaml").read_text())["stub"]


def words(text: str) -> str:
    """Text without its punctuation and layout: a line of code or YAML and the same words quoted elsewhere."""
    return " ".join(re.findall(r"[A-Za-z0-9_]+", text))


def test_nothing_that_reveals_answers_is_in_the_bundle(exported) -> None:
    from grader.course.checker import load_checker

    course, bundle = exported
    shipped = all_files(bundle)
    secret_files, hidden_names, shown_texts = secrets(course)
    # Text a learner is meant to have (statements, starters, hints, examples, the rules' own words, the grader):
    # any other line a secret file holds must not be in the bundle.
    allowed = words("\n".join(
        [data.decode() for path, data in all_files(course).items() if path.name in ("README.md", "examples.yaml")
         or "starter" in path.parts or "hints" in path.parts]
        + [json.dumps(load_checker(course / "exercises" / name / "checker.py").rule_reasons) for name in EXERCISES]
        + [path.read_text() for path in (REPO / "grader").rglob("*.py")]))
    distinctive = {line.strip() for data in secret_files.values() for line in data.decode().splitlines()
                   if len(line.strip()) >= 24 and words(line) not in allowed}
    assert len(distinctive) > 200
    for path, data in shipped.items():
        where = path.relative_to(bundle)
        assert not {"solutions", "mistakes", "variants", "hidden"} & set(where.parts), where
        assert not (where.parts[0] == "exercises" and path.name in ("checker.py", "ring.py", "ring_rank.py")), where
        assert not (where.parts[0] == "exercises" and path.suffix in (".yaml", ".yml") and "cases" in where.parts)
        assert data not in secret_files.values(), where
        for name in hidden_names:
            assert name.encode() not in data, (where, name)
        for text in shown_texts:
            assert text.encode() not in data, (where, text)
        for line in distinctive:
            assert line.encode() not in data, (where, line)


def test_stored_examples_are_what_the_course_computes(exported) -> None:
    from grader.course.cases import load_exercise_cases
    from grader.course.checker import load_checker
    from grader.course.exercise import load_exercise
    from grader.course.precomputed import load_precomputed
    from grader.grading.case import Judge
    from grader.grading.pipeline import load_reference

    course, bundle = exported
    for name in EXERCISES:
        exercise = load_exercise(course, course / "exercises" / name)
        checker = load_checker(exercise.checker)
        judge = Judge(exercise, checker, "", load_reference(exercise))
        cases = load_exercise_cases(exercise, checker, include_hidden=False)
        stored = load_precomputed(bundle / "exercises" / name / "cases" / "examples.grader")
        assert [case.name for case in stored.cases()] == [case.name for case in cases] == example_names(course, name)
        assert stored.rule_reasons == checker.rule_reasons and stored.span_unit == checker.span_unit
        assert {key: (f.arguments, f.outputs, f.uses) for key, f in stored.functions.items()} == \
               {key: (f.arguments, f.outputs, f.uses) for key, f in checker.functions.items()}
        for case, kept in zip(cases, stored.cases()):
            inputs, expected, baseline = judge.prepare(case)
            mine = stored.build_inputs(kept.function, kept.params)
            assert (kept.function, kept.about, kept.points, kept.required, kept.time_limit, kept.audit) == \
                   (case.function, case.about, case.points, case.required, case.time_limit, case.audit)
            assert _same(mine.args, inputs.args) and mine.summary == inputs.summary and mine.layout == inputs.layout
            assert mine.output_dtype() == inputs.output_dtype()
            assert _same(stored.expected(kept.function, mine), expected)
            assert _same(stored.baseline(kept.function, mine, None), baseline)
            assert stored.tolerance.override(kept.tolerance) == judge.tolerance(case)
            assert stored.span(kept.function, mine) == checker.span(case.function, inputs)
            assert stored.input_names(kept.function, mine) == checker.input_names(case.function, inputs)
            budget = checker.memory_budget(case.function, inputs) if "memory" in case.audit else None
            assert stored.memory_budget(kept.function, mine) == budget
        held = [stored.stored[case.name] for case in stored.cases()]
        # The extra examples make each exercise store what the course's own examples do not need.
        if name == "01-stable-softmax":
            assert any(case.baseline is not None for case in held) and any(case.case.tolerance for case in held)
        else:
            assert any(case.memory_budget for case in held) and any(case.span for case in held)


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == b.dtype \
            and torch.equal(a, b)
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


# ---------------------------------------------------------------- the grader in the bundle

@pytest.mark.parametrize("name", EXERCISES)
def test_run_on_the_stub_is_not_attempted(exported, name) -> None:
    course, bundle = exported
    done = in_bundle(bundle, "run", name, "--device", "cpu", "--no-record")
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    cases = example_names(course, name)
    for case in cases:
        assert any(line.startswith("TODO") and f" {case} (" in line for line in lines), case
    assert "Not attempted yet" in done.stdout
    assert lines[-1] == f"0 passed, 0 failed, {len(cases)} not attempted"


def _verdicts(results: dict) -> list[dict]:
    """Each case's verdict, as a results file has it; the catalogued mistakes it matches are the course's alone."""
    kept = []
    for test in results["tests"]:
        extra = dict(test["extra_data"], diagnosis=None)
        own = {key: value for key, value in extra.pop("extra", {}).items() if key != "matches"}
        extra.update({"extra": own} if own else {})
        output = [line for line in test["output"].splitlines() if not line.startswith("likely mistake:")]
        kept.append({**test, "extra_data": extra, "output": output})
    return kept


def _wrong_files(course: Path, name: str, folder: Path) -> list[Path]:
    if name == "07-ring-attention":
        return [SUBMISSIONS / "wrong_no_rescale.py"]
    catalogue = course / "solutions" / name / "mistakes"
    return [mistakes.as_submission(catalogue / f"{stem}.py", reference(course, name), folder)
            for stem in ("uses_torch_softmax", "subtract_max_in_place", "float32_output")]


@pytest.mark.parametrize("name", EXERCISES)
def test_verdicts_in_the_bundle_are_the_courses(exported, name, tmp_path) -> None:
    from grader.course.exercise import load_exercise
    from grader.grading.pipeline import grade
    from grader.grading.request import Run
    from grader.report.gradescope_json import report_to_json

    course, bundle = exported
    exercise = load_exercise(course, course / "exercises" / name)
    for file in [reference(course, name), *_wrong_files(course, name, tmp_path)]:
        results = tmp_path / f"{file.stem}.json"
        done = in_bundle(bundle, "run", name, "--device", "cpu", "--no-record", "--file", str(file),
                         "--json", str(results))
        in_course = report_to_json(grade(Run(exercise, file, "run", "cpu")))
        in_bundle_json = json.loads(results.read_text())
        assert _verdicts(in_bundle_json) == _verdicts(in_course), file.name
        passed = file.parent == course / "solutions" / name
        assert done.returncode == (0 if passed else 1), done.stdout
        if passed:
            assert [test["status"] for test in in_bundle_json["tests"]] == ["passed"] * len(example_names(course, name))
        else:
            assert in_bundle_json["extra_data"]["counts"]["failed"] >= 1
            assert all(test["extra_data"]["diagnosis"] is None for test in in_bundle_json["tests"])


def test_hint_status_show_list_and_reset_work_in_the_bundle(bundle) -> None:
    name = "07-ring-attention"
    done = in_bundle(bundle, "status", name)
    assert done.returncode == 0 and "No results yet" in done.stdout and "Hints opened: 0 of 3" in done.stdout
    from grader.course.hints import read_hint

    first = words(read_hint(sorted((bundle / "hints" / name).glob("*.md"))[0]).text).split()[:8]
    done = in_bundle(bundle, "hint", name)
    assert done.returncode == 0 and "Hint 1 of 3 (new)" in done.stdout and " ".join(first) in words(done.stdout)
    done = in_bundle(bundle, "status", name)
    assert "Hints opened: 1 of 3" in done.stdout
    done = in_bundle(bundle, "show", "07")
    assert done.returncode == 0 and "Ring attention" in done.stdout and "merge_chunk_stats" in done.stdout
    done = in_bundle(bundle, "list")
    assert done.returncode == 0 and all(exercise in done.stdout for exercise in EXERCISES)
    stub = bundle / "exercises" / name / "ring_attention.py"
    starter = stub.read_bytes()
    stub.write_text("# my work in progress\n")
    done = in_bundle(bundle, "reset", name)
    assert done.returncode == 0 and "Restored" in done.stdout
    assert stub.read_bytes() == starter
    backups = list((bundle / ".grader" / "backups" / name).iterdir())
    assert [path.read_text() for path in backups] == ["# my work in progress\n"]


def test_run_k_and_repro_work_from_the_stored_examples(exported, bundle) -> None:
    course, name = exported[0], EXERCISES[0]
    solution = reference(course, name)
    done = in_bundle(bundle, "run", "07", "-k", "stats-tiny", "--file", str(solution), "--device", "cpu", "--no-record")
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == "1 passed, 0 failed", done.stdout + done.stderr
    done = in_bundle(bundle, "repro", "stats-tiny-by-hand", "07", "--file", str(solution))
    assert done.returncode == 0 and done.stdout.startswith("Wrote .grader/repro/stats-tiny-by-hand.py"), done.stdout
    script = subprocess.run([sys.executable, ".grader/repro/stats-tiny-by-hand.py"], cwd=bundle, capture_output=True,
                            text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(bundle)})
    assert script.returncode == 0, script.stderr
    assert "inputs: query (1, 2), keys (2, 2), values (2, 3), float64" in script.stdout
    assert "result: (tensor(" in script.stdout and "largest error against the exact answer" in script.stdout
    hidden = next((course / "exercises" / name / "cases" / "hidden").glob("*.yaml"))
    hidden_name = yaml.safe_load(hidden.read_text())["cases"][0]["name"]
    done = in_bundle(bundle, "repro", hidden_name, "07")
    assert done.returncode == 2 and hidden_name not in done.stdout.split("its examples:")[1]


def test_ring_suite_in_the_bundle_is_a_one_line_usage_error(exported) -> None:
    done = in_bundle(exported[1], "run", "07", "--ring", "2", "--no-record")
    assert done.returncode == 2
    said = (done.stdout + done.stderr).strip().splitlines()
    assert said == ["error: --ring: 07-ring-attention has no distributed suite"]


@pytest.mark.parametrize("argv", [["run", "07", "-k", "nosuch"], ["run", "07", "--ring", "2"], ["repro", "nosuch", "07"]])
def test_typos_in_the_bundle_are_answered_without_torch(exported, argv) -> None:
    """The stored examples' names are read from their file's header: no torch for a name that matches none."""
    bundle = exported[1]
    env = {**os.environ, "GRADER_ROOT": str(bundle), "PYTHONPATH": str(bundle), "NO_COLOR": "1"}
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "grader", *argv, *(["--no-record"] * (
        argv[0] == "run"))], cwd=bundle, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and len(done.stdout.splitlines()) == 1, done.stdout
    assert "stats-tiny-by-hand" in done.stdout or "no distributed suite" in done.stdout
    assert not [line for line in done.stderr.splitlines() if line.rstrip().endswith("| torch")], argv


def test_damaged_examples_are_one_line_naming_the_file(bundle) -> None:
    stored = bundle / "exercises" / "01-stable-softmax" / "cases" / "examples.grader"
    stored.write_bytes(stored.read_bytes()[:-100])
    done = in_bundle(bundle, "run", "01", "--no-record")
    said = (done.stdout + done.stderr).strip().splitlines()
    assert done.returncode == 2 and len(said) == 1 and str(stored.relative_to(bundle)) in said[0]
    assert "Traceback" not in done.stderr


# ---------------------------------------------------------------- submitting from the bundle

def test_submit_writes_an_archive_that_verifies(exported, bundle) -> None:
    course, _ = exported
    name = "07-ring-attention"
    solution = reference(course, name).read_bytes()
    (bundle / "exercises" / name / "ring_attention.py").write_bytes(solution)
    done = in_bundle(bundle, "submit", name, "--device", "cpu")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert f"{len(example_names(course, name))} passed, 0 failed" in lines
    assert "hidden" not in done.stdout.split("\n", 1)[0]  # the examples ran, and only they
    archives = list((bundle / "submissions").glob("*.zip"))
    assert len(archives) == 1 and archives[0].name.startswith(f"{name}-")
    assert lines[-1].startswith(f"Wrote submissions/{archives[0].name} ") and lines[-1].endswith(f"{HAND_IN}.")
    kept = archive.read_submission(archives[0], name)
    assert kept.files == {"ring_attention.py": solution} and kept.exercise == name
    assert kept.manifest.files[0].sha256 == hashlib.sha256(solution).hexdigest()
    assert kept.manifest.content_sha256 == archive.content_hash(kept.files)
    again = in_bundle(bundle, "submit", name, "--device", "cpu")
    assert again.returncode == 0 and len(list((bundle / "submissions").glob("*.zip"))) == 2


def test_archives_never_overwrite_each_other(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(archive, "now", lambda pattern="": "20250101T000000")
    first = archive.write_submission(tmp_path, "01-stable-softmax", {"softmax.py": b"one\n"})
    second = archive.write_submission(tmp_path, "01-stable-softmax", {"softmax.py": b"two\n"})
    assert (first.path.name, second.path.name) == ("01-stable-softmax-20250101T000000.zip",
                                                   "01-stable-softmax-20250101T000000-2.zip")
    assert archive.read_submission(first.path).files == {"softmax.py": b"one\n"}
    assert archive.read_submission(second.path).files == {"softmax.py": b"two\n"}


def _rewrite(path: Path, members: list[tuple[zipfile.ZipInfo | str, bytes]]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zipped, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # zipfile warns of a name written twice, which is the point
        for info, data in members:
            zipped.writestr(info, data)
    return path


def _hostile(kind: str, good: archive.Archive, path: Path) -> Path:
    with zipfile.ZipFile(good.path) as zipped:
        manifest = zipped.read("manifest.json")
    code = good.files["softmax.py"]
    if kind == "tampered":
        return _rewrite(path, [("softmax.py", code + b"# changed\n"), ("manifest.json", manifest)])
    if kind == "file-missing":
        return _rewrite(path, [("manifest.json", manifest)])
    if kind == "file-added":
        return _rewrite(path, [("softmax.py", code), ("extra.py", b""), ("manifest.json", manifest)])
    if kind == "no-manifest":
        return _rewrite(path, [("softmax.py", code)])
    if kind == "manifest-not-json":
        return _rewrite(path, [("softmax.py", code), ("manifest.json", b"{not json")])
    if kind == "manifest-hash-edited":
        data = json.loads(manifest)
        data["content_sha256"] = "0" * 64
        return _rewrite(path, [("softmax.py", code), ("manifest.json", json.dumps(data).encode())])
    if kind == "path-traversal":
        return _rewrite(path, [("../softmax.py", code), ("manifest.json", manifest)])
    if kind == "absolute-path":
        return _rewrite(path, [("/tmp/softmax.py", code), ("manifest.json", manifest)])
    if kind == "folder":
        return _rewrite(path, [("sub/softmax.py", code), ("manifest.json", manifest)])
    if kind == "symlink":
        link = zipfile.ZipInfo("softmax.py")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        return _rewrite(path, [(link, b"/etc/passwd"), ("manifest.json", manifest)])
    if kind == "twice":
        return _rewrite(path, [("softmax.py", code), ("softmax.py", code), ("manifest.json", manifest)])
    if kind == "too-many-members":
        return _rewrite(path, [(f"f{number}.py", b"") for number in range(archive.MAX_MEMBERS + 1)])
    if kind == "huge-member":  # a few KiB compressed, many MiB unpacked
        return _rewrite(path, [("softmax.py", b"\0" * (archive.MAX_MEMBER_BYTES + 1)), ("manifest.json", manifest)])
    if kind == "huge-archive":
        path.write_bytes(good.path.read_bytes() + os.urandom(archive.MAX_ARCHIVE_BYTES))
        return path
    if kind == "not-a-zip":
        path.write_bytes(b"PK\x03\x04 but nothing after")
        return path
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["tampered", "file-missing", "file-added", "no-manifest", "manifest-not-json",
                                  "manifest-hash-edited", "path-traversal", "absolute-path", "folder", "symlink",
                                  "twice", "too-many-members", "huge-member", "huge-archive", "not-a-zip"])
def test_a_tampered_or_hostile_archive_is_refused_in_one_line(tmp_path, kind) -> None:
    good = archive.write_submission(tmp_path / "good", "01-stable-softmax", {"softmax.py": b"def softmax(): ...\n"})
    path = _hostile(kind, good, tmp_path / "bad.zip")
    with pytest.raises(archive.ArchiveError) as refused:
        archive.read_submission(path, "01-stable-softmax")
    message = str(refused.value)
    assert message.startswith(f"{path}: ") and "\n" not in message and len(message) < 400


def test_an_archive_for_another_exercise_is_refused(tmp_path) -> None:
    good = archive.write_submission(tmp_path, "01-stable-softmax", {"softmax.py": b"x = 1\n"})
    with pytest.raises(archive.ArchiveError, match="not '07-ring-attention'"):
        archive.read_submission(good.path, "07-ring-attention")


# ---------------------------------------------------------------- the export command

def test_export_of_the_whole_course_by_default(course, tmp_path, capsys) -> None:
    assert main(["export", "learner", "-o", str(tmp_path / "out")]) == 0
    assert "1 exercise (07-ring-attention)" in capsys.readouterr().out
    listing = yaml.safe_load((tmp_path / "out" / "exercises" / "course.yaml").read_text())
    assert listing["exercises"] == ["exercises/07-ring-attention"]
    assert listing["hand_in"] == "hand it in as your course asks"


@pytest.mark.parametrize("argv, said", [
    (["nothing-like-it"], "no exercise called 'nothing-like-it'"),
    (["--hand-in", "two\nlines"], "--hand-in must be one line"),
])
def test_export_errors_are_one_line(course, tmp_path, capsys, argv, said) -> None:
    code = main(["export", "learner", *argv, "-o", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert code == 2 and out.strip().splitlines() == [f"error: {out.strip().removeprefix('error: ')}"]
    assert said in out and not (tmp_path / "out").exists()


def test_export_never_writes_over_a_folder(course, tmp_path, capsys) -> None:
    target = tmp_path / "out"
    target.mkdir()
    (target / "my-work.py").write_text("keep me\n")
    assert main(["export", "learner", "-o", str(target)]) == 2
    out = capsys.readouterr().out.strip()
    assert out.splitlines() == [out] and str(target) in out and "not an empty folder" in out
    assert [path.name for path in target.iterdir()] == ["my-work.py"]


def test_a_failed_export_leaves_nothing_behind(course, tmp_path, capsys) -> None:
    starter = course / "exercises" / "07-ring-attention" / "starter" / "ring_attention.py"
    starter.unlink()
    target = tmp_path / "exports" / "out"
    assert main(["export", "learner", "-o", str(target)]) == 2
    out = capsys.readouterr().out.strip()
    assert out.splitlines() == [out] and str(starter.relative_to(course)) in out and "missing" in out
    assert list((tmp_path / "exports").iterdir()) == []  # neither the bundle nor the folder it was built in
