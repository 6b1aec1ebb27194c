"""Every rule proven live: validate warns for a forbidden operator or family no catalogued mistake calls, and for a rule
that no case can fail (a memory budget with no case audited for it, audited cases the checker gives no budget); a rule
that is live, as the fixture's layer norm family is, is not named."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import fixture_course, run_cli

from grader.course.checker import Checker
from grader.course.rules import memory


@pytest.fixture
def layer_norm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return fixture_course(tmp_path, monkeypatch, "03-layer-norm")


def warnings(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("warn ")]


def test_a_forbidden_operator_and_family_no_mistake_calls_are_named(layer_norm, capsys):
    path = layer_norm / "exercises/03-layer-norm/exercise.yaml"
    text = path.read_text()
    path.write_text(text.replace("    - family: layer_norm", "    - family: layer_norm\n    - aten.native_batch_norm\n"
                                 "    - family: softmax", 1))
    code, out = run_cli(capsys, "validate")
    assert code == 0, out  # a warning, never a failure
    assert warnings(out) == ["warn every forbidden operator and family is called by a catalogued mistake (called by "
                             "none: aten.native_batch_norm, family softmax; nothing then shows that the grader sees "
                             "them: add a mistake that calls each, with VIOLATES = \"forbidden\")"], out


def test_the_fixtures_own_family_is_live(layer_norm, capsys):
    code, out = run_cli(capsys, "validate")
    assert code == 0 and warnings(out) == [], out


def test_a_memory_budget_with_no_audited_case_can_fail_no_one(scale_course, capsys):
    checker = scale_course / "exercises/02-scale/checker.py"
    checker.write_text(checker.read_text() + "\n    def memory_budget(self, function, inputs):\n        return 1 << 30\n")
    code, out = run_cli(capsys, "validate")
    assert code == 0 and "warn every rule can fail on some case (the memory rule: no case has audit: [memory], so " \
                         "no case can fail it)" in out, out


def test_audited_cases_the_checker_gives_no_budget_can_fail_no_one(scale_course, capsys):
    path = scale_course / "exercises/02-scale/cases/hidden/more.yaml"
    path.write_text(path.read_text().replace("    factor: 1\n", "    factor: 1\n    audit: [memory]\n"))
    code, out = run_cli(capsys, "validate")
    assert "warn every rule can fail on some case (the memory rule: the checker gives none of the 1 cases with " \
           "audit: [memory] a budget, so no case can fail it)" in out, out


def test_each_rule_says_whether_it_is_declared():
    class Budgeted(Checker):
        def memory_budget(self, function, inputs):
            return 1

    assert memory.RULE.declared(None, Budgeted(), []) and not memory.RULE.declared(None, Checker(), [])
