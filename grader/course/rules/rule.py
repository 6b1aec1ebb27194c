"""What a rule is: how exercise.yaml writes it, what the worker observes for it, and how a call is judged by it.

A rule's module subclasses Rule, overrides the hooks that rule needs (the others leave it out of their step),
and registers one instance in grader/course/rules/__init__.py. The grader then reads its setting from exercise.yaml
(grader/course/exercise.py), asks the worker for its observations and judges every call by it
(grader/grading/case.py), a distributed case too (grader/grading/distributed_verdict.py), and checks a catalogued mistake's
VIOLATES against its kinds (grader/instructor/verdicts.py).

A verdict never takes the worker's word in the learner's favour: what the kernel measured and what the grader
handed over decide; what the worker observed beside learner code may count against it (the code could hide it,
never fake it in its own favour), or only explain what was held.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    from grader.results import CaseResult

# What the worker may report for a rule: per observation, its type and, for a list, the type of its items
# (INPUT: the position of one of the case's inputs). grader/channel/replies.py checks every reply against these.
Observations = Mapping[str, tuple[type, Any]]


@dataclass
class Violation:
    """A broken rule of the exercise: which one (a mistake's VIOLATES names it) and what to tell the learner;
    on a hidden case, the message without figures the learner's code could have chosen."""

    kind: str
    message: str
    hidden_message: str = ""
    # What broke it, in the grader's own terms (the operators listed, the input positions), so that the diagnosis
    # names the catalogued mistake that broke it the same way.
    evidence: list[Any] = field(default_factory=list)


@dataclass
class Call:
    """One learner call on one case as its rules see it: what was asked and, once it returned, what it left."""

    rules: Any                 # the exercise's Rules (grader/course/rules/settings.py)
    checker: Any               # the exercise's Checker: its memory budget, input names and reasons
    case: Any                  # the Case called
    inputs: Any                # its Inputs, as the checker built them
    observations: dict[str, Any] = field(default_factory=dict)  # what the worker reported, checked field by field
    modified: list[int] = field(default_factory=list)  # inputs whose pages changed, as the grader read them back
    peak: int | None = None    # bytes the kernel measured the call holding at once; None: nothing measured them

    @cached_property
    def names(self) -> list[str]:
        """A name for each input tensor, for messages (`key_chunks[0]`)."""
        return self.checker.input_names(self.case.function, self.inputs)

    def reason(self, kind: str) -> str:
        """The exercise's own words on a broken rule of `kind`; '' where it has none."""
        return self.checker.rule_reasons.get(kind, "")


@dataclass
class DistributedCall:
    """One distributed case whose every rank returned the right values, as its rules see it."""

    inputs: Any                # its DistributedInputs (grader/course/distributed.py), with the bounds it sets
    traffic: int | None        # bytes the kernel counted on the ranks' own loopback once all had joined; None:
                               # nothing counts all they exchange here (no network namespace of their own, or
                               # other channels between them open: grader/sandbox/sealing.py)


class Rule:
    """One rule an exercise can declare: where it is written, what it names, and its hooks (each hook's default
    leaves the rule out of that step)."""

    kinds: tuple[str, ...] = ()    # every kind of violation it names: what a catalogued mistake's VIOLATES may say
    key: str | None = None         # its key under exercise.yaml's `rules:`; None: declared elsewhere
    default: Any = None            # its setting where exercise.yaml says nothing
    value_type: str = ""           # what its key's value is, as exercise.yaml writes it (the reference's type)
    meaning: str = ""              # what its key asks, in a line (the reference's meaning)
    audit: str | None = None       # the word a case's `audit:` names to have the rule judged on that case
    observes: Observations = {}    # what the worker reports for it
    drawn_as: str = ""             # the measure of exercise.yaml's `scale` that shows it growing ('' for none)

    def parse(self, value: object, path: Path, line: int | None) -> Any:
        """exercise.yaml's value for the rule's key as its setting; ConfigError naming `path` and the line."""
        return value

    def written(self, setting: Any) -> Any:
        """The setting as exercise.yaml spells it (what a learner bundle writes)."""
        return setting

    def check(self, setting: Any, path: Path) -> None:
        """Refuse, where grading starts, a setting that could never fire (ConfigError naming exercise.yaml)."""

    def asks(self, call: Call) -> dict[str, Any]:
        """The fields of the worker's task that have it observe what the rule needs (an unobserved call has none)."""
        return {}

    def unjudged(self, call: Call) -> str:
        """Why this machine cannot judge the returned call honestly by the rule ('' when it can): not judged."""
        return ""

    def judge(self, call: Call) -> Violation | None:
        """The violation of the rule by a call that returned, or None."""
        return None

    def declared(self, rules: Any, checker: Any, cases: list[Any]) -> bool:
        """Whether the exercise asks for the rule (its setting, its checker's budget, a case's audit): validate then
        warns unless some case can fail it."""
        return False

    def can_fail(self, call: Call) -> bool:
        """Whether the rule judges this case's call, so that a call could fail it (checked by validate)."""
        return False

    def judge_distributed(self, group: DistributedCall, result: CaseResult) -> None:
        """Fill in `result` where a distributed case whose outputs all passed breaks the rule, or cannot be judged."""
