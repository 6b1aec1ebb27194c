"""Verdicts on one distributed case: name the rank that went wrong and how, else compare every rank's output."""

from __future__ import annotations

from typing import Any

from grader.course.exercise import Exercise
from grader.course.rules import RULES
from grader.course.rules.rule import DistributedCall
from grader.errors import CourseBroken
from grader.inert import fit
from grader.results import CaseResult, Outcome


def judge(ranks: list[Any], inputs: Any, limit: float, exercise: Exercise, result: CaseResult,
          traffic: int | None = None) -> None:
    """Fill in `result`: the first cause found (in order of blame), or the comparison of every rank's output.

    `traffic` is the bytes the kernel counted on the ranks' own loopback once all had joined the group (None
    without a loopback of their own: no network namespace here).
    """
    replied = [rank for rank in ranks if rank.state == "replied"]
    own = [rank for rank in replied if rank.reply.get("kind") != "returned"
           and rank.reply.get("phase") != "communication"]
    ended = [rank for rank in ranks if rank.state == "ended"]
    silent = [rank for rank in ranks if rank.ended.startswith("timeout:")]
    waited = [rank for rank in replied if rank.reply.get("phase") == "communication"]
    program = [rank for rank in replied if rank.reply.get("phase") == "program"]
    if program:  # the exercise's rank program raised outside the learner's calls: the course's bug, not graded
        raise CourseBroken(_program_failure(program[0], exercise))
    # Blame goes first to what a rank did itself; errors of ranks that waited for it are consequences.
    if own:
        _own_failure(own[0], exercise, result)
    elif [rank for rank in ended if not rank.ended.startswith("out-of-memory:")]:
        rank = [rank for rank in ended if not rank.ended.startswith("out-of-memory:")][0]
        result.outcome = Outcome.CRASHED
        if rank.ended.startswith("exit status"):
            result.message = (f"rank {rank.number} ended ({rank.ended}) before it finished "
                              f"(did your code call os._exit or exit the process?)")
        else:
            result.message = f"rank {rank.number} crashed ({rank.ended})"
    elif ended:
        rank = ended[0]
        result.outcome = Outcome.OUT_OF_MEMORY
        result.message = (f"the ranks used more than {rank.ended.split(':')[1]} MiB together: "
                          f"the limit is {exercise.memory_limit_mb} MiB per rank")
    elif silent:
        _silent(silent, bool(waited), len(ranks), limit, exercise, result)
    elif waited:
        rank = waited[0]
        result.outcome = Outcome.ERROR
        result.message = f"rank {rank.number} failed: {rank.reply.get('exception')}: {rank.reply.get('message')}"
    else:
        _compare(ranks, inputs, result)
        # Once every output passed, the rules on the group as a whole (what its ranks moved); the first broken decides.
        together = DistributedCall(inputs, traffic)
        for rule in RULES:
            if result.passed:
                rule.judge_distributed(together, result)
        return
    result.details = [line for rank in ranks if (line := _rank_line(rank))]


def _program_failure(rank: Any, exercise: Exercise) -> str:
    """'exercises/EX/PROGRAM.py:LINE: NameError: message': the file named only if the exercise's folder holds it
    (the rank's reply comes from beside learner code, so its words are shown as data, never as a path)."""
    body = rank.reply
    name = body.get("file", "")
    path = exercise.directory / name if name.endswith(".py") and "/" not in name and "\\" not in name else None
    shown = str(path.relative_to(exercise.root)) if path is not None and path.is_file() else "the rank program"
    where = f"{shown}:{body['line']}" if body.get("line") else shown
    return fit(f"{where}: {body.get('exception')}: {body.get('message')} (rank {rank.number})", 600)


def _own_failure(rank: Any, exercise: Exercise, result: CaseResult) -> None:
    body = rank.reply
    kind, exception, message = body.get("kind"), body.get("exception", ""), body.get("message", "")
    result.traceback = body.get("traceback", "")
    if kind == "load-error":
        result.outcome = Outcome.ERROR
        where = f" (line {body['line']})" if body.get("line") else ""
        result.message = f"rank {rank.number} could not import your file{where}: {exception}: {message}"
    elif kind == "not-attempted":
        result.outcome = Outcome.NOT_ATTEMPTED
        result.message = f"rank {rank.number}: your code raises NotImplementedError: it is not written yet"
    elif kind == "out-of-memory":
        result.outcome = Outcome.OUT_OF_MEMORY
        result.message = (f"rank {rank.number} ran out of memory ({exception}); the limit is "
                          f"{exercise.memory_limit_mb} MiB per rank")
    else:
        result.outcome = Outcome.ERROR
        result.message = f"rank {rank.number} raised {exception}" + (f": {message}" if message else "")


def _silent(silent: list[Any], others_waited: bool, world: int, limit: float, exercise: Exercise,
            result: CaseResult) -> None:
    names = _names(silent)
    phase = silent[0].ended.split(":", 1)[1]
    result.outcome = Outcome.TIMED_OUT if phase == "ready" else Outcome.ERROR
    if phase == "starting":
        result.message = f"{names} could not import torch in time (this is not about your code)"
    elif phase == "importing":
        result.message = (f"{names}: importing your file did not finish within {exercise.time_limit:g} s "
                          f"(look for work done at import time)")
    elif len(silent) == world:
        result.message = f"no rank finished within {limit:g} s (look for a loop that never ends)"
    else:
        it = "it" if len(silent) == 1 else "them"
        result.message = f"{names} did not finish within {limit:g} s" + (
            f"; the others waited for {it}" if others_waited else " (look for a loop that never ends)")


def _compare(ranks: list[Any], inputs: Any, result: CaseResult) -> None:
    from grader.grading import compare

    device = result.device
    for rank in ranks:
        base = (inputs.baseline[rank.number],) if inputs.baseline is not None else None
        value = rank.reply.get("value")
        value = value if isinstance(value, dict) else {"type": "other", "name": "nothing usable"}
        verdict = compare.compare_outputs(value, (f"the output of rank {rank.number}",),
                                          (inputs.expected[rank.number],), compare.OutputType(inputs.dtype, device),
                                          base)
        if not verdict.passed:
            result.outcome = Outcome.FAILED
            result.message = verdict.message
            result.details = verdict.details
            return
    result.outcome = Outcome.PASSED
    result.seconds = max(float(rank.reply.get("seconds", 0.0)) for rank in ranks)


def _rank_line(rank: Any) -> str:
    """What one rank did, for the details: the culprit and those that waited for it told apart."""
    if rank.state == "replied":
        body = rank.reply
        if body.get("kind") == "returned":
            return f"rank {rank.number}: finished"
        who = "gave up waiting for a peer" if body.get("phase") == "communication" else "raised"
        return fit(f"rank {rank.number}: {who}: {body.get('exception')}: {body.get('message', '')}", 300)
    if rank.ended.startswith("timeout:"):
        return f"rank {rank.number}: still running when the group was stopped (killed)"
    return f"rank {rank.number}: ended ({rank.ended})" if rank.ended else ""


def _names(ranks: list[Any]) -> str:
    numbers = [str(rank.number) for rank in ranks]
    if len(numbers) == 1:
        return f"rank {numbers[0]}"
    return f"ranks {', '.join(numbers[:-1])} and {numbers[-1]}"
