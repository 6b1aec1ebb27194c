"""The terminal view of `grader validate`: a line per check, the catalogue's matrix in short, then a verdict."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

from grader.results.validation import Validation

EXAMPLE_NAMES = 3  # case names shown per line in the terminal; the JSON has them all


def render_validation(validation: Validation, console: Console) -> None:
    """One line per check, the catalogue's matrix in short, then a verdict."""
    console.print(f"[heading]validate {escape(validation.exercise)}[/]")
    for check in validation.checks:
        style, label = ("passed", "ok  ") if check.ok and not check.warning else (
            ("timed out", "warn") if check.warning else ("failed", "FAIL"))
        console.print(f"[{style}]{label}[/] {escape(check.name)}" + (f" [muted]({escape(check.detail)})[/]"
                                                                     if check.detail else ""))
    if validation.matrix is not None:
        for line in matrix_lines(validation.matrix):
            console.print(escape(line))
    if validation.timing:
        timing = validation.timing
        console.print(f"[muted]{timing.get('seconds', 0)} s; {timing.get('verdicts_graded', 0)} case verdicts "
                      f"graded, {timing.get('verdicts_remembered', 0)} remembered from the last validate[/]")
    if validation.recorded:
        console.print(f"[muted]Recorded in {escape(validation.recorded)}: commit it with the course (the tests "
                      f"check the catalogue against it).[/]")
    verdict = "valid" if validation.ok else "NOT valid"
    console.print(f"{validation.exercise} is {verdict}: {sum(c.ok for c in validation.checks)} passed, "
                  f"{sum(not c.ok for c in validation.checks)} failed", markup=False)


def matrix_lines(matrix: Any) -> list[str]:
    """The matrix in a few lines a person reads: per mistake, then what the cases add."""
    lines = [f"mistakes against the cases ({len(matrix.rows)}): cases that catch each; what the diagnosis names "
             f"there; what it would name were the mistake not catalogued"]
    width = max((len(row.stem) for row in matrix.rows), default=0)
    for row in matrix.rows:
        if not row.caught_by:
            lines.append(f"  {row.stem:<{width}}  NOT CAUGHT")
            continue
        alone = " (the distributed suite's alone)" if len(row.distributed) == len(row.caught_by) else ""
        lines.append(f"  {row.stem:<{width}} {len(row.caught_by):4d} cases{alone}  named {row.named_itself}/"
                     f"{len(row.caught_by)}{_others(row.named, row.stem)}; without it: {_others(row.without_itself, '', True)}"
                     + _raising(row))
    nothing = matrix.catching_nothing()
    lines.append(f"cases that catch no mistake ({len(nothing)}): " + (_some(nothing) if nothing else "none"))
    sole = matrix.sole_catchers()
    lines.append("cases that alone catch a mistake:" + ("" if sole else " none"))
    lines.extend(f"  {case}: {', '.join(stems)}" for case, stems in sorted(sole.items()))
    pairs = matrix.indistinguishable()
    lines.append("mistakes the diagnosis cannot tell apart:" + ("" if pairs else " none"))
    lines.extend(f"  {first} and {second}" for first, second in pairs)
    accepted = sum(matrix.variants.values())
    lines.append(f"variants: {accepted} of {len(matrix.variants)} accepted on every case")
    return lines


def _raising(row: Any) -> str:
    """A mistake caught by raising is caught by the case's inputs, not by its answer: say so."""
    if row.only_by_raising:
        return "; caught only by raising (no case sees a wrong answer from it)"
    return f"; {len(row.raised)} of them by raising" if row.raised else ""


def _others(named: dict, own: str, leave_out: bool = False) -> str:
    """What a diagnosis named other than `own`, counted: ', as x on 3' (or, left out: 'nothing on 5, x on 2')."""
    counts: dict[str, int] = {}
    for stem in named.values():
        if stem != own:
            counts[stem or "nothing"] = counts.get(stem or "nothing", 0) + 1
    parts = [f"{stem} on {count}" for stem, count in sorted(counts.items(), key=lambda item: -item[1])]
    if leave_out:
        return ", ".join(parts) or "nothing to tell"
    return f" (also {', '.join(parts)})" if parts else ""


def _some(names: list[str]) -> str:
    return ", ".join(names[:EXAMPLE_NAMES]) + (f", and {len(names) - EXAMPLE_NAMES} more" if len(names) > EXAMPLE_NAMES
                                               else "")
