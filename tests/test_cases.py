"""Malformed case files meet the instructor as one line naming the file and the line."""

from __future__ import annotations

import pytest

from grader.cli import main
from grader.errors import ConfigError

EXAMPLES = "exercises/07-ring-attention/cases/examples.yaml"


def write_examples(course, text: str) -> None:
    (course / EXAMPLES).write_text(text)


@pytest.mark.parametrize("text, expected", [
    ("cases:\n  - name: a\n    function: ring_attention\n    chunks: [1, 2\n", "examples.yaml:5: not valid YAML: expected ',' or ']', but got '<stream end>' (parsing a flow sequence that starts on line 4)"),
    ("cases:\n  - name: a\n    function: nope\n", "examples.yaml:3: case 'a': unknown function 'nope'"),
    ("cases:\n  - function: ring_attention\n", "examples.yaml:2: missing required key 'name'"),
    ("cases:\n  - name: a\n    function: ring_attention\n    dtpye: float32\n",
     "examples.yaml:4: case 'a': unknown key 'dtpye'"),
    ("cases:\n  - name: a\n    function: ring_attention\n    dtype: float8\n",
     "examples.yaml:4: case 'a': dtype must be one of"),
    ("cases:\n  - name: a\n    function: ring_attention\n    chunks: [3, 0]\n",
     "examples.yaml:4: case 'a': chunks must be a non-empty list of positive lengths"),
    ("cases:\n  - name: a\n    function: ring_attention\n  - name: a\n    function: ring_attention\n",
     "examples.yaml:4: case name 'a' is also used at"),
    ("cases:\n  - name: a\n    function: ring_attention\n    lq: 2\n    lq: 3\n", "examples.yaml:5: key 'lq' appears twice"),
    ("cases: 3\n", "examples.yaml:1: 'cases' must be a list"),
    ("cases:\n  - name: a\n    function: attention_chunk_stats\n    values: {query: [[1.0]], key: [[1.0, 2.0]], "
     "value: [[1.0]]}\n", "examples.yaml:4: case 'a': values: query"),
])
def test_malformed_case_is_one_line_naming_file_and_line(course, capsys, text: str, expected: str) -> None:
    write_examples(course, text)
    code = main(["run", "--no-record"])
    out = capsys.readouterr().out
    assert code == 2
    assert out.startswith("error: ") and expected in out, out
    assert len(out.strip().splitlines()) == 1
    assert "Traceback" not in out


def test_config_error_names_path_and_line() -> None:
    error = ConfigError("bad", "cases.yaml", 7)
    assert str(error) == "cases.yaml:7: bad"


def test_repeat_expands_with_new_seeds(course) -> None:
    from conftest import ring_checker

    from grader.course.cases import load_case_file

    checker = ring_checker()
    path = course / EXAMPLES
    path.write_text("cases:\n  - name: r\n    function: ring_attention\n    seed: 10\n    repeat: 3\n"
                    "    chunks: {total: 13, random: 4}\n")
    cases = load_case_file(path, "examples", tuple(checker.functions), checker.validate)
    assert [case.name for case in cases] == ["r-1", "r-2", "r-3"]
    assert [case.params["seed"] for case in cases] == [10, 11, 12]
    splits = [checker.build_inputs("ring_attention", case.params).summary for case in cases]
    assert len(set(splits)) == 3  # different random boundaries
    again = [checker.build_inputs("ring_attention", case.params).summary for case in cases]
    assert splits == again  # and reproducible


def test_hidden_cases_reach_gradescope_learners_after_the_due_date_unless_they_say_otherwise(course) -> None:
    from conftest import ring_checker

    from grader.course.cases import load_case_file

    checker = ring_checker()
    text = "cases:\n  - name: a\n    function: ring_attention\n  - name: b\n    function: ring_attention\n" \
           "    visibility: after_published\n"
    path = course / EXAMPLES
    path.write_text(text)
    examples = load_case_file(path, "examples", tuple(checker.functions), checker.validate)
    hidden = load_case_file(path, "hidden", tuple(checker.functions), checker.validate)
    assert [case.visibility for case in examples] == ["visible", "after_published"]
    assert [case.visibility for case in hidden] == ["after_due_date", "after_published"]


def test_both_yaml_parsers_read_every_case_file_alike_lines_included() -> None:
    """libyaml reads valid files (fast); the pure-Python parser words the errors: they must agree on the rest."""
    from pathlib import Path

    import yaml

    from grader.course import yamlfile

    def lines(value):
        if isinstance(value, dict):
            return [value.line] + [line for item in value.values() for line in lines(item)]
        if isinstance(value, list):
            return [line for item in value for line in lines(item)]
        return []

    repo = Path(__file__).resolve().parent.parent
    files = sorted((repo / "exercises").rglob("*.yaml"))
    assert len(files) >= 8 and yamlfile._FastLoader is not yamlfile._Loader  # libyaml is there in our setup
    for path in files:
        text = path.read_text(encoding="utf-8")
        fast, pure = yaml.load(text, Loader=yamlfile._FastLoader), yaml.load(text, Loader=yamlfile._Loader)
        assert fast == pure and lines(fast) == lines(pure) and any(lines(fast)), path


@pytest.mark.parametrize("text, expected", [
    ("defaults:\n  dtype: float64\n  dtpye: float32\ncases:\n  - name: a\n    function: ring_attention\n",
     "examples.yaml:3: defaults: unknown key 'dtpye' for ring_attention"),
    ("defaults:\n  points: -1\ncases:\n  - name: a\n    function: ring_attention\n",
     "examples.yaml:2: defaults: points must be a number of at least 0 (as applied to case 'a')"),
    ("defaults:\n  function: nope\ncases:\n  - name: a\n", "examples.yaml:2: defaults: unknown function 'nope'"),
    ("defaults:\n  repeat: many\ncases:\n  - name: a\n    function: ring_attention\n",
     "examples.yaml:2: defaults: 'repeat' must be a int, not 'many'"),
    # The same key in the case itself is the case's own line, and the case is named.
    ("defaults:\n  points: 1\ncases:\n  - name: a\n    function: ring_attention\n    points: -1\n",
     "examples.yaml:6: case 'a': points must be a number of at least 0"),
    ("cases:\n  - name: a\n    function: ring_attention\n    lq: 2\n    repeat: 0\n",
     "examples.yaml:5: case 'a': repeat must be at least 1"),
])
def test_an_error_names_the_line_of_its_key_and_defaults_as_defaults(course, capsys, text: str, expected: str) -> None:
    write_examples(course, text)
    assert main(["run", "--no-record"]) == 2
    out = capsys.readouterr().out
    assert expected in out and len(out.strip().splitlines()) == 1, out


@pytest.mark.parametrize("written, value", [("2e-4", 2e-4), ("1e-5", 1e-5), ("1E3", 1000.0), (".5", 0.5),
                                            ("-1e30", -1e30), ("1.5e5", 150000.0), ("+1e3", 1000.0), ("3", 3),
                                            ("'2e-4'", "2e-4"), ("1e", "1e"), ("e5", "e5"), ("1e3x", "1e3x")])
def test_numbers_are_read_as_yaml_1_2_reads_them_by_both_parsers(written: str, value) -> None:
    import yaml

    from grader.course import yamlfile

    for loader in (yamlfile._FastLoader, yamlfile._Loader):
        found = yaml.load(f"tolerance: {{float32: {written}}}\n", Loader=loader)["tolerance"]["float32"]
        assert found == value and type(found) is type(value), (loader, written, found)


def test_the_readmes_own_tolerance_is_a_number_in_a_case(course) -> None:
    from conftest import ring_checker

    from grader.course.cases import load_case_file

    checker = ring_checker()
    path = course / EXAMPLES
    path.write_text("cases:\n  - name: a\n    function: ring_attention\n    tolerance: {float32: 2e-4}\n")
    [case] = load_case_file(path, "examples", tuple(checker.functions), checker.validate, checker.tolerance.override)
    assert case.tolerance == {"float32": 2e-4}
