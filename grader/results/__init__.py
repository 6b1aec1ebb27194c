"""The results model: one outcome per case and device, one report per command."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class Outcome(str, Enum):
    """What happened to one case; only PASSED counts as a pass."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    TIMED_OUT = "timed out"
    CRASHED = "crashed"
    OUT_OF_MEMORY = "out of memory"
    SKIPPED = "skipped"
    NOT_ATTEMPTED = "not attempted"
    NOT_JUDGED = "not judged"  # a rule of the case cannot be judged honestly on this machine: never a pass

    @property
    def counts_as_failure(self) -> bool:
        return self not in (Outcome.PASSED, Outcome.SKIPPED)


def verdict_text(outcome: str, message: str) -> str:
    """'crashed: the worker process ended (SIGSEGV) ...': an outcome and its message, the outcome said once where
    the message already starts with it."""
    if not message:
        return outcome
    return message if message.startswith(f"{outcome}:") else f"{outcome}: {message}"


@dataclass
class Diagnosis:
    """A catalogued mistake whose outputs match the submission's on the failing cases."""

    mistake: str
    title: str
    rationale: str
    help: str


@dataclass
class CaseResult:
    """The verdict on one case on one device, with everything a report may show."""

    name: str
    suite: str
    function: str
    device: str
    outcome: Outcome
    message: str = ""
    about: str = ""
    inputs: str = ""
    details: list[str] = field(default_factory=list)
    traceback: str = ""
    stdout: str = ""
    stderr: str = ""
    platform_output: str = ""  # lines torch printed on its own about the sandbox, never the learner's (channel/noise.py)
    diagnosis: Diagnosis | None = None
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # what the kernel counted for the learner's processes on this case (the budget's unit)
    extra: dict = field(default_factory=dict)
    points: float = 1.0
    visibility: str = "visible"
    required: bool = False
    load_failed: bool = False  # the learner's file could not be imported, so this case never ran
    not_run: str = ""  # why it was reported without running: 'timeouts', 'memory', 'depends' or 'budget' (budget.py)
    cause: str = ""    # what failed, in the grader's words alone: the same for every case that failed so (results/groups.py)
    # The exercise's functions this case's call was seen reaching in the worker (or, for a distributed case, that the
    # course's program calls): only these may explain its failure by theirs.
    reached: list[str] = field(default_factory=list)

    @property
    def hidden(self) -> bool:
        return self.suite == "hidden"

    @property
    def passed(self) -> bool:
        return self.outcome is Outcome.PASSED


@dataclass
class Report:
    """Everything one `run` or `submit` found, in case order."""

    exercise: str
    mode: str
    file: str
    results: list[CaseResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    load_error: str = ""
    integrity_error: str = ""  # the course changed while grading: nothing this run found can be trusted
    not_graded: str = ""       # this machine could not grade it as promised (the sandbox could not start, or hold)
    containment: str = ""      # what confined the learner's code (grader/sandbox/__init__.py says)
    selection: str = ""        # `run -k PATTERN`: only the examples matching it ran
    import_stdout: str = ""    # what the learner's file printed while the examples' worker imported it
    import_stderr: str = ""
    seconds: float = 0.0
    declared_max: float | None = None  # the exercise's max_score; None: one point per case
    # Known before the first case runs, for a progress display: results to come per suite, in run order.
    planned: dict[str, int] = field(default_factory=dict)
    # Which of the learner's functions each function calls (the checker says): a failure of one may explain another's.
    uses: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def counted(self) -> list[CaseResult]:
        """The cases that count toward the score: every one that ran."""
        return [result for result in self.results if result.outcome is not Outcome.SKIPPED]

    @property
    def max_score(self) -> float:
        return self.declared_max if self.declared_max is not None else sum(r.points for r in self.counted)

    def weight(self, result: CaseResult) -> float:
        """What one case is worth, its points scaled so that all of them add up to the maximum score."""
        return self.weights([result])[0]

    def weights(self, results: list[CaseResult]) -> list[float]:
        """What each of `results` is worth, the total and the maximum worked out once for all of them."""
        counted = self.counted
        total = sum(r.points for r in counted)
        most = self.declared_max if self.declared_max is not None else total
        return [result.points * most / total if total else 0.0 for result in results]

    @property
    def required_failed(self) -> list[CaseResult]:
        return [r for r in self.counted if r.required and r.outcome.counts_as_failure]

    @property
    def score(self) -> float:
        """Points earned, scaled to the maximum; nothing at all when a required case failed or nothing ran."""
        if self.required_failed or self.status == "error":
            return 0.0
        return round(sum(self.weights([r for r in self.counted if r.passed])), 6)

    def count(self, *outcomes: Outcome) -> int:
        return sum(result.outcome in outcomes for result in self.results)

    @property
    def passed(self) -> int:
        return self.count(Outcome.PASSED)

    @property
    def skipped(self) -> int:
        return self.count(Outcome.SKIPPED)

    @property
    def failed(self) -> int:
        """Every case that counts as a failure, those not attempted included (what decides the status)."""
        return sum(result.outcome.counts_as_failure for result in self.results)

    @property
    def not_attempted(self) -> int:
        return self.count(Outcome.NOT_ATTEMPTED)

    @property
    def ran(self) -> int:
        """Cases that ran at all (not skipped)."""
        return len(self.results) - self.skipped

    @property
    def status(self) -> str:
        """'error' when the file could not be graded, the course changed or nothing ran; else 'passed' or 'failed'."""
        if self.load_error or self.integrity_error or self.not_graded or not self.ran:
            return "error"
        return "failed" if self.failed else "passed"

    @property
    def all_not_attempted(self) -> bool:
        ran = [result for result in self.results if result.outcome is not Outcome.SKIPPED]
        return bool(ran) and all(result.outcome is Outcome.NOT_ATTEMPTED for result in ran)

    def summary_line(self) -> str:
        """The closing count line, '3 passed, 2 failed, 2 not attempted': a stub's cases are not called failed,
        nor are those of a file that could not be imported ('0 passed, 0 failed, 163 not run (...)')."""
        unrun = sum(result.load_failed for result in self.results)
        line = f"{self.passed} passed, {self.failed - self.not_attempted - unrun} failed"
        line += f", {self.not_attempted} not attempted" if self.not_attempted else ""
        line += f", {unrun} not run (the file could not be imported)" if unrun else ""
        return line + (f", {self.skipped} skipped" if self.skipped else "")
