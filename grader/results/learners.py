"""A gradebook of learners: each roster learner joined with their submission's results, every adjustment applied."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from grader.results.cohort import EXTRA_TIME, NOT_GRADED, Counted, Entry

MISSING = "missing"  # the status of a learner who handed nothing in
PENALTY = re.compile(r"\s*(\d+(?:\.\d+)?)\s*%\s*/\s*(day|hour)\s*")


@dataclass(frozen=True)
class Learner:
    """One row of the roster, with the settings that are this learner's alone."""

    id: str
    name: str
    email: str
    submission: str = ""      # the entry's name as found in the submissions' folder; "" when nothing was handed in
    where: str = ""           # the file and line it was read from, for messages
    extra_time: float = 1.0   # every time limit and the budget times this
    late_days: int = 0        # days late that cost nothing
    override: float | None = None
    override_reason: str = ""   # staff's alone, unless `override_shown`: then the learner's feedback says it too
    override_shown: bool = False
    submitted_at: datetime | None = None  # said by the roster: wins over the submission's own time
    fields: dict[str, str] = field(default_factory=dict, compare=False)  # sid, canvas_id, sis_login_id, section


@dataclass(frozen=True)
class LatePolicy:
    """A due date and what each day (or hour) late costs, as a percentage of the points earned."""

    due: datetime | None = None
    percent: float = 0.0
    hours: float = 24.0  # the unit a late submission is counted in: a day or an hour, each one begun counting
    rule: str = ""       # as given, "10%/day"

    @property
    def unit(self) -> str:
        return "day" if self.hours == 24.0 else "hour"


@dataclass
class Row:
    """One line of the gradebook: a learner (None for an entry no roster row names) and what counts for them."""

    learner: Learner | None
    entry: Entry | None
    status: str
    graded: float | None  # the grader's score, before any adjustment
    score: float | None   # what counts: after the late penalty and any override; None while not graded
    reason: str = ""
    submitted_at: datetime | None = None
    late: int = 0         # days (or hours) late, each one begun counted
    excused: int = 0      # of those, covered by the learner's late days
    penalty: float = 0.0  # percent of the points taken
    extra_time: float = 1.0  # what the submission was graded with
    notes: list[str] = field(default_factory=list)  # every adjustment, in words, for staff
    shared: list[str] = field(default_factory=list)  # the same as the learner reads them: no reason kept from them


def parse_time(text: str) -> datetime:
    """An ISO 8601 time ('2026-12-01T23:59', '2026-12-01 23:59:00+01:00'); without an offset, this machine's zone."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text.strip()!r} is not a time such as 2026-12-01T23:59 or 2026-12-01T23:59+01:00") from None
    return moment if moment.tzinfo else moment.astimezone()


def late_policy(due: str | None, rule: str | None) -> LatePolicy:
    """The policy `--due` and `--late-penalty` give; ValueError says what is wrong with either."""
    if rule and not due:
        raise ValueError("--late-penalty needs --due: late from when?")
    if not due:
        return LatePolicy()
    try:
        moment = parse_time(due)
    except ValueError as error:
        raise ValueError(f"--due: {error}") from None
    if not rule:
        return LatePolicy(moment, rule="")
    found = PENALTY.fullmatch(rule)
    if not found:
        raise ValueError(f"--late-penalty {rule!r}: expected a percentage per day or hour, such as 10%/day")
    return LatePolicy(moment, float(found[1]), 24.0 if found[2] == "day" else 1.0, rule.strip())


def build_rows(learners: list[Learner], entries: list[Entry], policy: LatePolicy) -> tuple[list[Row], list[Row]]:
    """A row per learner, in roster order, and a row per entry that no learner names (by id), adjustments applied."""
    by_name = {entry.name: entry for entry in entries}
    named = {learner.submission for learner in learners if learner.submission}
    rows = [_row(learner, by_name.get(learner.submission), policy) for learner in learners]
    unmatched = [Row(None, entry, entry.status, _graded(entry), _graded(entry), entry.reason,
                     extra_time=_extra(entry)) for entry in entries if entry.name not in named]
    return rows, unmatched


def _graded(entry: Entry) -> float | None:
    return entry.score if entry.status != NOT_GRADED else None


def _extra(entry: Entry | None) -> float:
    return float(entry.settings.get(EXTRA_TIME, 1.0)) if entry else 1.0


def _row(learner: Learner, entry: Entry | None, policy: LatePolicy) -> Row:
    if not learner.submission:
        row = Row(learner, None, MISSING, None, 0.0, "nothing handed in")
    elif entry is None:
        row = Row(learner, None, NOT_GRADED, None, None,
                  f"not graded yet: grade {learner.submission} into this gradebook")
    else:
        row = Row(learner, entry, entry.status, _graded(entry), _graded(entry), entry.reason, extra_time=_extra(entry))
    if row.extra_time != 1.0:
        row.notes.append(f"extra time x{row.extra_time:g}")
    row.submitted_at = learner.submitted_at or _recorded_time(entry)
    if row.graded is not None and policy.due and row.submitted_at and row.submitted_at > policy.due:
        _charge_lateness(row, learner, policy)
    row.shared = list(row.notes)
    if learner.override is not None:
        shown = "; shown to the learner" if learner.override_shown else ""
        row.notes.append(f"override {learner.override:g} ({learner.override_reason}{shown})"
                         + (f", graded {row.score:g}" if row.score is not None else ""))
        row.shared.append(f"set to {learner.override:g} by the course staff"
                          + (f": {learner.override_reason}" if learner.override_shown else ""))
        row.score = learner.override
    return row


def counted_scores(rows: list[Row]) -> Counted:
    """The scores that count, one per roster learner whose score is known (a missing one's 0 among them), and what
    they are made of, for a summary's headline."""
    known = [row for row in rows if row.score is not None]
    return Counted([row.score for row in known if row.score is not None], len(rows),
                   sum(row.status == MISSING for row in rows), len(rows) - len(known),
                   sum(bool(row.notes) and row.score != row.graded for row in known))


def _recorded_time(entry: Entry | None) -> datetime | None:
    """The time its results file records it was handed in; None when it records none (lateness is not judged)."""
    try:
        return parse_time(entry.submitted_at) if entry and entry.submitted_at else None
    except ValueError:
        return None


def _charge_lateness(row: Row, learner: Learner, policy: LatePolicy) -> None:
    """Each day (hour) begun after the due date counts; the learner's late days cover the first ones."""
    assert row.submitted_at is not None and policy.due is not None and row.graded is not None
    row.late = math.ceil((row.submitted_at - policy.due) / timedelta(hours=policy.hours))
    row.excused = min(row.late, round(learner.late_days * 24 / policy.hours))
    row.penalty = min(100.0, policy.percent * (row.late - row.excused))
    unit = f"{policy.unit}{'s' * (row.late != 1)}"
    note = f"{row.late} {unit} late"
    if row.excused:
        note += f", {row.excused} covered by late days"
    if policy.percent:
        note += f": -{row.penalty:g}% ({policy.rule})"
    row.notes.append(note)
    row.score = round(row.graded * (1 - row.penalty / 100), 4)
