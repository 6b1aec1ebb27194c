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
    ("cases:\n  - name: a\n    function: nope\n", "examples.yaml:2: case 'a': unknown function 'nope'"),
    ("cases:\n  - function: ring_attention\n", "examples.yaml:2: missing required key 'name'"),
    ("cases:\n  - name: a\n    function: ring_attention\n    dtpye: float32\n",
     "examples.yaml:2: case 'a': unknown key 'dtpye'"),
    ("cases:\n  - name: a\n    function: ring_attention\n    dtype: float8\n",
     "examples.yaml:2: case 'a': dtype must be one of"),
    ("cases:\n  - name: a\n    function: ring_attention\n    chunks: [3, 0]\n",
     "examples.yaml:2: case 'a': chunks must be a non-empty list of positive lengths"),
    ("cases:\n  - name: a\n    function: ring_attention\n  - name: a\n    function: ring_attention\n",
     "examples.yaml:4: case name 'a' is also used at"),
    ("cases:\n  - name: a\n    function: ring_attention\n    lq: 2\n    lq: 3\n", "examples.yaml:5: key 'lq' appears twice"),
    ("cases: 3\n", "examples.yaml:1: 'cases' must be a list"),
    ("cases:\n  - name: a\n    function: attention_chunk_stats\n    values: {query: [[1.0]], key: [[1.0, 2.0]], "
     "value: [[1.0]]}\n", "examples.yaml:2: case 'a': values: query"),
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
