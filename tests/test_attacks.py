"""Attacks on the verdict, one fixture per class: none passes, the grader never crashes, nothing survives,
and the course, the grader and .grader/ are left exactly as they were."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO, own_processes, ring_checker, ring_exercise, survivors

from grader.cli import main
from grader.course.cases import Case
from grader.grading.pipeline import grade
from grader.grading.request import Limits, Run
from grader.report.gradescope_json import report_to_json
from grader.results import Outcome

ATTACKS = FIXTURES / "attacks"
TIME_LIMIT = 2.0
CASES = """
cases:
  - name: ring-small
    function: ring_attention
    lq: 3
    d: 4
    chunks: [2, 3]
    seed: 1
  - name: stats-small
    function: attention_chunk_stats
    lq: 3
    d: 4
    lk: 5
  - name: merge-small
    function: merge_chunk_stats
    lq: 3
    dv: 4
    max_offset: [0.0, 2.0]
"""


@pytest.fixture
def attacked(course, exercise):
    """The course with three small visible cases and, hidden, only the memory-audited case."""
    folder = course / "exercises/07-ring-attention/cases"
    (folder / "examples.yaml").write_text(CASES)
    for path in (folder / "hidden").glob("*.yaml"):
        if path.name != "constraints.yaml":
            path.unlink()
    return exercise


def attack(tmp_path: Path, name: str, **constants: str) -> Path:
    """One self-contained learner file: the correct base, then the attack's own lines (constants written in)."""
    text = (ATTACKS / f"{name}.py").read_text()
    for key, value in constants.items():
        text = text.replace(f'{key} = "none"', f'{key} = "{value}"')
    path = tmp_path / f"{name}.py"
    path.write_text((ATTACKS / "_base.py").read_text() + "\n\n" + text)
    return path


def fingerprint(*folders: Path) -> dict[str, str]:
    """Every file under the folders (the .grader state included), by content; not the answers the grader
    itself keeps in .grader/cache (learner code sees that folder read-only, as the tampering attacks show)."""
    found = {}
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and "cache" not in path.relative_to(folder).parts:
                found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def graded_safely(exercise, course, path: Path, may_pass: bool = False, **options):
    """Grade an attack; whatever it does, the grader returns a verdict, and leaves nothing changed or running."""
    (course / ".grader").mkdir(exist_ok=True)
    (course / ".grader" / "state.json").write_text('{"exercises": {}}\n')
    before_files = fingerprint(course, REPO / "grader", path.parent)
    before = own_processes()
    limits = Limits(options.pop("time_limit", TIME_LIMIT), options.pop("memory_limit_mb", None))
    report = grade(Run(limits.on(exercise), path, options.pop("mode", "submit"), "cpu", **options))
    assert survivors(before) == []
    assert fingerprint(course, REPO / "grader", path.parent) == before_files
    assert may_pass or report.status != "passed"
    return report


def by_name(report) -> dict:
    return {result.name: result for result in report.results}


@pytest.mark.parametrize("name", ["forged_protocol", "patched_worker"])
def test_forged_protocol_and_patched_worker_cannot_hide_memory(attacked, course, tmp_path, name):
    """Right values computed the forbidden way, with the worker's own audit silenced: the kernel still counts."""
    results = by_name(graded_safely(attacked, course, attack(tmp_path, name)))
    audited = results["ring-memory-stays-near-one-chunk"]
    assert audited.outcome is Outcome.FAILED and "(measured by the operating system)" in audited.message


def test_hidden_in_place_writes_are_seen_in_the_pages_the_grader_owns(attacked, course, tmp_path):
    results = by_name(graded_safely(attacked, course, attack(tmp_path, "hidden_inplace_writes")))
    merge = results["merge-small"]
    assert merge.outcome is Outcome.FAILED and merge.extra["violates"] == "inputs-modified"
    assert "modified its input acc_output, acc_sum, chunk_max in place" in merge.message


@pytest.mark.parametrize("name", ["tampers_with_the_course", "late_import_tampering"])
def test_the_course_and_the_grader_cannot_be_changed(attacked, course, tmp_path, name):
    marker = Path("/tmp/grader-late-import-ran")
    marker.unlink(missing_ok=True)
    report = graded_safely(attacked, course, attack(tmp_path, name))
    assert not marker.exists()
    assert report.integrity_error == ""  # nothing changed, so nothing to report either


def test_a_course_changed_while_grading_is_an_error_not_a_pass(attacked, course, monkeypatch):
    """Where learner code could reach the course (no sandbox), a change is caught by the fingerprint."""
    from grader.grading import worker_client

    original = worker_client.WorkerClient.wait_ready

    def meddle(self, limit):
        (course / "solutions/07-ring-attention/mistakes/zz_planted.py").write_text("x = 1\n")
        return original(self, limit)

    monkeypatch.setattr(worker_client.WorkerClient, "wait_ready", meddle)
    report = grade(Run(attacked, attacked.solution, "run", "cpu"))
    assert report.status == "error"
    assert report.integrity_error.startswith("the course files changed while grading (1: solutions/")


@pytest.mark.parametrize("containment", ["sandboxed", "bare"])
def test_an_environment_scrubbed_daemon_dies_with_the_sandbox(attacked, course, tmp_path, capsys, request,
                                                               containment):
    if containment == "bare":
        request.getfixturevalue("bare")
    results = tmp_path / "out" / "results.json"
    before = own_processes()
    code = main(["submit", "--file", str(attack(tmp_path, "env_scrubbed_daemon")), "--json", str(results),
                 "--device", "cpu", "--time-limit", str(TIME_LIMIT)])
    written = results.read_text()
    time.sleep(2.5)  # past the daemon's own wait
    assert code == 1 and survivors(before) == []
    assert results.read_text() == written and json.loads(written)["extra_data"]["status"] == "failed"


def test_memory_held_by_children_in_other_sessions_counts(attacked, course, tmp_path):
    # The kernel's reclaim before the OOM kill costs CPU too: with the usual 2 s, the CPU limit sometimes ended the
    # case before the memory limit did. The limit here is what is tried, so the CPU limit is kept out of its way.
    report = graded_safely(attacked, course, attack(tmp_path, "setsid_memory_escape"), mode="run",
                           memory_limit_mb=1024, time_limit=20.0)
    ring = by_name(report)["ring-small"]
    assert ring.outcome is Outcome.OUT_OF_MEMORY, ring.message


MALFORMED = ["missing_tensor", "list_body", "bad_seconds", "deep_nesting", "huge_length", "json_flood",
             "wrong_id", "nan_in_json", "mixed_observations"]


@pytest.mark.parametrize("mode", MALFORMED)
def test_a_malformed_reply_is_that_case_crashing(attacked, course, tmp_path, mode):
    report = graded_safely(attacked, course, attack(tmp_path, "forged_replies", MODE=mode), mode="run")
    ring = by_name(report)["ring-small"]
    assert ring.outcome is Outcome.CRASHED
    assert "malformed reply" in ring.message or "not for the case that was sent" in ring.message
    assert by_name(report)["stats-small"].outcome is Outcome.PASSED  # in a fresh worker


def test_hidden_inputs_never_come_out_through_names_or_shapes(attacked, course, tmp_path):
    report = graded_safely(attacked, course, attack(tmp_path, "leaks_through_names"))
    hidden = [result for result in report.results if result.hidden]
    assert hidden and all("LEAK" not in result.message and "(0," not in result.message for result in hidden)
    assert {result.message for result in hidden} <= {"raised an exception of another type (line 11)",
                                                       "output has the wrong shape"}
    tests = report_to_json(report)["tests"]
    assert any("LEAK" in json.dumps(test) for test in tests if test["extra_data"]["suite"] == "examples")  # visible: shown
    assert not any("LEAK" in json.dumps(test) for test in tests if test["extra_data"]["suite"] == "hidden")


def test_what_a_hidden_case_showed_the_worker_never_reaches_a_visible_case(attacked, course, tmp_path):
    report = graded_safely(attacked, course, attack(tmp_path, "remembers_what_it_saw"), may_pass=True)
    visible = "".join(result.stdout for result in report.results if not result.hidden)
    assert "SEEN(3, 4) SEEN(3, 4)" in visible  # the visible cases' own inputs, remembered and printed
    assert "SEEN(1024, 4)" not in visible and "SEEN(16, 8)" not in visible  # the hidden memory cases' never


def test_a_reply_nobody_asked_for_is_a_protocol_violation(attacked, course, tmp_path):
    report = graded_safely(attacked, course, attack(tmp_path, "forged_replies", MODE="unrequested"), mode="run")
    # The stray reply is seen either before the next case is sent or as that case's reply, by its id.
    result = by_name(report)["stats-small"]
    assert result.outcome is Outcome.CRASHED
    assert "a message nobody asked for" in result.message or "not for the case that was sent" in result.message


def test_a_reply_then_sleep_never_blocks_the_grader(attacked, course, tmp_path):
    started = time.monotonic()
    report = graded_safely(attacked, course, attack(tmp_path, "forged_replies", MODE="reply_then_sleep"), mode="run")
    assert by_name(report)["stats-small"].outcome is Outcome.TIMED_OUT
    assert time.monotonic() - started < 60


@pytest.mark.parametrize("mode", ["huge_length", "json_flood"])
def test_the_graders_memory_stays_bounded_whatever_is_sent(course, attacked, tmp_path, mode):
    learner = attack(tmp_path, "forged_replies", MODE=mode)
    # The grader's own peak, read from its own (post-exec) memory map: wait4's figure would include the
    # high-water mark this test process had when it forked.
    code = ("import sys; from grader.cli import main; code = main(sys.argv[1:]); "
            "print([line for line in open('/proc/self/status') if line.startswith('VmHWM')][0]); sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", code, "run", "--file", str(learner), "--no-record", "--device", "cpu"],
                          cwd=course, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "malformed reply" in done.stdout and "Traceback" not in done.stdout + done.stderr
    peak_kib = int(done.stdout.split("VmHWM:")[1].split()[0])
    assert peak_kib * 1024 < 1 << 30  # torch included


def test_an_object_that_raises_when_looked_at_is_described_not_obeyed(attacked, course, tmp_path):
    report = graded_safely(attacked, course, attack(tmp_path, "raises_in_shape"), mode="run")
    ring = by_name(report)["ring-small"]
    assert ring.outcome is Outcome.FAILED and "not a torch.Tensor" in ring.message
    assert "Booby" in ring.message


def test_learner_text_never_reaches_the_terminal_raw(attacked, course, tmp_path, capsys):
    code = main(["run", "--file", str(attack(tmp_path, "writes_to_the_terminal")), "--no-record", "--device", "cpu"])
    out = capsys.readouterr().out
    assert code == 1
    assert "\x1b" not in out and "\r" not in out and "\x07" not in out and "\u202e" not in out
    assert "\\x1b[2J" in out and "\\u202e" in out
    assert out.rstrip().splitlines()[-1] == "2 passed, 1 failed"  # the real count, last


def test_the_graders_environment_and_files_stay_out_of_sight(attacked, course, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GRADER_TEST_SECRET", "do-not-show-this")
    main(["run", "--file", str(attack(tmp_path, "reads_the_environment")), "--no-record", "--device", "cpu"])
    out = capsys.readouterr().out
    assert "GRADER_TEST_SECRET" not in out and "do-not-show-this" not in out
    assert "solutions" not in out and "course" not in out.split("printed", 1)[-1]


def ring_case(learner: Path, case):
    """One case of exercise 07's distributed suite, as `grader run --ring` runs it."""
    from grader.grading.distributed import DistributedRun, run_case
    from grader.grading.pipeline import load_reference

    exercise = ring_exercise()
    suite = ring_checker().suites()["ring"]
    return run_case(Run(exercise, learner), DistributedRun(suite, suite.world_of(case), load_reference(exercise), 3.0), case)


def test_a_ring_that_never_exchanges_its_shards_fails(tmp_path):
    case = Case("ring-no-exchange", "ring", "distributed_ring", "", {"shards": [3, 4], "d": 8}, None, "test")
    before = own_processes()
    result = ring_case(attack(tmp_path, "ring_never_exchanges"), case)
    assert survivors(before) == []
    assert result.outcome is Outcome.FAILED, result.message
    found = [line.split(" found ", 1)[1] for line in result.stdout.splitlines() if " found " in line]
    # The grader's own package is bound in read-only where it lies (under /tmp, in a checkout there).
    from grader import PACKAGE

    ours = {str(PACKAGE), *map(str, PACKAGE.parents)}
    strays = [path for path in found if not path.endswith("grader-group-store") and path not in ours
              and not path.startswith(f"{PACKAGE}/")]
    assert strays == [], strays  # no shard on any disk


def test_a_rank_that_forges_a_malformed_reply_is_named(tmp_path, capfd):
    case = Case("ring-forged", "ring", "distributed_ring", "", {"shards": [3, 4], "d": 8}, None, "test")
    result = ring_case(attack(tmp_path, "ring_forged_reply"), case)
    assert result.outcome is Outcome.CRASHED
    assert result.message.startswith("rank 1 crashed (sent a malformed reply"), result.message
    assert "Traceback" not in capfd.readouterr().err  # no thread of the grader's printed its own


@pytest.mark.parametrize("signals, code", [
    ((signal.SIGINT,), 130), ((signal.SIGINT, signal.SIGINT), 130), ((signal.SIGTERM,), 143),
    ((signal.SIGKILL,), -9)])
def test_stopping_the_grader_leaves_nothing_running(course, signals, code):
    """Ctrl-C (once or twice), a cancelled job's SIGTERM, or SIGKILL: the learner's processes go with the grader."""
    examples = course / "exercises/07-ring-attention/cases/examples.yaml"  # the loop still runs when it is stopped
    examples.write_text(examples.read_text().replace("  time_limit: 1\n", "  time_limit: 30\n", 1))
    before = own_processes()
    process = subprocess.Popen([sys.executable, "-m", "grader", "run", "--file",
                                str(FIXTURES / "hostile" / "infinite_loop.py"), "--device", "cpu"],
                               cwd=course, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={**os.environ, "PYTHONPATH": str(REPO)})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any("grader.worker" in command for command in own_processes().values()):
        time.sleep(0.1)
    time.sleep(1.0)  # the worker is running the learner's loop now
    for number in signals:
        process.send_signal(number)
        time.sleep(0.05)
    out, err = process.communicate(timeout=30)
    assert process.returncode == code
    assert b"Traceback" not in out + err
    assert survivors(before) == []


@pytest.mark.parametrize("containment", ["sandboxed", "bare"])
def test_no_namespace_of_its_own_can_be_made_inside_the_sandbox(attacked, course, tmp_path, capsys, request,
                                                                containment):
    """Learner code may not make user namespaces (nor, without one, any other): no root of its own anywhere,
    and the kernel's namespace code out of reach. Threads, which glibc starts with clone3, still start."""
    if containment == "bare":
        request.getfixturevalue("bare")
    main(["run", "--file", str(attack(tmp_path, "nested_namespaces")), "--no-record", "--device", "cpu"])
    out = capsys.readouterr().out
    assert "nested user namespace: refused (errno 1)" in out
    assert "nested network namespace: refused (errno 1)" in out
    # Without a cgroup the learner's code is one process: no child starts to try (test_levels.py holds the rest).
    assert ("in a child: not started (errno 1)" if containment == "bare" else "in a child: refused (errno 1)") in out
    assert "a thread ran: True" in out


def test_a_program_keeps_no_capability_even_without_an_exec(tmp_path):
    """The launcher may hold capabilities in the sandbox's user namespace (the grader not root); a program forked
    from it, not exec'd, drops them all before any learner code runs."""
    from grader.sandbox import lockdown

    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            before = _capabilities()
            lockdown.drop_capabilities()
            os.write(writer, f"{before} {_capabilities()}".encode())
        finally:
            os._exit(0)
    os.close(writer)
    os.waitpid(child, 0)
    before, after = os.read(reader, 100).decode().split()
    assert int(before, 16) != 0 or os.geteuid() != 0  # root starts with some, so the drop is seen
    assert int(after, 16) == 0


def _capabilities() -> str:
    with open("/proc/self/status") as status:
        return next(line.split()[1] for line in status if line.startswith("CapEff:"))


def test_a_torch_py_where_the_grader_starts_is_never_imported(course, tmp_path) -> None:
    """Planted beside the course: neither `python -m grader` itself, nor its zygote, nor a worker imports it."""
    marker = tmp_path / "planted-torch-ran"
    (course / "torch.py").write_text(f"open({str(marker)!r}, 'a').write('ran')\nraise SystemExit(7)\n")
    done = subprocess.run([sys.executable, "-m", "grader", "submit", "07", "--file",
                           str(course / "solutions/07-ring-attention/ring_attention.py"), "--no-record",
                           "--device", "cpu"], cwd=course, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0 and not marker.exists(), done.stdout + done.stderr


def test_the_library_path_reaches_learner_processes_as_absolute_folders_alone(monkeypatch) -> None:
    """A CUDA driver found through LD_LIBRARY_PATH is found inside too; an empty or relative entry, which would
    name a folder the learner's code can write, is dropped."""
    from grader.sandbox.policy import base_env

    monkeypatch.setenv("LD_LIBRARY_PATH", ":/usr/lib64-nvidia:lib::./here:/usr/local/nvidia/lib64")
    assert base_env()["LD_LIBRARY_PATH"] == "/usr/lib64-nvidia:/usr/local/nvidia/lib64"
    monkeypatch.setenv("LD_LIBRARY_PATH", "::relative")
    assert "LD_LIBRARY_PATH" not in base_env()
    monkeypatch.delenv("LD_LIBRARY_PATH")
    assert "LD_LIBRARY_PATH" not in base_env()
