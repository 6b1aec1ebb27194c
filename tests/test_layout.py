"""The package's layers: each subpackage imports only those below it, no module cycle, exercises see only grader.api."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import REPO

from grader import PACKAGE

# Lowest first. A module may import its own part and any part of a lower layer; parts on one layer are
# siblings and never import each other. `grader` itself is the package's root: its version and its folder.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"grader", "errors", "inert", "files"}),
    frozenset({"results"}),
    frozenset({"channel"}),
    frozenset({"course", "sandbox", "sandboxed"}),
    frozenset({"grading"}),
    frozenset({"report"}),
    frozenset({"learner", "instructor", "staff"}),
    frozenset({"cli"}),
    frozenset({"api", "__main__", "notebook"}),
)
MAX_TOP_MODULES = 8
# The views know the results model and the base alone: never the engine, the course or the sandbox.
VIEWS = "report"
VIEWS_SEE = frozenset({VIEWS, "results"}) | LAYERS[0]


def module_name(path: Path, package: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(package: Path) -> dict[str, set[str]]:
    """Module -> the grader modules it imports, at the top or inside a function alike."""
    modules = {module_name(path, package): path for path in package.rglob("*.py") if "__pycache__" not in path.parts}
    found: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    targets.add(full if full in modules else node.module)
        found[name] = {target for target in targets if target in modules and target != name}
    return found


def part(module: str) -> str:
    pieces = module.split(".")
    return pieces[1] if len(pieces) > 1 else "grader"


def level(module: str) -> int:
    return next(index for index, parts in enumerate(LAYERS) if part(module) in parts)


def upward(graph: dict[str, set[str]]) -> list[str]:
    """Every import that reaches a higher layer, or a sibling part of the same layer."""
    wrong = []
    for module, targets in sorted(graph.items()):
        for target in sorted(targets):
            if part(target) != part(module) and level(target) >= level(module):
                wrong.append(f"{module} imports {target}")
    return wrong


def beyond_the_views(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a view module that reaches past the results model and the base."""
    return [f"{module} imports {target}" for module, targets in sorted(graph.items()) if part(module) == VIEWS
            for target in sorted(targets) if part(target) not in VIEWS_SEE]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_every_part_of_the_package_has_a_layer() -> None:
    parts = {part(module) for module in imports(PACKAGE)}
    assert parts == set().union(*LAYERS)


def test_no_import_runs_upward_or_sideways_across_the_layers() -> None:
    assert upward(imports(PACKAGE)) == []


def test_the_views_import_only_the_results_model_and_the_base() -> None:
    assert beyond_the_views(imports(PACKAGE)) == []


def test_the_view_rule_catches_an_import_of_the_engine() -> None:
    graph = {"grader.report.terminal": {"grader.grading.budget", "grader.results", "grader.inert"},
             "grader.report.summary": {"grader.report.layout", "grader.results.file"},
             "grader.report.layout": {"grader.course.exercise"}}
    assert beyond_the_views(graph) == ["grader.report.layout imports grader.course.exercise",
                                       "grader.report.terminal imports grader.grading.budget"]


def test_no_two_modules_import_each_other_even_through_others() -> None:
    assert cycles(imports(PACKAGE)) == []


def test_the_package_top_holds_few_modules() -> None:
    top = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_MODULES, top


@pytest.mark.parametrize("graph, wrong", [
    ({"grader.course.cases": {"grader.grading.compare"}, "grader.grading.compare": set()},
     ["grader.course.cases imports grader.grading.compare"]),
    ({"grader.learner.state": {"grader.staff.archive"}, "grader.staff.archive": set()},
     ["grader.learner.state imports grader.staff.archive"]),
])
def test_the_rule_catches_an_upward_or_a_sideways_import(graph, wrong) -> None:
    assert upward(graph) == wrong


def test_the_cycle_rule_catches_a_cycle_through_a_third_module() -> None:
    graph = {"grader.grading.a": {"grader.grading.b"}, "grader.grading.b": {"grader.grading.c"},
             "grader.grading.c": {"grader.grading.a"}, "grader.grading.d": {"grader.grading.a"}}
    assert cycles(graph) == [["grader.grading.a", "grader.grading.b", "grader.grading.c"]]


def exercise_imports(folder: Path) -> dict[str, set[str]]:
    found = {}
    for path in sorted(folder.rglob("*.py")):
        names = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "grader":
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names if alias.name.split(".")[0] == "grader")
        if names:
            found[str(path.relative_to(REPO))] = names
    return found


@pytest.mark.parametrize("folder", ["exercises", "tests/fixtures/courses"])
def test_exercise_code_imports_the_grader_only_through_its_api(folder) -> None:
    found = exercise_imports(REPO / folder)
    assert found and all(names == {"grader.api"} for names in found.values()), found


def test_the_api_names_every_thing_it_offers() -> None:
    import grader.api

    assert sorted(grader.api.__all__) == sorted(name for name in vars(grader.api) if not name.startswith("_")
                                                and name not in {"annotations"})


MAX_PARAMETERS = 6  # a function needing more takes an object that names what they are together (a Run, a Task)


def parameter_counts(package: Path) -> dict[str, int]:
    """module:function -> how many parameters it takes (self and cls not counted), for every function."""
    counts = {}
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                arguments = node.args
                names = [argument.arg for argument in arguments.posonlyargs + arguments.args]
                count = len(names) + len(arguments.kwonlyargs) + bool(arguments.vararg) + bool(arguments.kwarg)
                count -= bool(names) and names[0] in ("self", "cls")
                counts[f"{module_name(path, package)}:{node.name}:{node.lineno}"] = count
    return counts


def test_no_function_takes_more_than_six_parameters() -> None:
    counts = parameter_counts(PACKAGE)
    assert {name: count for name, count in counts.items() if count > MAX_PARAMETERS} == {}


def test_a_grade_is_asked_for_with_one_request_and_heard_by_one_listener() -> None:
    import inspect

    from grader.grading.pipeline import grade

    assert list(inspect.signature(grade).parameters) == ["run", "listener"]
