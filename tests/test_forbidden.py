"""Forbidden operators: names that can never fire are refused, a family catches every public route to what it names,
and a mistake that breaks the rule is named by the rule and the operator it ran."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from conftest import REPO, fixture_course, make_course

from grader.cli import main
from grader.course import operators
from grader.sandboxed.observe import observe

EXERCISE = "exercises/03-layer-norm/exercise.yaml"


@pytest.fixture
def layer_norm_course(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private course of the test exercise 03-layer-norm, whose rule forbids the layer_norm family."""
    return fixture_course(tmp_path, monkeypatch, "03-layer-norm")


def run(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out = capsys.readouterr().out
    assert "Traceback" not in out
    return code, out


def write_rule(course: Path, rule: str) -> None:
    path = course / EXERCISE
    text = path.read_text()
    path.write_text(text[:text.index("rules:")] + f"rules:\n  forbidden:\n{rule}")


@pytest.mark.parametrize("rule, said", [
    ("    - aten.mul\n    - aten.layer_nrom\n",
     "exercise.yaml:10: rules: forbidden: aten.layer_nrom is no operator torch dispatches (did you mean "
     "aten.layer_norm or aten.native_layer_norm?)"),
    ("    - aten.matmul\n", "exercise.yaml:9: rules: forbidden: aten.matmul never reaches the grader's observer"),
    ("    - family: layer_nrom\n", "exercise.yaml:9: rules: forbidden: no family called 'layer_nrom' (known: "
                                   "layer_norm, softmax)"),
    ("    - torch.nn.functional.layer_norm\n", "exercise.yaml:9: rules: forbidden: 'torch.nn.functional.layer_norm' "
                                              "is neither an operator"),
])
def test_a_forbidden_name_that_can_never_fire_is_refused_naming_its_line(layer_norm_course, capsys, rule, said):
    write_rule(layer_norm_course, rule)
    code, out = run(capsys, "run", "--no-record")
    assert code == 2 and said in out and len(out.strip().splitlines()) == 1, out


def test_the_name_an_instructor_reaches_for_fires_through_what_torch_turns_it_into(layer_norm_course, capsys,
                                                                                    tmp_path):
    write_rule(layer_norm_course, "    - aten.layer_norm\n")
    shortcut = tmp_path / "layer_norm.py"
    shortcut.write_text("import torch\n\ndef layer_norm(x, eps):\n    return torch.nn.LayerNorm(x.shape[-1], eps=eps, "
                        "elementwise_affine=False, dtype=x.dtype)(x)\n")
    code, out = run(capsys, "run", "--file", str(shortcut), "--no-record", "--device", "cpu")
    assert code == 1 and "called aten.native_layer_norm, which this exercise forbids" in out, out


LAYER_NORM_ROUTES = {
    "F.layer_norm": lambda x: F.layer_norm(x, x.shape[-1:]),
    "nn.LayerNorm": lambda x: torch.nn.LayerNorm(x.shape[-1], dtype=x.dtype)(x),
    "group norm, one group": lambda x: F.group_norm(x, 1),
    "batch norm on x.T": lambda x: F.batch_norm(x.T, None, None, training=True).T,
    "batch norm with running stats": lambda x: F.batch_norm(x.T, torch.zeros(x.shape[0], dtype=x.dtype),
                                                            torch.ones(x.shape[0], dtype=x.dtype), training=False).T,
    "instance norm": lambda x: F.instance_norm(x.unsqueeze(0)).squeeze(0),
}
SOFTMAX_ROUTES = {
    "torch.softmax": lambda x: torch.softmax(x, -1),
    "F.softmax": lambda x: F.softmax(x, -1),
    "Tensor.softmax": lambda x: x.softmax(-1),
    "nn.Softmax": lambda x: torch.nn.Softmax(-1)(x),
    "softmin": lambda x: F.softmin(-x, -1),
    "log_softmax then exp": lambda x: x.log_softmax(-1).exp(),
    "special.softmax": lambda x: torch.special.softmax(x, -1),
    # softmax(q k^T / sqrt(d)) v with k = sqrt(d) I and v = I is softmax(q).
    "scaled_dot_product_attention": lambda x: F.scaled_dot_product_attention(
        x.unsqueeze(0), torch.eye(x.shape[-1], dtype=x.dtype).unsqueeze(0) * x.shape[-1] ** 0.5,
        torch.eye(x.shape[-1], dtype=x.dtype).unsqueeze(0)).squeeze(0),
}


@pytest.mark.parametrize("family, routes", [("layer_norm", LAYER_NORM_ROUTES), ("softmax", SOFTMAX_ROUTES)])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_a_family_catches_every_public_route_to_what_it_names(family, routes, dtype):
    """Each route run under the worker's own observer, as a learner's call is: the family sees it."""
    watched = sorted(operators.observed((operators.FAMILY_PREFIX + family,)))
    x = torch.randn(4, 6, dtype=dtype)
    for name, route in routes.items():
        with observe({"forbidden": watched}) as seen:
            route(x)
        assert seen["forbidden_seen"], f"{name} slips past the {family} family"


def test_what_a_family_allows_is_not_caught():
    """The honest ways stay open: a mean and a variance, exp and a sum, logsumexp."""
    watched = sorted(operators.observed(("family:layer_norm", "family:softmax")))
    x = torch.randn(4, 6, dtype=torch.float64)
    with observe({"forbidden": watched}) as seen:
        torch.var_mean(x, -1, keepdim=True, correction=0)
        (x - x.amax(-1, keepdim=True)).exp().sum(-1)
        (x - x.logsumexp(-1, keepdim=True)).exp()
    assert seen["forbidden_seen"] == []


def test_every_name_the_grader_widens_a_rule_to_is_an_operator_torch_has():
    named = set(operators.DECOMPOSES_INTO) | {name for names in operators.DECOMPOSES_INTO.values() for name in names}
    named |= {name for members, _ in operators.FAMILIES.values() for name in members}
    assert named and [name for name in sorted(named) if operators.problem(name)] == []


@pytest.mark.parametrize("body, mistake", [
    ("return torch.nn.LayerNorm(x.shape[-1], eps=eps, elementwise_affine=False, dtype=x.dtype)(x)",
     "calls_layer_norm"),
    ("return F.group_norm(x.reshape(-1, x.shape[-1]), 1, eps=eps).reshape(x.shape)", "group_norm_with_one_group"),
    ("return F.batch_norm(x.reshape(-1, x.shape[-1]).T, None, None, training=True, eps=eps).T.reshape(x.shape)",
     None),
])
def test_each_route_is_refused_and_named_after_the_mistake_that_took_it(layer_norm_course, capsys, tmp_path, body,
                                                                         mistake):
    """Two catalogued mistakes break the rule with right values: the operator each ran tells them apart, and a route
    no mistake took is named after none of them."""
    from grader.course.exercise import find_exercise
    from grader.grading.pipeline import grade
    from grader.grading.request import Run

    path = tmp_path / "layer_norm.py"
    path.write_text(f"import torch\nimport torch.nn.functional as F\n\n\ndef layer_norm(x, eps):\n    {body}\n")
    report = grade(Run(find_exercise(layer_norm_course, None), path, "submit", "cpu"))
    assert report.results and all(result.extra.get("violates") == "forbidden" for result in report.results)
    assert "layer norm by any route" in report.results[0].message
    assert {result.diagnosis.mistake if result.diagnosis else None for result in report.results} == {mistake}


def test_the_reference_and_its_variant_pass_and_the_fixture_is_valid(layer_norm_course, capsys):
    code, out = run(capsys, "validate", "03")
    assert code == 0 and "03-layer-norm is valid" in out, out
    assert "calls_layer_norm" in out and "group_norm_with_one_group" in out


def test_exercise_01_refuses_softmax_by_attention_too(tmp_path, capsys, monkeypatch):
    root = make_course(tmp_path / "course", ["01-stable-softmax"])
    monkeypatch.setenv("GRADER_ROOT", str(root))
    monkeypatch.chdir(root)
    attention = tmp_path / "softmax.py"
    attention.write_text("import torch\nimport torch.nn.functional as F\n\n\ndef softmax(x, dim):\n"
                         "    moved = x.movedim(dim, -1)\n    n = moved.shape[-1]\n"
                         "    eye = torch.eye(n, dtype=x.dtype)\n"
                         "    out = F.scaled_dot_product_attention(moved.reshape(1, -1, n), eye[None] * n ** 0.5,"
                         " eye[None])\n    return out.reshape(moved.shape).movedim(-1, dim)\n")
    code, out = run(capsys, "run", "--file", str(attention), "--no-record", "--device", "cpu")
    assert code == 1 and "which this exercise forbids (softmax by any route" in out, out
    assert REPO.joinpath("exercises/01-stable-softmax/exercise.yaml").read_text().count("family: softmax") == 1
