"""Learner text is inert: no terminal ever acts on what a submission printed, raised or named."""

from __future__ import annotations

import io
import json
import re
import time
from pathlib import Path

from rich.console import Console

from grader.inert import cut, fit, inert
from grader.report.gradescope_json import report_to_json, write_json
from grader.report.gradescope_json import test_to_json as result_to_json
from grader.report.terminal import OUTPUT_WIDTH, THEME, TerminalRenderer, make_console
from grader.results import CaseResult, Outcome, Report

# Clear the screen, set the window title, return to the line start and print a fake verdict,
# then reverse the rest of the line.
HOSTILE = "\x1b[2J\x1b]0;title\x07\r7 passed, 0 failed\u202edeliaf 0\x08"
# Raw characters that must never reach a terminal or a results file.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\u2028\u2029]")


def hostile_report() -> Report:
    report = Report("07-ring-attention", "run", f"mine{HOSTILE}.py", seconds=0.5)
    report.results = [
        CaseResult("stats-a", "examples", "attention_chunk_stats", "cpu", Outcome.PASSED),
        CaseResult("ring-b", "examples", "ring_attention", "cpu", Outcome.ERROR,
                   message=f"your function raised Evil{HOSTILE}: {HOSTILE}",
                   details=[f"returned {HOSTILE}"],
                   traceback=(f'  File "mine.py", line 3, in ring_attention\n'
                              f'    raise Evil("{HOSTILE}")\nEvil{HOSTILE}\n'),
                   stdout=f"before\n{HOSTILE}\nafter\r\n", stderr=f"{HOSTILE}\n"),
        CaseResult("ring-secret", "hidden", "ring_attention", "cpu", Outcome.ERROR, message=HOSTILE),
    ]
    report.notes.append(f"Submission recorded in .grader/submissions/{HOSTILE}.json.")
    return report


def narrow() -> Console:
    """A fixed-width console that wraps long lines, as a narrow terminal does."""
    return Console(file=io.StringIO(), width=80, theme=THEME)


def wide() -> Console:
    """The grader's own console settings (no wrapping), for checks line by line."""
    return make_console(file=io.StringIO(), width=80)


def render(report: Report, console: Console) -> str:
    renderer = TerminalRenderer(console, stub_hint="exercises/07-ring-attention/ring_attention.py")
    renderer.header(report.exercise, report.mode, report.file)
    for result in report.results:
        renderer.finished(result)
    renderer.finish(report)
    return console.file.getvalue()


def strings(value) -> list[str]:
    """Every string in a JSON value, keys included."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for key, item in value.items() for s in strings(key) + strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in strings(item)]
    return []


def test_controls_are_escaped_visibly_and_newlines_and_tabs_kept() -> None:
    assert inert("a\x1b[2J\rb\x07\x08\x7f\x85\tc\nd") == "a\\x1b[2J\\rb\\x07\\x08\\x7f\\x85\tc\nd"
    assert inert("\u202e\u2066\u2069\u200b\u200f\ufeff\u2028") == "\\u202e\\u2066\\u2069\\u200b\\u200f\\ufeff\\u2028"
    assert inert("\U000e0041") == "\\U000e0041"  # a tag character: invisible, yet it is there


def test_ordinary_text_comes_back_unchanged() -> None:
    text = "héllo wörld, 中文, emoji 😀, a\ttab, [bold]markup[/], back\\slash\n" * 100
    assert inert(text) is text


def test_every_escape_is_printable_and_inert_is_idempotent() -> None:
    points = list(range(0x3000)) + list(range(0xFE00, 0x10000)) + [0x1D173, 0xE0001, 0xE007F, 0x1F600]
    for point in points:
        shown = inert(chr(point))
        assert shown == chr(point) or (shown.isascii() and shown.isprintable()), hex(point)
        assert inert(shown) == shown
    text = "".join(map(chr, points))
    assert RAW.search(inert(text)) is None
    assert inert(inert(text)) == inert(text)


def test_cut_marks_what_it_left_out() -> None:
    assert cut("short", 10) == "short"
    assert cut("x" * 10, 10) == "x" * 10
    assert cut("x" * 11, 10) == "x" * 10 + " [... 1 more character]"
    assert cut("x" * 1244, 10) == "x" * 10 + " [... 1234 more characters]"


def test_fit_marks_a_cut_within_the_bound() -> None:
    """What a worker sends has bounded fields: a cut line must say so and still fit its bound."""
    assert fit("x" * 200, 200) == "x" * 200
    assert fit("x" * 201, 200) == "x" * 175 + " [... 26 more characters]"
    for length in (201, 250, 999, 1000, 1001, 10**6):
        for limit in (40, 200, 4000):
            shown = fit("y" * length, limit)
            assert len(shown) <= limit and (length <= limit or shown.endswith(" more characters]")), (length, limit)
            if length > limit:
                left = int(shown.rsplit("[... ", 1)[1].split()[0])
                assert shown.startswith("y" * (length - left)) and len(shown) > limit - 5  # no room wasted


def test_a_long_exception_name_from_the_worker_is_marked_as_cut() -> None:
    from grader.sandboxed.worker import describe_exception

    error = type("E" * 300, (Exception,), {})("m" * 5000)
    reply = describe_exception(error, Path("mine.py"), 0.0, "cpu")
    assert len(reply["exception"]) <= 200 and reply["exception"].endswith("more characters]")
    assert reply["message"].endswith("[... 3027 more characters]") and len(reply["message"]) == 2000


def test_large_outputs_are_cheap() -> None:
    hostile = ("\x1b[31m\r\u202e" * 8192)[:65536]
    plain = "x" * 65536
    started = time.perf_counter()
    for _ in range(5):
        inert(hostile)
        inert(plain)
        cut(plain, 200)
    assert time.perf_counter() - started < 2.0  # about 0.1 s here; generous for a loaded machine


def test_terminal_shows_learner_text_escaped_and_keeps_the_real_summary_last() -> None:
    out = render(hostile_report(), narrow())
    assert RAW.search(out) is None, repr(out)
    assert out.splitlines()[-1] == "1 passed, 2 failed"
    out = render(hostile_report(), wide())
    assert RAW.search(out) is None, repr(out)
    lines = out.splitlines()
    assert lines[-1] == "1 passed, 2 failed"
    assert lines[0] == ("07-ring-attention: mine\\x1b[2J\\x1b]0;title\\x07\\r7 passed, 0 failed\\u202edeliaf 0"
                        "\\x08.py on examples")
    assert "        your function raised Evil\\x1b[2J" in out
    assert "        | \\x1b[2J\\x1b]0;title\\x07\\r7 passed, 0 failed\\u202edeliaf 0\\x08" in lines
    assert "        | after" in lines  # a CR-LF pair still ends a line
    assert "        | before" in lines
    assert not any(line.startswith("7 passed") for line in lines)


def test_colour_terminal_gets_only_the_grader_own_escapes(monkeypatch) -> None:
    class FakeTerminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    out = render(hostile_report(), make_console(file=FakeTerminal(), width=80))
    assert "\x1b[" in out  # Rich's colours
    for raw in ("\x1b[2J", "\x1b]", "\x07", "\r", "\x08", "\u202e"):
        assert raw not in out, repr(raw)
    # Strip Rich's own colour codes (SGR): nothing else may remain.
    assert RAW.search(re.sub("\x1b\\[[0-9;]*m", "", out)) is None


def test_markup_in_learner_text_is_still_shown_literally() -> None:
    result = CaseResult("ring-b", "examples", "ring_attention", "cpu", Outcome.FAILED,
                        message="[bold red]fake[/] \x1b[bold]x", stdout="[link=http://x]click[/link]\n")
    console = wide()
    TerminalRenderer(console).finished(result)
    out = console.file.getvalue()
    assert "        [bold red]fake[/] \\x1b[bold]x" in out.splitlines()
    assert "        | [link=http://x]click[/link]" in out.splitlines()


def test_long_printed_lines_are_cut_with_a_marker() -> None:
    result = CaseResult("ring-b", "examples", "ring_attention", "cpu", Outcome.FAILED, message="wrong",
                        stdout="y" * (OUTPUT_WIDTH + 1234) + "\n")
    console = wide()
    TerminalRenderer(console).finished(result)
    assert f"        | {'y' * OUTPUT_WIDTH} [... 1234 more characters]" in console.file.getvalue().splitlines()


def test_a_file_that_could_not_be_loaded_is_shown_inert() -> None:
    report = Report("07-ring-attention", "run", "mine.py", load_error=f"mine.py:1: SyntaxError\n    {HOSTILE}")
    out = render(report, narrow())
    assert RAW.search(out) is None and out.splitlines()[-1] == "0 passed, 0 failed"
    assert "    \\x1b[2J\\x1b]0;title\\x07\\r7 passed, 0 failed\\u202edeliaf 0\\x08" in render(report, wide())
    assert RAW.search(json.dumps(report_to_json(report), ensure_ascii=False)) is None


def test_json_carries_no_raw_control_anywhere(tmp_path) -> None:
    report = hostile_report()
    report.results[1].extra = {f"key{HOSTILE}": [HOSTILE, 3, None]}
    data = report_to_json(report)
    assert all(RAW.search(text) is None for text in strings(data))
    assert RAW.search(json.dumps(data, ensure_ascii=False)) is None
    entry = data["tests"][1]
    assert entry["extra_data"]["message"] == inert(report.results[1].message)
    assert "\\x1b[2J" in entry["output"] and "\\u202e" in entry["output"]
    assert data["extra_data"]["file"] == inert(report.file)
    assert result_to_json(2, report.results[1], report.weight(report.results[1])) == entry
    path = tmp_path / "results.json"
    write_json(report, path)
    assert json.loads(path.read_text(encoding="utf-8")) == data


def test_json_output_limit_holds_after_escaping() -> None:
    from grader.report.gradescope_json import OUTPUT_LIMIT

    result = CaseResult("ring-b", "examples", "ring_attention", "cpu", Outcome.ERROR, message="\x1b" * OUTPUT_LIMIT)
    output = result_to_json(1, result)["output"]
    assert len(output) <= OUTPUT_LIMIT + len("\n[... truncated]")
    assert RAW.search(output) is None
