"""A cohort's results read back from their files: each submission's entry, its tests, and the summary of all."""

from __future__ import annotations

import json
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.errors import UsageError
from grader.inert import inert
from grader.results import file
from grader.results.groups import headline, who
from grader.results.typed import Mismatch

RESULTS = "results"
NOT_GRADED = "not graded"
CRASHED = "crashed"  # a failed submission whose failures are mostly crashes (a segfault): named so, with the reason
FILE_STATUSES = ("passed", "failed", "error", NOT_GRADED)  # what a results file may say
STATUSES = ("passed", "failed", CRASHED, "error", NOT_GRADED)  # in the order they are counted and shown
SUITE_ORDER = ("examples", "hidden")  # first, in this order; any other suite (a distributed suite) after, by name
TOP = 10  # cases and mistakes listed in the summary
EXTRA_TIME = "extra_time"  # the settings' key of a learner's extra time, present only when it is not 1


@dataclass
class Test:
    """One case of one submission, as its results file has it."""

    name: str
    outcome: str
    suite: str
    score: float
    diagnosis: str
    output: str
    # What a learner's feedback file needs besides (function, the verdict's message, the mistake's why and help).
    function: str = ""
    message: str = ""
    rationale: str = ""
    help: str = ""
    required: bool = False
    cause: str = ""   # what failed, in the grader's words: the feedback groups its failures by it (results/groups.py)
    caller: str = ""  # who failed: its function, or a distributed suite and its ranks

    @property
    def hidden(self) -> bool:
        return self.suite == "hidden"

    @property
    def ran(self) -> bool:
        return self.outcome != "skipped"

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"


@dataclass
class Entry:
    """One submission's results file, read back."""

    id: str
    name: str
    exercise: str
    status: str
    score: float
    max_score: float | None
    reason: str
    settings: dict
    tests: list[Test] = field(default_factory=list)
    submitted_at: str = ""  # ISO time it was handed in (archive manifest or file time); "" unknown
    sha256: str = ""                              # of the file graded; "" when none was read
    fingerprints: tuple[int, ...] | None = None   # of its code, for the similarity report; None: not recorded
    key: str = ""  # what it was graded under; "" for no verdict that stands (the next run grades it again)
    fingerprints_cut: bool = False  # its code ran past similarity.TOKEN_LIMIT: its first part was fingerprinted

    def suite_scores(self) -> dict[str, float]:
        """Points earned per suite, before the rule that a failed required case makes the total 0."""
        earned: dict[str, float] = {}
        for test in self.tests:
            earned[test.suite] = earned.get(test.suite, 0.0) + test.score
        return earned

    @property
    def diagnosis(self) -> str:
        """The mistake named most often among the failing cases ('' if none); the first named wins a tie."""
        named = Counter(test.diagnosis for test in self.tests if test.diagnosis and not test.passed)
        return max(named, key=lambda title: (named[title], -self._first(title)), default="")

    def _first(self, title: str) -> int:
        return next(index for index, test in enumerate(self.tests) if test.diagnosis == title)


@dataclass(frozen=True)
class Counted:
    """A roster's scores that count (after late penalties and overrides; a learner who handed nothing in counts
    0), one per learner whose score is known, and what they are made of."""

    scores: list[float]
    learners: int
    missing: int     # handed nothing in: among the scores, as 0
    unknown: int     # not graded yet: not among them
    adjusted: int    # a late penalty or an override changed their score

    def words(self) -> str:
        """'13 learners: 1 missing (0), 2 adjusted'; what the scores are of."""
        parts = [f"{self.missing} missing (0)"] * bool(self.missing) + [f"{self.adjusted} adjusted"] * bool(
            self.adjusted) + [f"{self.unknown} not graded yet, left out"] * bool(self.unknown)
        return f"{self.learners} learner{'s' * (self.learners != 1)}" + (f": {', '.join(parts)}" if parts else "")


@dataclass
class Summary:
    """What the cohort's results say, for the terminal and the page."""

    exercise: str
    count: int
    statuses: dict[str, int]
    scores: list[float]
    max_score: float | None
    cases: list[tuple[str, int, int]]  # name, passed, ran: every case in case order
    mistakes: list[tuple[str, int]]    # title, submissions it was named for: most frequent first
    left_out: int                      # graded submissions whose file did not import: not in the case rates
    counted: Counted | None = None     # with a roster: the scores that count, which the headline shows

    @property
    def mean(self) -> float | None:
        return statistics.fmean(self.scores) if self.scores else None

    @property
    def median(self) -> float | None:
        return statistics.median(self.scores) if self.scores else None

    @property
    def headline(self) -> list[float]:
        """The scores a headline (mean, median, histogram) is of: those that count, where a roster says them."""
        return self.counted.scores if self.counted is not None else self.scores

    def most_failed(self, limit: int = TOP) -> list[tuple[str, int, int]]:
        failing = [(name, ran - passed, ran) for name, passed, ran in self.cases if ran > passed]
        return sorted(failing, key=lambda item: (-item[1] / item[2], -item[1]))[:limit]


def read_entry(path: Path) -> Entry:
    """One results file of a gradebook; a ValueError names what is wrong with it."""
    try:
        results = file.read(path)
        run, about = results.extra_data, results.extra_data.submission
        if about is None or run.exercise is None:
            raise Mismatch("missing", ("extra_data", "submission" if about is None else "exercise"))
        if run.status not in FILE_STATUSES:
            raise ValueError(f"unknown status {run.status!r}")
        tests = [_test(test) for test in results.tests]
        status, reason = verdict(run.status, tests, about.reason)
        return Entry(about.id, about.name, run.exercise, status, float(results.score),
                     float(run.max_score) if run.max_score is not None else None, reason, dict(about.settings),
                     tests, about.submitted_at, about.sha256,
                     tuple(about.fingerprints) if about.fingerprints is not None else None, about.key,
                     bool(about.fingerprints_cut))
    except file.NewerFormat as error:
        raise ValueError(f"{path}: {error}") from None
    except (OSError, ValueError) as error:
        detail = error.strerror if isinstance(error, OSError) else f"{type(error).__name__}: {error}"
        raise ValueError(f"{path}: not a results file of `grader grade` ({inert(str(detail))})") from None


def verdict(status: str, tests: list[Test], reason: str = "") -> tuple[str, str]:
    """A submission's status and reason as the gradebook shows them: a failed one whose failing cases crashed more
    often than not is 'crashed', its reason how many crashed and the first one's message."""
    failing = [test for test in tests if test.ran and not test.passed and test.outcome != "not attempted"]
    crashed = [test for test in failing if test.outcome == CRASHED]
    if status != "failed" or 2 * len(crashed) <= len(failing):
        return status, reason
    said = crashed[0].message.removeprefix(f"{CRASHED}: ")
    return CRASHED, f"{len(crashed)} of {len(tests)} cases crashed" + (f": {said}" if said else "")


def verdict_of(results: file.ResultsFile) -> str:
    """The status a results file's submission is shown with (verdict())."""
    return verdict(results.extra_data.status, [_test(test) for test in results.tests])[0]


def _test(test: file.TestRecord) -> Test:
    case, diagnosis = test.extra_data, test.extra_data.diagnosis
    return Test(f"{case.case} [{case.device}]", case.outcome, case.suite, float(test.score),
                diagnosis.title if diagnosis else "", test.output, case.function, case.message,
                diagnosis.rationale if diagnosis else "", diagnosis.help if diagnosis else "", case.required,
                case.cause or headline(case.message) or case.outcome, who(case.function, case.suite, case.extra))


def load_entries(out: Path, ids: set[str] | None = None) -> list[Entry]:
    """The results in `out` (only those of `ids`, when given), in id order."""
    paths = sorted((out / RESULTS).glob("*.json")) if (out / RESULTS).is_dir() else []
    entries = []
    for path in paths:
        if ids is not None and path.stem not in ids:
            continue
        try:
            entries.append(read_entry(path))
        except ValueError as error:
            raise UsageError(str(error)) from None
    return sorted(entries, key=lambda entry: entry.id)


def suites(entries: list[Entry]) -> list[str]:
    found = {test.suite for entry in entries for test in entry.tests}
    return [name for name in SUITE_ORDER if name in found] + sorted(found - set(SUITE_ORDER))


def summarize(entries: list[Entry]) -> Summary:
    """Counts, scores, every case's pass rate and the most frequent diagnosed mistakes."""
    statuses = {status: sum(entry.status == status for entry in entries) for status in STATUSES}
    graded = [entry for entry in entries if entry.status != NOT_GRADED]
    # A file that did not import fails every case alike: it says nothing about where the class is stuck.
    judged = [entry for entry in graded if entry.status != "error"]
    cases: dict[str, list[int]] = {}
    for entry in judged:
        for test in entry.tests:
            counts = cases.setdefault(test.name, [0, 0])
            counts[0] += test.passed
            counts[1] += test.ran
    mistakes = Counter(title for entry in graded for title in {test.diagnosis for test in entry.tests
                                                               if test.diagnosis and not test.passed})
    maxima = {entry.max_score for entry in graded if entry.max_score is not None}
    return Summary(
        exercise=", ".join(sorted({entry.exercise for entry in entries})), count=len(entries), statuses=statuses,
        scores=[entry.score for entry in graded], max_score=max(maxima) if maxima else None,
        cases=[(name, passed, ran) for name, (passed, ran) in cases.items()],
        mistakes=sorted(mistakes.items(), key=lambda item: (-item[1], item[0])), left_out=len(graded) - len(judged))


def check_consistent(entries: list[Entry]) -> None:
    """One gradebook is one exercise graded one way; anything else would compare unlike scores."""
    exercises = sorted({entry.exercise for entry in entries})
    if len(exercises) > 1:
        raise UsageError(f"the results are of {len(exercises)} exercises ({', '.join(exercises)}): "
                         f"one gradebook holds one exercise")
    # A learner's extra time is theirs alone: the rest of the settings are one for everyone.
    settings = {json.dumps({key: value for key, value in entry.settings.items() if key != EXTRA_TIME}, sort_keys=True)
                for entry in entries if entry.settings}
    if len(settings) > 1:
        raise UsageError("the results were graded with different settings (course files, grader, device or "
                         "limits): grade them again with the same ones")


@dataclass
class Finished:
    """One submission done, as the progress display sees it."""

    id: str
    status: str
    score: float | None = None
    max_score: float | None = None
    reason: str = ""
    seconds: float = 0.0


@dataclass
class CohortRun:
    """What one `grader grade` did (or `gradebook merge`: nothing graded), and the gradebook it left."""

    summary: Summary
    out: Path
    graded: int = 0
    skipped: int = 0
    not_graded: int = 0
    others: list[str] = field(default_factory=list)  # results files in `out` of submissions not in this run
    # With a roster: a row per learner, and the rows of entries no learner names (grader.results.learners.Row).
    rows: list[Any] = field(default_factory=list)
    unmatched: list[Any] = field(default_factory=list)
    to_retry: int = 0  # submissions with no verdict that stands (a grader error): the next run grades them again
