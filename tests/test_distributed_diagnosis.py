"""A failing distributed case is named as any other, in the terminal, grades.csv and Gradescope's output.

Public tensor-parallel code, shimmed to exercise 06's contract (tests/fixtures/public_tp/), is judged as its
authors' history says: Megatron-LM's and fairscale's column/row pairs are accepted; SGLang's row-parallel
layer built with reduce_results=False (never reduced) and a shared expert whose output vLLM reduced twice are
refused, each named after the catalogued mistake that explains it, with the bytes the ranks moved beside it.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from conftest import FIXTURES, make_course, run_cli

from grader.course.exercise import load_exercise
from grader.grading import distributed_diagnosis
from grader.grading.distributed_diagnosis import Evidence
from grader.grading.pipeline import grade
from grader.grading.request import Run
from grader.results import CaseResult, Outcome
from grader.results.from_report import results_file

TP = "06-tensor-parallel-matmul"
SHIMS = FIXTURES / "public_tp"
UNREDUCED = ("sglang_row_parallel_never_reduced", "forgets_the_all_reduce", "0 B sent: no rank sent another a byte")
# Twice the bytes of one all-reduce, as the kernel counts them: the protocol's own few per cent make it 2.0 or 2.1.
TWICE = ("vllm_shared_expert_reduced_twice", "all_reduces_twice", r"2\.[01] times what is needed, where one all-reduce")


@pytest.fixture(scope="module")
def tensor_parallel(tmp_path_factory: pytest.TempPathFactory):
    root = make_course(tmp_path_factory.mktemp("tp") / "course", [TP])
    return load_exercise(root, root / "exercises" / TP)


@pytest.mark.parametrize("shim", ["megatron_parallel_mlp", "fairscale_parallel_mlp"])
def test_public_tensor_parallel_pairs_with_their_all_reduce_are_accepted(tensor_parallel, shim) -> None:
    report = grade(Run(tensor_parallel, SHIMS / f"{shim}.py", "submit", "cpu"))
    distributed = [result for result in report.results if result.suite == "distributed"]
    assert report.status == "passed" and distributed and all(result.passed for result in distributed), [
        (result.name, result.message) for result in report.results if not result.passed]


@pytest.mark.parametrize("shim, mistake, clue", [UNREDUCED, TWICE])
def test_public_row_parallel_bugs_are_refused_and_named_with_the_bytes_moved(tensor_parallel, shim, mistake,
                                                                            clue) -> None:
    report = grade(Run(tensor_parallel, SHIMS / f"{shim}.py", "submit", "cpu"))
    failed = [result for result in report.results if not result.passed]
    # The single-process layers are right: only the group's output is wrong, on every case of the suite.
    assert failed and all(result.suite == "distributed" for result in failed)
    assert len(failed) == len([result for result in report.results if result.suite == "distributed"])
    for result in failed:
        assert result.outcome is Outcome.FAILED and result.diagnosis and result.diagnosis.mistake == mistake, (
            result.message, result.diagnosis)
        assert any(re.search(clue, line) for line in result.details), result.details
    # Gradescope's output names it as for any other case.
    test = next(test for test in results_file(report).tests if test.extra_data.case == failed[0].name)
    assert f"likely mistake: {failed[0].diagnosis.title}." in test.output and re.search(clue, test.output)
    assert test.extra_data.diagnosis.mistake == mistake


def test_a_cohort_names_the_distributed_mistake_in_grades_csv(tensor_parallel, tmp_path, monkeypatch,
                                                             capsys) -> None:
    monkeypatch.setenv("GRADER_ROOT", str(tensor_parallel.root))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.chdir(tmp_path)
    for shim, *_ in (UNREDUCED, TWICE):
        (tmp_path / "cohort" / shim).mkdir(parents=True)
        (tmp_path / "cohort" / shim / "tensor_parallel.py").write_bytes((SHIMS / f"{shim}.py").read_bytes())
    code, lines = run_cli(capsys, "grade", str(tmp_path / "cohort"), "--out", str(tmp_path / "book"), "--jobs", "1")
    assert code == 0, lines
    rows = {row["submission"]: row for row in csv.DictReader((tmp_path / "book/grades.csv").open())}
    assert rows[UNREDUCED[0]]["diagnosis"] == "Returns this rank's partial sum without the all-reduce"
    assert rows[TWICE[0]]["diagnosis"] == "All-reduces the output twice"


def _evidence(outputs, raised="", traffic=100, violates="", fails=True) -> Evidence:
    return Evidence(tuple(outputs), raised, traffic, violates, fails)


def test_agreement_on_a_group_is_every_rank_within_its_bound_and_ties_go_to_the_nearest_bytes() -> None:
    expected = [torch.ones(4, dtype=torch.float64), torch.ones(4, dtype=torch.float64)]
    inputs = SimpleNamespace(expected=expected, baseline=None, dtype=torch.float64)
    partial = [torch.full((4,), 0.5, dtype=torch.float64)] * 2
    mine = _evidence(partial, traffic=0)
    behaviours = {
        "moves_nothing": _evidence(partial, traffic=0),
        "moves_as_much_as_a_reduce": _evidence(partial, traffic=35_000),
        "one_rank_differs": _evidence([partial[0], torch.full((4,), 3.0, dtype=torch.float64)]),
        "raises": _evidence([None, None], raised="RuntimeError: shapes"),
        "passes": _evidence(expected, fails=False),
        "breaks_the_rule": _evidence(expected, violates="communication"),
    }
    assert distributed_diagnosis.agreeing(mine, behaviours, inputs) == ["moves_nothing", "moves_as_much_as_a_reduce"]
    raising = _evidence([None, None], raised="RuntimeError: shapes")
    assert distributed_diagnosis.agreeing(raising, behaviours, inputs) == ["raises"]
    over = _evidence(expected, violates="communication", traffic=500_000)
    assert distributed_diagnosis.agreeing(over, behaviours, inputs) == ["breaks_the_rule"]


@pytest.mark.parametrize("traffic, shown", [(0, "0 B sent"), (36_000, None), (72_000, "2.0 times"), (None, None)])
def test_the_bytes_are_said_only_where_they_are_the_clue(traffic, shown) -> None:
    result = CaseResult("tp2-even", "distributed", "parallel_mlp", "cpu", Outcome.FAILED)
    group = SimpleNamespace(traffic=traffic, inputs=SimpleNamespace(world=2))
    distributed_diagnosis._clue(result, group, 36_000, "one all-reduce moves 36,000 B")
    if shown is None:
        assert not result.details
    else:
        assert len(result.details) == 1 and shown in result.details[0], result.details


def test_only_mistakes_of_the_functions_the_ranks_call_are_run_in_the_suite(tensor_parallel) -> None:
    suite = SimpleNamespace(function="parallel_mlp", uses=())
    found = {mistake.stem for mistake in distributed_diagnosis.candidates(tensor_parallel, suite)}
    assert found == {"all_reduces_twice", "forgets_the_all_reduce", "gathers_hidden_activations",
                     "relu_after_the_all_reduce"}
    assert not Path(tensor_parallel.mistakes / "linear_transposes_the_shards.py").read_text().count("def parallel_mlp")
