"""`grader scale`: the growth fit, exercise.yaml's `scale` section, and the command on 07, 06 and a small course."""

from __future__ import annotations

import random
import re
import subprocess
import sys
import textwrap
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO, make_course

from grader.cli import main
from grader.course.exercise import load_exercise
from grader.errors import ConfigError
from grader.results.growth import fit_growth

RING_REFERENCE = REPO / "solutions" / "07-ring-attention" / "ring_attention.py"
MLP_REFERENCE = REPO / "solutions" / "06-tensor-parallel-matmul" / "tensor_parallel.py"
SIZES = [1, 2, 4, 8, 16, 32]
MIB = 1 << 20


# ---------------------------------------------------------------- the growth fit

@pytest.mark.parametrize("curve, label, exponent", [
    (lambda n: 5.0, "flat", 0.0),
    (lambda n: 3.0 * n, "linear", 1.0),
    (lambda n: 40.0 + 3.0 * n, "linear", 1.0),  # a fixed cost under the growth: still linear
    (lambda n: 0.5 * n * n, "quadratic", 2.0),
    (lambda n: n ** 0.5, "sqrt", 0.5),
    (lambda n: n ** 3, "cubic", 3.0),
])
def test_the_fit_names_each_growth_and_finds_its_exponent(curve, label, exponent) -> None:
    found = fit_growth(SIZES, [curve(n) for n in SIZES])
    assert found.label == label and abs(found.exponent - exponent) <= 0.02


@pytest.mark.parametrize("curve, label", [(lambda n: 5.0, "flat"), (lambda n: 3.0 * n, "linear"),
                                          (lambda n: n * n, "quadratic")])
def test_the_fit_holds_under_ten_percent_of_noise(curve, label) -> None:
    draw = random.Random(31)
    for _ in range(20):
        values = [curve(n) * (1 + draw.uniform(-0.1, 0.1)) for n in SIZES]
        assert fit_growth(SIZES, values).label == label, values


def test_a_rise_within_the_floor_is_flat_and_one_past_it_is_not() -> None:
    keys = [1024, 4096, 16384, 65536, 262144]
    reference = [0.25 * MIB, 0.7 * MIB, 0.9 * MIB, 1.2 * MIB, 3.5 * MIB]  # measured: a few KiB an input chunk
    kept = [0.2 * MIB, 1.0 * MIB, 2.8 * MIB, 9.4 * MIB, 35.4 * MIB]       # every score block alive
    assert fit_growth(keys, reference, floor=8 * MIB).label == "flat"
    assert fit_growth(keys, reference).label != "flat"  # without the floor its small rise would count
    assert fit_growth(keys, kept, floor=8 * MIB).label == "linear"


def test_scattered_figures_show_no_clear_growth_and_too_few_none() -> None:
    assert fit_growth(SIZES, [3.0, 40.0, 2.0, 35.0, 4.0, 30.0]).label == "noisy"
    assert fit_growth([1, 2], [1.0, 2.0]) is None
    assert fit_growth(SIZES, [1.0, None, None, None, None, 2.0]) is None


def test_the_words_name_the_growth() -> None:
    found = fit_growth(SIZES, [3.0 * n for n in SIZES])
    assert found.words("keys") == "grows linearly with the keys" and found.growing("keys").startswith("growing")


# ---------------------------------------------------------------- exercise.yaml's scale section

def _exercise_with(tmp_path: Path, section: str):
    root = make_course(tmp_path / "course", ["02-scale"], FIXTURES / "courses")
    path = root / "exercises" / "02-scale" / "exercise.yaml"
    path.write_text(path.read_text() + textwrap.dedent(section))
    return root, path


GOOD = """\
scale:
  function: scale
  axis: copies
  case: {shape: [4]}
  grow: factor
  sizes:
    - 1
    - 2
    - 4
    - 8
"""


def _line_of(path: Path, text: str) -> int:
    return next(number for number, line in enumerate(path.read_text().splitlines(), start=1) if text in line)


@pytest.mark.parametrize("change, marker, message", [
    (("    - 8\n", ""), "sizes:", "sizes must list 4 to 6 growing sizes, not 3"),
    (("    - 4\n", "    - 1.5\n"), "- 1.5", "sizes must grow: 1.5 comes after 2"),
    (("  axis: copies\n", "  axis: copies\n  sizez: [1]\n"), "sizez", "unknown key 'sizez'"),
    (("  grow: factor\n", "  grow: factor\n  measure: [memroy]\n"), "measure", "measure: 'memroy' is not one of"),
    (("  grow: factor\n", "  grow: factor\n  budget: 0\n"), "budget", "budget must be a positive number"),
    (("  grow: factor\n", ""), "- 1", "a size given as a number needs `grow`"),
    (("  axis: copies\n", "  axis: copies\n  says:\n    memory: {linaer: kept}\n"), "linaer",
     "says: memory: 'linaer' must be one of"),
    (("  function: scale\n", "  function: [scale]\n"), "function", "function must name the function"),
])
def test_a_malformed_section_is_one_line_naming_the_file_and_line(tmp_path, change, marker, message) -> None:
    root, path = _exercise_with(tmp_path, GOOD.replace(*change))
    with pytest.raises(ConfigError) as raised:
        load_exercise(root, path.parent)
    # Named from the course's root, as an instructor names it, wherever the checkout lies.
    assert str(raised.value).startswith(f"{path.relative_to(root)}:{_line_of(path, marker)}: scale: "), str(raised.value)
    assert message in str(raised.value)


@pytest.mark.parametrize("change, marker, message", [
    (("  case: {shape: [4]}\n", "  case:\n    shape: [4]\n    dtpye: float64\n"), "dtpye", "unknown key 'dtpye'"),
    (("    - 4\n", "    - {size: 4, factor: -1}\n"), "size: 4", "factor must be a non-negative integer"),
])
def test_a_size_the_checker_refuses_names_the_key_or_the_size(tmp_path, change, marker, message) -> None:
    from grader.course.checker import load_checker
    from grader.course.scale_spec import checked_params

    root, path = _exercise_with(tmp_path, GOOD.replace(*change))
    exercise = load_exercise(root, path.parent)
    with pytest.raises(ConfigError) as raised:
        checked_params(exercise.scale, load_checker(exercise.checker).validate)
    assert str(raised.value).startswith(f"{path.relative_to(root)}:{_line_of(path, marker)}: scale: size "), \
        str(raised.value)
    assert message in str(raised.value)


def test_the_course_declares_what_07_and_06_measure() -> None:
    ring = load_exercise(REPO, REPO / "exercises" / "07-ring-attention").scale
    mlp = load_exercise(REPO, REPO / "exercises" / "06-tensor-parallel-matmul").scale
    assert ring.measures[0] == "memory" and ring.sizes[0].value <= 1024 and ring.sizes[-1].value >= 256 * 1024
    assert ring.case["chunks"] == {"size": 1024} and ring.naive == ("keep_all_score_blocks",)
    assert "traffic" in mlp.measures and mlp.naive == ("gathers_hidden_activations",)
    assert len({len(size.sets["hidden"]) for size in mlp.sizes}) > 1  # the ranks grow too


# ---------------------------------------------------------------- the command

def _scale(capsys, *argv: str) -> tuple[int, list[str]]:
    code = main(["scale", *argv, "--device", "cpu"])
    out = capsys.readouterr().out
    assert "Traceback" not in out
    return code, out.splitlines()


def _line(lines: list[str], start: str) -> str:
    return next(line for line in lines if line.lstrip().startswith(start))


def _section(lines: list[str], heading: str) -> list[str]:
    at = next(index for index, line in enumerate(lines)
              if line.startswith(heading + " (") and not line.endswith("log-log"))  # the words, not the chart
    end = next(index for index in range(at, len(lines)) if not lines[index].strip())
    return lines[at:end]


def _well_formed(path: Path) -> ET.Element:
    svg = ET.parse(path).getroot()
    assert svg.tag == "{http://www.w3.org/2000/svg}svg"
    return svg


def _composed(course: Path, exercise: str, stem: str, stub: str) -> Path:
    from grader.course import mistakes

    path = course / f"{stem}.py"
    path.write_text(mistakes.compose(course / "solutions" / exercise / "mistakes" / f"{stem}.py",
                                     course / "solutions" / exercise / stub))
    return path


def test_07_draws_the_reference_flat_and_the_kept_score_blocks_linear(course, capsys) -> None:
    kept = _composed(course, "07-ring-attention", "keep_all_score_blocks", "ring_attention.py")
    code, lines = _scale(capsys, "07", "--file", str(kept), "--time-budget", "120")
    assert code == 0, lines
    memory = _section(lines, "peak memory")
    assert _line(memory, "reference:").strip().startswith("reference: flat: one chunk at a time")
    assert "yours: grows linearly with the keys" in "\n".join(memory) and "every score block is kept" in \
        _line(memory, "yours:")
    assert "naive: grows linearly with the keys" in "\n".join(memory)
    assert 'as the catalogue\'s "Keeps every chunk\'s score block alive" does, not as the reference\'s' in \
        "\n".join(lines)
    # The text says it all without the picture; the picture is drawn in the terminal and written to .grader/.
    assert any(line.startswith("peak memory, log-log") for line in lines)
    picture = course / ".grader" / "scale" / "07-ring-attention.svg"
    svg = _well_formed(picture)
    assert len(svg.findall(".//{http://www.w3.org/2000/svg}polyline")) == 6  # 3 designs, 2 measures
    assert "naive: Keeps every chunk's score block alive - peak memory grows linearly" in " ".join(svg.itertext())


@pytest.mark.parametrize("exercise, violates, said", [
    ("07-ring-attention", "peak-memory", "To see how your peak memory grows with the keys, beside the reference's: "
                                         "grader scale 07-ring-attention (at most 13 s)."),
    ("07-ring-attention", "materialization", "grader scale 07-ring-attention"),
    ("06-tensor-parallel-matmul", "communication", "To see how your ranks' traffic grows with the hidden units"),
    ("07-ring-attention", "forbidden", ""),        # no curve shows it
    ("06-tensor-parallel-matmul", "peak-memory", ""),  # 06 draws no memory curve
    ("07-ring-attention", "", ""),                 # wrong values: no rule broken
])
def test_a_submission_that_broke_a_drawn_rule_is_pointed_at_its_curve(exercise, violates, said) -> None:
    from grader.learner.submit import scale_step
    from grader.results import CaseResult, Outcome, Report

    broken = CaseResult("case", "hidden", "ring_attention", "cpu", Outcome.FAILED, extra={"violates": violates})
    passed = CaseResult("other", "hidden", "ring_attention", "cpu", Outcome.PASSED, extra={"violates": "forbidden"})
    step = scale_step(load_exercise(REPO, REPO / "exercises" / exercise), Report(exercise, "submit", "f.py", [passed, broken]))
    assert (said in step and step) if said else step == "", step


def test_07_on_the_reference_grows_as_the_reference_does(course, capsys) -> None:
    code, lines = _scale(capsys, "07", "--file", str(RING_REFERENCE), "--time-budget", "120")
    assert code == 0, lines
    memory = "\n".join(_section(lines, "peak memory"))
    assert "yours: flat: one chunk at a time" in memory and "naive: grows linearly with the keys" in memory
    assert "Your peak memory is flat, as the reference's is." in lines


def test_06_counts_each_ranks_bytes_in_all_reduces(tmp_path, monkeypatch, capsys) -> None:
    from grader.sandbox.machine import support

    if not support().namespaces:
        pytest.skip("the ranks' bytes are counted on a loopback of their own: no network namespace here")
    root = make_course(tmp_path / "course", ["06-tensor-parallel-matmul"])
    monkeypatch.setenv("GRADER_ROOT", str(root))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.chdir(root)
    gathers = _composed(root, "06-tensor-parallel-matmul", "gathers_hidden_activations", "tensor_parallel.py")
    code, lines = _scale(capsys, "06", "--file", str(gathers), "--time-budget", "120")
    assert code == 0, lines
    traffic = _section(lines, "bytes each rank moved")
    ratios = {name: [float(cell) for cell in re.findall(r"([\d.]+)x", _line(traffic, name + " "))]
              for name in ("yours", "reference")}
    assert len(ratios["reference"]) == 4 and all(0.8 <= ratio <= 1.3 for ratio in ratios["reference"]), traffic
    assert ratios["yours"][0] > 4 and ratios["yours"][-1] > 4 * ratios["yours"][0], traffic
    assert re.search(r"reference: each rank moves 1\.\dx one all-reduce at every size \(flat\)", "\n".join(traffic))
    assert "yours: each rank moves" in "\n".join(traffic) and "growing linearly with the hidden units" in \
        _line(traffic, "yours:")
    assert 'as the catalogue\'s "All-gathers the hidden activations" does' in "\n".join(lines)
    _well_formed(root / ".grader" / "scale" / "06-tensor-parallel-matmul.svg")


SLOW = """\
import time


def scale(x, factor):
    time.sleep({seconds} * factor)
    return x + x * 0 if factor else x - x
"""
NAIVE = '''\
"""Mistake: copies one at a time, slowly."""

TITLE = 'Adds <b>copies</b> & "waits"'
RATIONALE = "It waits."
HELP = "Do not wait."


def scale(x, factor):
    import time
    time.sleep(0.01 * factor)
    return x * factor
'''


def _slow_course(tmp_path: Path, monkeypatch) -> Path:
    root, path = _exercise_with(tmp_path, GOOD.replace("    - 8\n", "    - 8\n    - 16\n    - 32\n")
                                + "  naive: slow_copies\n  budget: 30\n")
    mistakes = root / "solutions" / "02-scale" / "mistakes"
    mistakes.mkdir(parents=True, exist_ok=True)
    (mistakes / "slow_copies.py").write_text(NAIVE)
    monkeypatch.setenv("GRADER_ROOT", str(root))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.chdir(root)
    return root


def test_a_run_past_its_budget_stops_at_the_sizes_it_reached_and_says_so(tmp_path, monkeypatch, capsys) -> None:
    root = _slow_course(tmp_path, monkeypatch)
    (root / "slow.py").write_text(SLOW.format(seconds=0.1))
    began = time.monotonic()
    code, lines = _scale(capsys, "--file", "slow.py", "--time-budget", "3")
    assert time.monotonic() - began < 3 + 3.0  # the budget, and the picture drawn after it
    text = "\n".join(lines)
    assert re.search(r"stopped (after|at) \d+ copies: .*budget of 3 s", text), text
    table = _section(lines, "time")
    assert len(re.findall(r"\d+(?:\.\d+)? (?:ms|s|us)", _line(table, "yours "))) < 6, table
    # The picture is written all the same, its texts escaped (the mistake's title holds markup).
    picture = root / ".grader" / "scale" / "02-scale.svg"
    svg = _well_formed(picture)
    assert 'Adds <b>copies</b> & "waits"' in " ".join(svg.itertext())
    assert "<b>" not in picture.read_text()
    assert code == 0


def test_a_call_still_running_when_the_budget_is_spent_is_stopped(tmp_path, monkeypatch, capsys) -> None:
    root = _slow_course(tmp_path, monkeypatch)
    (root / "slow.py").write_text(SLOW.format(seconds=2.0))  # 2 s for the warm-up, 4 s for the size after it
    began = time.monotonic()
    code, lines = _scale(capsys, "--file", "slow.py", "--time-budget", "3")
    assert time.monotonic() - began < 3 + 3.0
    text = "\n".join(lines)
    assert "stopped" in text and "budget" in text, text


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs CUDA")
def test_on_cuda_the_call_is_timed_by_events_and_its_memory_is_the_allocators(course) -> None:
    from grader.course.exercise import find_exercise
    from grader.grading.scale_run import measure_scale

    run = measure_scale(find_exercise(course, "07"), RING_REFERENCE, "cuda", 120)
    assert run.device == "cuda"
    mine = run.series[0].points
    assert len(mine) == 5 and all(point.seconds and point.seconds > 0 for point in mine)
    assert all(point.memory is not None for point in mine) and mine[-1].memory > 0


def test_list_and_run_never_load_the_pictures(course) -> None:
    """The picture's modules are imported by `grader scale` alone."""
    script = ("import sys\nfrom grader.cli import main\n"
              "main(['list']); main(['run', '--no-record'])\n"
              "print(sorted(name for name in sys.modules if name.startswith('grader.') and "
              "('scale_' in name or name.endswith('.scale'))))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=course, capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "PYTHONPATH": str(REPO)})
    loaded = done.stdout.strip().splitlines()[-1]
    assert "scale_chart" not in loaded and "scale_svg" not in loaded and "scale_words" not in loaded, loaded
    assert "grader.cli.scale" not in loaded, loaded


def test_what_a_rule_is_drawn_as_is_a_measure_grader_scale_takes() -> None:
    from grader.course.rules import DRAWN_AS
    from grader.course.scale_spec import MEASURES

    assert DRAWN_AS and set(DRAWN_AS.values()) <= set(MEASURES), DRAWN_AS
