"""Hostile and broken submissions: every one contained, every verdict clear, nothing forged, nothing left running."""

from __future__ import annotations

import json
import os
import shutil
import time

import pytest
from conftest import FIXTURES, own_processes, survivors

from grader.grading.pipeline import grade
from grader.grading.request import Limits, Run
from grader.report.gradescope_json import report_to_json
from grader.results import Outcome

HOSTILE = FIXTURES / "hostile"
TIME_LIMIT = 1.5
SHORT_LIMIT = 0.75  # CPU seconds: the good case between the bad ones needs a few milliseconds
# A bad ring case, a good stats case after it (graded in a fresh worker), then another bad ring case.
CASES = """
cases:
  - name: ring-first
    function: ring_attention
    lq: 3
    d: 4
    chunks: [2, 3]
    seed: 1
  - name: stats-after
    function: attention_chunk_stats
    lq: 3
    d: 4
    lk: 5
  - name: ring-float32-batched
    function: ring_attention
    batch: [2]
    lq: 3
    d: 4
    chunks: [1, 4]
    dtype: float32
"""


@pytest.fixture
def hostile_exercise(course, exercise):
    (course / "exercises/07-ring-attention/cases/examples.yaml").write_text(CASES)
    return exercise


def grade_hostile(exercise, name: str, mode: str = "run", device: str = "cpu", time_limit: float = TIME_LIMIT,
                  **limits):
    """Grade one hostile fixture; check the time bound and that nothing of it survives."""
    cases = 3 if mode == "run" else 500
    before = own_processes()
    started = time.monotonic()
    limited = Limits(time_limit=time_limit, **limits).on(exercise)
    report = grade(Run(limited, HOSTILE / f"{name}.py", mode, device))
    elapsed = time.monotonic() - started
    # Each case may use its CPU limit (three times that while waiting), a kill and a fresh worker's start.
    assert elapsed <= cases * (3 * time_limit + 4) + 10
    assert survivors(before) == []
    return report


def outcomes(report) -> list[Outcome]:
    return [result.outcome for result in report.results]


@pytest.mark.parametrize("name", ["infinite_loop", "ignores_sigterm", "endless_output"])
def test_runs_too_long_is_timed_out_and_the_rest_go_on(hostile_exercise, name: str) -> None:
    # A short limit: a case that sleeps is waited on three times its limit, and here two of them do.
    report = grade_hostile(hostile_exercise, name, time_limit=SHORT_LIMIT)
    assert outcomes(report) == [Outcome.TIMED_OUT, Outcome.PASSED, Outcome.TIMED_OUT]
    assert f"within the {SHORT_LIMIT:g} s limit" in report.results[0].message


@pytest.mark.parametrize("name, signal", [("segfault", "SIGSEGV"), ("abort", "SIGABRT")])
def test_crash_names_the_signal_and_the_rest_go_on(hostile_exercise, name: str, signal: str) -> None:
    report = grade_hostile(hostile_exercise, name)
    assert outcomes(report) == [Outcome.CRASHED, Outcome.PASSED, Outcome.CRASHED]
    assert f"({signal}) while running this case" in report.results[0].message


@pytest.mark.parametrize("name, words", [
    ("exit_at_import", "SystemExit"), ("os_exit_at_import", "exit status 0"),
])
def test_exit_at_import_is_an_error_for_every_case(hostile_exercise, name: str, words: str) -> None:
    report = grade_hostile(hostile_exercise, name)
    assert report.status == "error"
    assert outcomes(report) == [Outcome.ERROR] * 3
    assert words in report.load_error


@pytest.mark.parametrize("name, outcome, words", [
    ("os_exit_mid_case", Outcome.CRASHED, "exit status 0"),
    ("sys_exit_mid_case", Outcome.ERROR, "sys.exit(0)"),
    ("keyboard_interrupt", Outcome.ERROR, "KeyboardInterrupt"),
    ("recursion", Outcome.ERROR, "RecursionError"),
    ("reads_stdin", Outcome.ERROR, "EOFError"),
])
def test_exits_and_interrupts_never_pass(hostile_exercise, name: str, outcome: Outcome, words: str) -> None:
    report = grade_hostile(hostile_exercise, name)
    assert outcomes(report) == [outcome, Outcome.PASSED, outcome]
    assert words in report.results[0].message + report.results[0].traceback


@pytest.mark.parametrize("device", ["cpu", "all"])
def test_memory_hog_is_out_of_memory(hostile_exercise, device: str) -> None:
    # Filling 1.5 GiB takes a while on a busy machine: a roomier time limit keeps this about memory.
    report = grade_hostile(hostile_exercise, "memory_hog", memory_limit_mb=1536, device=device, time_limit=8)
    assert outcomes(report) == [Outcome.OUT_OF_MEMORY, Outcome.PASSED, Outcome.OUT_OF_MEMORY]
    assert "1536 MiB" in report.results[0].message


def test_output_flood_is_capped_and_costs_no_more_than_its_time(hostile_exercise) -> None:
    report = grade_hostile(hostile_exercise, "output_flood")
    assert outcomes(report)[1] is Outcome.PASSED
    first = report.results[0]
    assert first.outcome in (Outcome.PASSED, Outcome.TIMED_OUT)
    assert len(first.stdout) < 70 * 1024
    assert "bytes not kept: output is capped at 64 KiB" in first.stdout


@pytest.mark.parametrize("name", ["leaves_processes", "child_keeps_stdout"])
def test_processes_left_behind_are_killed(hostile_exercise, name: str) -> None:
    report = grade_hostile(hostile_exercise, name)  # grade_hostile asserts that none survives
    assert outcomes(report) == [Outcome.PASSED] * 3


def test_tampering_with_comparisons_cannot_forge_a_pass(hostile_exercise) -> None:
    report = grade_hostile(hostile_exercise, "tampering")
    # Its patched Tensor.__sub__ also breaks its own statistics: nothing passes.
    assert outcomes(report) == [Outcome.FAILED] * 3
    assert "output is wrong" in report.results[0].message


def test_wrong_dtype_device_and_nan_each_fail_clearly(hostile_exercise) -> None:
    report = grade_hostile(hostile_exercise, "wrong_dtype_device_nan")
    first, _, last = report.results
    assert "NaN" in first.message
    assert "dtype float64, expected float32" in last.message


def test_hidden_inputs_never_reach_the_report(hostile_exercise, course) -> None:
    hidden = course / "exercises/07-ring-attention/cases/hidden"
    shutil.rmtree(hidden, ignore_errors=True)
    hidden.mkdir()
    (hidden / "secret.yaml").write_text(CASES.replace("name: ", "name: secret-"))
    report = grade(Run(hostile_exercise, HOSTILE / "prints_inputs.py", "submit", "cpu"))
    hidden = [result for result in report.results if result.hidden]
    assert [result.outcome for result in hidden] == [Outcome.FAILED, Outcome.PASSED, Outcome.FAILED]
    text = json.dumps(report_to_json(report))
    visible = [result for result in report.results if not result.hidden]
    assert all("LEAK" in result.stdout for result in visible if result.function == "ring_attention")
    assert all(result.stdout == "" and result.inputs == "" for result in hidden)
    assert text.count("LEAK") == 0  # the JSON never carries printed output at all


def test_children_of_the_host_program_are_left_alone(hostile_exercise) -> None:
    import subprocess

    bystander = subprocess.Popen(["sleep", "60"])
    try:
        grade_hostile(hostile_exercise, "leaves_processes")
        assert bystander.poll() is None  # still running: only the learner's processes are swept
    finally:
        bystander.kill()
        bystander.wait()


@pytest.mark.parametrize("name, expected", [
    ("infinite_loop", [Outcome.TIMED_OUT, Outcome.PASSED, Outcome.TIMED_OUT]),
    ("leaves_processes", [Outcome.PASSED] * 3),
    ("child_keeps_stdout", [Outcome.PASSED] * 3),
])
@pytest.mark.parametrize("containment", ["unsandboxed", "bare"])
def test_without_a_sandbox_limits_still_hold_and_nothing_survives(hostile_exercise, request, containment, name,
                                                                  expected) -> None:
    request.getfixturevalue(containment)
    report = grade_hostile(hostile_exercise, name)  # grade_hostile asserts that none of it survives
    if containment == "bare" and name != "infinite_loop":
        # No cgroup counts other processes here: the learner's code is one process, and starting one is refused.
        assert Outcome.ERROR in outcomes(report)
        assert all(result.passed or "PermissionError" in result.message for result in report.results), outcomes(report)
    else:
        assert outcomes(report) == expected
    assert report.containment.startswith("no sandbox")


@pytest.mark.parametrize("containment", ["unsandboxed", "bare"])
def test_without_a_sandbox_memory_is_still_limited(hostile_exercise, request, containment) -> None:
    request.getfixturevalue(containment)
    report = grade_hostile(hostile_exercise, "memory_hog", memory_limit_mb=1536, time_limit=8)
    assert outcomes(report) == [Outcome.OUT_OF_MEMORY, Outcome.PASSED, Outcome.OUT_OF_MEMORY]


def test_bubblewrap_builds_the_same_sandbox_where_it_can(hostile_exercise, monkeypatch) -> None:
    """Where bubblewrap is installed and usable (not as root here: it cannot map root to another uid)."""
    from grader.sandbox import machine as sandbox

    monkeypatch.setenv(sandbox.SETTING, "bubblewrap")
    sandbox.support.cache_clear()
    try:
        found = sandbox.support()
        if found.kind != "bubblewrap":
            pytest.skip(f"bubblewrap is not usable here ({found.reason or 'not installed'})")
        report = grade_hostile(hostile_exercise, "leaves_processes")
        assert outcomes(report) == [Outcome.PASSED] * 3
        assert report.containment.startswith("sandbox (bubblewrap)")
    finally:
        monkeypatch.delenv(sandbox.SETTING)
        sandbox.support.cache_clear()


def test_the_address_space_limit_counts_above_what_torch_reserves() -> None:
    """Without a memory cgroup, a process's address space is limited: above what torch's import maps (a CUDA build
    maps some 3 GiB it never touches, on the CPU too), or no correct file could run under a 2 GiB limit."""
    import torch  # noqa: F401  (the grader measures its own process once torch is imported)

    from grader.sandbox import box, proctree

    own = proctree.address_space(os.getpid())
    assert own > 100 << 20
    assert box._import_reserve() == own


def test_where_no_file_may_grow_the_worker_still_names_a_temporary_folder(tmp_path) -> None:
    """RLIMIT_FSIZE 0 (no memory cgroup counts files): tempfile's probe write fails and, left to itself, it finds no
    folder, which broke the import of a CUDA build of torch (ctypes.util.find_library asks for one)."""
    import subprocess
    import sys

    probe = ("import resource, sys, tempfile\n"
             "resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))\n"
             "if sys.argv[1] == 'named':\n"
             "    from grader.sandboxed.worker import name_temporary_folder\n"
             "    name_temporary_folder()\n"
             "with tempfile.NamedTemporaryFile() as handle:\n"
             "    print(handle.name)\n")
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    left = subprocess.run([sys.executable, "-c", probe, "left"], env=env, capture_output=True, text=True, timeout=60)
    named = subprocess.run([sys.executable, "-c", probe, "named"], env=env, capture_output=True, text=True, timeout=60)
    assert left.returncode != 0 and "No usable temporary directory" in left.stderr, left.stderr
    assert named.returncode == 0 and named.stdout.startswith(str(tmp_path)), named.stderr
