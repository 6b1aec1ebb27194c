"""The name a report gives each failing case, once every case is known: the same choice for a learner's report
(grader/grading/diagnosis.py reconcile) and for validate's matrix (grader/instructor/matrix.py).

Each failing case comes with the catalogued mistakes that agree with it, closest first. Where several agree,
the one agreeing with the most of the report's failing cases is named (two bad starting maxes both give NaN
on very negative scores; the cases where they differ decide which one was made). A case whose output holds
nothing finite is a symptom: it is named after a mistake only if that mistake reproduces the same non-finite
pattern there and agrees with every other failing case of the report; else it is "non-finite", a diagnosis
of its own (an overflow, or 0/0), never a mistake that merely also overflows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SYMPTOM = "non-finite"  # the stem of the diagnosis an output with nothing finite gets when no mistake explains it


@dataclass
class Agreeing:
    """One failing case: the mistakes that agree with it (closest first), and whether its output is a symptom."""

    stems: list[str] = field(default_factory=list)
    symptom: bool = False


def choose(cases: dict[str, Agreeing]) -> dict[str, str | None]:
    """case -> the stem it is named after (SYMPTOM for an unexplained symptom, None when nothing agrees)."""
    counts: dict[str, int] = {}
    for found in cases.values():
        for stem in found.stems:
            counts[stem] = counts.get(stem, 0) + 1
    named: dict[str, str | None] = {}
    for case, found in cases.items():
        stems = found.stems
        if found.symptom:
            others = [other for name, other in cases.items() if name != case]
            stems = [stem for stem in stems if all(stem in other.stems for other in others)]
            if not stems:
                named[case] = SYMPTOM
                continue
        # Ranked by report-wide count; the case's own closeness (the list's order) breaks ties.
        named[case] = max(stems, key=lambda stem: (counts[stem], -stems.index(stem))) if stems else None
    return named
