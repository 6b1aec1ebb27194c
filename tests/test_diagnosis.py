"""Diagnosis: loaded before any learner code, silent when no catalogued mistake agrees, never for an overflow."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import ring_exercise

from grader.grading.pipeline import grade
from grader.grading.request import Run

REPO = Path(__file__).resolve().parent.parent

def reference_text() -> str:
    return ring_exercise().solution.read_text(encoding="utf-8")


def test_the_catalogue_is_loaded_before_the_learners_file():
    """Trusted first: a module the grader would import after the learner's code ran could be the learner's."""
    code = ("import sys; from pathlib import Path; from grader.course.exercise import load_exercise; "
            "from grader.grading import pipeline, request, worker_client; "
            "ex = load_exercise(Path('.'), Path('exercises/07-ring-attention')); "
            "ready = worker_client.WorkerClient.wait_ready\n"
            "def check(self, limit):\n"
            "    if self.load_result is None:\n"
            "        d = sys.modules.get('grader.grading.diagnosis')\n"
            "        print('catalogue' if d and d._CATALOGUES else 'none', 'diagnosis' if d else 'none')\n"
            "    return ready(self, limit)\n"
            "worker_client.WorkerClient.wait_ready = check\n"
            "r = pipeline.grade(request.Run(ex, ex.solution, 'run', 'cpu')); assert r.status == 'passed'")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["catalogue", "diagnosis"]


def test_an_all_nan_answer_gets_its_own_diagnosis(tmp_path):
    """Every output NaN says the arithmetic overflowed, not which catalogued mistake also overflows."""
    wrong = tmp_path / "nan.py"
    wrong.write_text(reference_text().replace("return output / total", "return output * float('nan')"), encoding="utf-8")
    report = grade(Run(ring_exercise(), wrong, "run", "cpu"))
    failed = [r for r in report.results if r.outcome.counts_as_failure]
    assert failed and {r.diagnosis.mistake for r in failed} == {"non-finite"}
    assert "NaN" in failed[0].diagnosis.title


def test_an_uncatalogued_mistake_gets_no_diagnosis(tmp_path):
    wrong = tmp_path / "doubled.py"
    # Twice the right output: wrong everywhere, and like no catalogued mistake.
    wrong.write_text(reference_text().replace("return output / total", "return 2 * output / total"), encoding="utf-8")
    report = grade(Run(ring_exercise(), wrong, "run", "cpu"))
    failed = [r for r in report.results if r.outcome.counts_as_failure]
    assert failed and all(r.function == "ring_attention" for r in failed)
    assert all(r.diagnosis is None for r in failed)


def test_a_catalogued_mistake_written_differently_is_named(tmp_path):
    if not (ring_exercise().mistakes / "add_without_rescale.py").is_file():
        import pytest

        pytest.skip("the catalogue has no add_without_rescale yet")
    wrong = tmp_path / "no_rescale.py"
    wrong.write_text(reference_text().replace("acc_scale = torch.exp(acc_max - new_max)", "acc_scale = 1.0")
                     .replace("chunk_scale = torch.exp(chunk_max - new_max)", "chunk_scale = 1.0"), encoding="utf-8")
    report = grade(Run(ring_exercise(), wrong, "run", "cpu"))
    names = {r.diagnosis.mistake for r in report.results if r.diagnosis}
    assert names == {"add_without_rescale"}


def _counting_runs(monkeypatch) -> list[str]:
    """Every catalogued mistake run on a case from now on, by stem (the behaviours start afresh)."""
    from grader.grading import diagnosis

    diagnosis._CATALOGUES.clear()
    calls: list[str] = []
    real = diagnosis._run

    def counted(mistake, *args):
        calls.append(mistake.stem)
        return real(mistake, *args)

    monkeypatch.setattr(diagnosis, "_run", counted)
    return calls


def test_a_mistake_named_once_is_tried_first_and_the_catalogue_is_not_run_on_every_case(monkeypatch):
    from grader.grading import diagnosis

    calls = _counting_runs(monkeypatch)
    report = grade(Run(ring_exercise(), REPO / "tests/fixtures/submissions/wrong_no_rescale.py", "submit", "cpu"))
    diagnosed = [r for r in report.results if r.diagnosis]
    assert len(diagnosed) > 50 and {r.diagnosis.mistake for r in diagnosed} == {"add_without_rescale"}
    catalogue = len(diagnosis.catalogue(ring_exercise()).mistakes)
    named = {stem for r in diagnosed for stem in r.extra["matches"]}  # two mistakes agree on this one's cases
    # The whole catalogue on the first failing case, then only the mistakes it named on each of the others.
    assert len(calls) <= catalogue + len(named) * len(diagnosed)
    assert len(calls) < catalogue * len(diagnosed) / 4


def test_when_the_mistakes_named_so_far_do_not_agree_the_whole_catalogue_is_searched(monkeypatch):
    from grader.grading import case

    calls = _counting_runs(monkeypatch)
    real_init = case.Judge.__init__

    def misled(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        self.named = ["first_chunk_skipped"]  # as if an earlier case had been explained by another mistake

    monkeypatch.setattr(case.Judge, "__init__", misled)
    report = grade(Run(ring_exercise(), REPO / "tests/fixtures/submissions/wrong_no_rescale.py", "run", "cpu"))
    diagnosed = [r for r in report.results if r.diagnosis]
    assert diagnosed and {r.diagnosis.mistake for r in diagnosed} == {"add_without_rescale"}
    assert "normalize_each_chunk" in calls  # a mistake never named before was run: the search went on


def test_agreement_is_measured_in_the_cases_bound_and_unlike_outputs_never_agree() -> None:
    import math

    import torch

    from grader.grading import agreement, compare

    expected = (torch.tensor([1.0, 2.0, 4.0], dtype=torch.float64),)
    bounds = agreement.Bounds(expected, None, torch.float64, compare.DEFAULT)
    unit = compare.error_bound(expected[0], torch.float64, None, compare.DEFAULT)
    mistake = agreement.prepared([expected[0] * 0.5])
    near = agreement.prepared([expected[0] * 0.5 + torch.tensor([0.0, 0.25, 0.0], dtype=torch.float64) * unit])
    assert agreement.distance(mistake, mistake, bounds) == 0.0
    assert math.isclose(agreement.distance(near, mistake, bounds), 0.25, rel_tol=1e-6)
    # A mistake far larger than the right answer is judged on its own scale.
    big = agreement.prepared([expected[0] * 100])
    bigger = agreement.prepared([expected[0] * 100 + torch.tensor([unit, 0.0, 0.0], dtype=torch.float64)])
    assert math.isclose(agreement.distance(bigger, big, bounds), 4 / 400, rel_tol=1e-6)
    with_nan = agreement.prepared([torch.tensor([math.nan, 1.0, 2.0], dtype=torch.float64)])
    with_inf = agreement.prepared([torch.tensor([math.inf, 1.0, 2.0], dtype=torch.float64)])
    for unlike in (with_nan, with_inf, agreement.prepared([expected[0].float()]), agreement.prepared([None]),
                   agreement.prepared([expected[0], expected[0]])):
        assert agreement.distance(mistake, unlike, bounds) == math.inf
    assert agreement.distance(with_nan, with_inf, bounds) == math.inf  # NaN where the other has inf
    assert agreement.distance(with_nan, with_nan, bounds) == 0.0


def test_a_symptom_gives_way_to_the_mistake_that_reproduces_it_and_the_rest_of_the_report(tmp_path):
    """01 without the max: every failing case is inf/inf or 0/0, which the catalogued mistake reproduces exactly."""
    from grader.course.exercise import load_exercise

    softmax = load_exercise(REPO, REPO / "exercises/01-stable-softmax")
    wrong = tmp_path / "softmax.py"
    wrong.write_text("import torch\n\n\ndef softmax(x, dim):\n    e = x.exp()\n    return e / e.sum(dim, keepdim=True)\n")
    report = grade(Run(softmax, wrong, "submit", "cpu"))
    failed = [r for r in report.results if r.outcome.counts_as_failure]
    assert failed and {r.diagnosis.mistake for r in failed} == {"no_max_subtraction"}, \
        {r.name: r.diagnosis and r.diagnosis.mistake for r in failed}
    assert failed[0].diagnosis.title == "Exponentiates the scores without subtracting the max"


def test_a_running_max_started_at_zero_is_named_on_every_failing_case(tmp_path):
    wrong = tmp_path / "zero_max.py"
    wrong.write_text(reference_text().replace(
        "    output, total, running_max = attention_chunk_stats(query, key_chunks[0], value_chunks[0])\n"
        "    for key_chunk, value_chunk in zip(key_chunks[1:], value_chunks[1:]):",
        "    output = query.new_zeros((*query.shape[:-1], value_chunks[0].shape[-1]))\n"
        "    total = query.new_zeros((*query.shape[:-1], 1))\n"
        "    running_max = torch.zeros_like(total)\n"
        "    for key_chunk, value_chunk in zip(key_chunks, value_chunks):"), encoding="utf-8")
    report = grade(Run(ring_exercise(), wrong, "submit", "cpu"))
    failed = [r for r in report.results if r.outcome.counts_as_failure]
    assert len(failed) >= 4 and any(r.extra.get("symptom") for r in failed)
    assert {r.diagnosis.mistake for r in failed if r.diagnosis} == {"running_max_starts_at_zero"}, \
        {r.name: r.diagnosis and r.diagnosis.mistake for r in failed}
    assert all(r.diagnosis for r in failed)


def test_a_symptom_no_mistake_explains_throughout_stays_a_symptom():
    from grader.grading.naming import SYMPTOM, Agreeing, choose

    # The mistake reproduces the NaN case, but another failing case disagrees with it: the symptom stays.
    named = choose({"nan": Agreeing(["zero_max", "no_max"], symptom=True), "finite": Agreeing(["other"]),
                    "nan-too": Agreeing(["zero_max"], symptom=True)})
    assert named == {"nan": SYMPTOM, "finite": "other", "nan-too": SYMPTOM}
    named = choose({"nan": Agreeing(["no_max", "zero_max"], symptom=True), "finite": Agreeing(["zero_max"]),
                    "nan-too": Agreeing(["zero_max"], symptom=True)})
    assert named == {"nan": "zero_max", "finite": "zero_max", "nan-too": "zero_max"}
    assert choose({"nan": Agreeing([], symptom=True)}) == {"nan": SYMPTOM}


def test_a_mistake_that_trips_on_a_transposed_input_is_named_where_it_trips(course, tmp_path):
    """Catalogued mistakes run on the inputs as the learner's code gets them: a transposed layout included."""
    from grader.course.exercise import find_exercise

    exercise = find_exercise(course, None)
    solution = exercise.solution.read_text(encoding="utf-8")
    line = "    scale = 1.0 / math.sqrt(query.shape[-1])\n"
    assert line in solution
    start = solution.index("def attention_chunk_stats(")
    function = solution[start:solution.index("\n\n\n", start)]
    (exercise.mistakes / "views_the_query.py").write_text(
        '"""Mistake: the query goes through view, which needs contiguous memory."""\n\n'
        'TITLE = "Reshapes the query with view"\nRATIONALE = "view needs contiguous memory."\n'
        'HELP = "Use reshape."\n\n\n' + function.replace(line, "    query = query.view(-1, query.shape[-1])"
                                                             ".view(query.shape)\n" + line) + "\n",
        encoding="utf-8")
    wrong = tmp_path / "views.py"  # the same mistake, written on one line of its own
    wrong.write_text(solution.replace(line, "    query = query.view(query.numel() // query.shape[-1], -1)"
                                            ".view(query.shape)\n" + line), encoding="utf-8")
    transposed = {"stats-transposed", "ring-transposed", "ring-transposed-float32"}
    report = grade(Run(exercise, wrong, "submit", "cpu", only=transposed | {"ring-two-batch-dims"}))
    failed = {r.name: r.diagnosis.mistake if r.diagnosis else None
              for r in report.results if r.outcome.counts_as_failure}
    assert failed == dict.fromkeys(transposed, "views_the_query")
