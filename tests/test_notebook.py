"""The notebook front door: `%load_ext grader`, `%grader ...` and `%%grader_file`, in a kernel nbclient runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, make_course

SOFTMAX = "01-stable-softmax"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def cell_text(cell) -> str:
    """Everything a cell showed, as plain text: its streams and the plain-text side of its rich displays."""
    parts = []
    for output in cell.outputs:
        if output.output_type == "stream":
            parts.append(output.text)
        elif output.output_type in ("display_data", "execute_result"):
            parts.append(output.data.get("text/plain", ""))
    return ANSI.sub("", "\n".join(parts))


@pytest.fixture(scope="module")
def notebook(tmp_path_factory):
    """A notebook run top to bottom in a fresh kernel whose working folder is a private copy of the course."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    root = make_course(tmp_path_factory.mktemp("notebook") / "course", [SOFTMAX])
    reference = root / "solutions" / SOFTMAX / "softmax.py"
    repo_stub = (REPO / "exercises" / SOFTMAX / "softmax.py").read_bytes()
    sources = [
        "%load_ext grader",
        f"%grader run {SOFTMAX} --file '{reference}' --no-record",
        "%%grader_file 01\n" + reference.read_text(encoding="utf-8"),
        "%grader run 01 --no-record",
        "%grader run no-such-exercise",
        "%grader no-such-command",
        "%%grader_file\nprint('which exercise?')\n",
        "import os\nos.environ.pop('NO_COLOR', None)",  # colour from here on
        f"%grader run {SOFTMAX} --file '{reference}' --no-record -k tiny",
        f"%grader submit {SOFTMAX} --file '{reference}' --no-record",
    ]
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    # The course is found from the kernel's working folder, as the command finds it from the shell's; the
    # grader imported is this checkout's.
    env = {name: value for name, value in os.environ.items() if name not in ("GRADER_ROOT", "COLUMNS")}
    env.update(PYTHONPATH=str(REPO), NO_COLOR="1")
    client = nbclient.NotebookClient(book, timeout=240, kernel_name="python3",
                                     resources={"metadata": {"path": str(root)}})
    client.execute(env=env)
    assert (REPO / "exercises" / SOFTMAX / "softmax.py").read_bytes() == repo_stub
    return root, reference, book.cells


def test_a_run_in_a_cell_shows_the_report_as_rich_output(notebook) -> None:
    root, reference, cells = notebook
    shown = cell_text(cells[1])
    assert f"{SOFTMAX}:" in shown and "on examples" in shown
    assert "PASS" in shown and "tiny-by-hand" in shown
    assert shown.rstrip().endswith("5 passed, 0 failed")
    # Rich's notebook output, not text written to the kernel's stdout.
    assert any(output.output_type == "display_data" and "text/html" in output.data for output in cells[1].outputs)


@pytest.mark.parametrize("index", [1, 3, 8, 9])
def test_a_report_is_one_output_of_its_cell_with_plain_text_free_of_escape_codes(notebook, index) -> None:
    root, reference, cells = notebook
    outputs = cells[index].outputs
    assert [output.output_type for output in outputs] == ["display_data"], outputs
    data = outputs[0].data
    assert "\x1b" not in data["text/plain"] and data["text/plain"].rstrip().endswith(" failed")
    assert data["text/html"].startswith("<pre") and "\x1b" not in data["text/html"]


def test_in_colour_the_html_keeps_the_colours_and_the_text_none(notebook) -> None:
    root, reference, cells = notebook
    data = cells[8].outputs[0].data
    assert "PASS" in data["text/plain"] and "color:" in data["text/html"]
    assert "Only the examples matching -k 'tiny' ran (1)." in data["text/plain"]
    assert "Accepted." in cells[9].outputs[0].data["text/plain"]


def test_a_grader_file_cell_writes_the_exercise_file_and_says_so(notebook) -> None:
    root, reference, cells = notebook
    stub = root / "exercises" / SOFTMAX / "softmax.py"
    assert stub.read_text(encoding="utf-8") == reference.read_text(encoding="utf-8")
    assert f"Wrote exercises/{SOFTMAX}/softmax.py" in cell_text(cells[2])
    # What the cell wrote is what the next command grades.
    assert cell_text(cells[3]).rstrip().endswith("5 passed, 0 failed")


@pytest.mark.parametrize("index, expected", [
    (4, "error: no exercise called 'no-such-exercise'"),
    (5, "no command called 'no-such-command'"),
    (6, "error: usage: %%grader_file EX"),
])
def test_a_mistake_in_a_cell_is_one_message_never_a_traceback(notebook, index, expected) -> None:
    root, reference, cells = notebook
    assert expected in cell_text(cells[index])
    assert not any(output.output_type == "error" for output in cells[index].outputs)
    assert "Traceback" not in cell_text(cells[index])


def test_import_grader_loads_neither_ipython_nor_torch() -> None:
    probe = "import sys, grader; print(callable(grader.load_ipython_extension), 'IPython' in sys.modules, " \
            "'torch' in sys.modules, 'grader.notebook' in sys.modules)"
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True)
    assert found.stdout.split() == ["True", "False", "False", "False"]


@pytest.fixture
def softmax_course(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("GRADER_ROOT", raising=False)
    return make_course(tmp_path / "course", [SOFTMAX])


def test_a_cell_over_a_learners_own_file_keeps_a_backup(softmax_course: Path) -> None:
    from grader.notebook import save

    stub = softmax_course / "exercises" / SOFTMAX / "softmax.py"
    said = save(SOFTMAX, "x = 1\n", start=softmax_course)  # over the pristine stub: nothing to keep
    assert "kept" not in said and stub.read_text() == "x = 1\n"
    said = save("01", "x = 2", start=softmax_course)  # over the learner's own text: kept first
    assert stub.read_text() == "x = 2\n"
    assert "backup-1" in said
    backups = list((softmax_course / ".grader" / "backups" / SOFTMAX).iterdir())
    assert [path.read_text() for path in backups] == ["x = 1\n"]
    assert "nothing written" in save("01", "x = 2\n", start=softmax_course)


def test_a_cell_without_one_exercise_is_a_usage_error(softmax_course: Path) -> None:
    from grader.errors import UsageError
    from grader.notebook import save

    for line in ("", "01 extra"):
        with pytest.raises(UsageError, match="%%grader_file EX"):
            save(line, "x = 1\n", start=softmax_course)
