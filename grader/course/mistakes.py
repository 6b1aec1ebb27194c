"""Catalogued mistakes written as differences: the reference solution with some of its definitions replaced.

A mistake file holds the three strings a learner will read (TITLE, RATIONALE, HELP, and VIOLATES
for a broken rule) and only the functions (or constants) that differ from the reference. The
grader composes the runnable module by appending the mistake to the reference's source, so
later definitions win: a reader sees the mistake at once, and it still runs as a whole
submission (in the sandbox, for `grader validate`) and as a module (in the grader, for the
diagnosis).
"""

from __future__ import annotations

import __future__
import tempfile
from pathlib import Path
from types import ModuleType

from grader.course.rules import KINDS
from grader.course.yamlfile import Key, KeyTable

# What a mistake file says, as module constants: diagnosis shows the strings, validate refuses a file lacking one.
CONSTANTS = KeyTable("a mistake file (solutions/EX/mistakes/NAME.py)", (
    Key("TITLE", "string", "the mistake in a few words: the report's \"Likely mistake\" line"),
    Key("RATIONALE", "string", "what goes wrong, and why"),
    Key("HELP", "string", "what to look at to fix it"),
    Key("VIOLATES", " | ".join(f'"{kind}"' for kind in KINDS), "the rule it breaks, for a mistake whose values are "
        "right: matched to a submission that breaks the rule the same way", "", '"" (its values are wrong)'),
))
STRINGS = tuple(key.name for key in CONSTANTS if key.required)  # TITLE, RATIONALE, HELP

SEAM = "\n\n# ---------------- the mistake: what follows replaces the reference's definitions ----------------\n"
FUTURE = "from __future__ import"


def compose(mistake: Path, reference: Path) -> str:
    """The reference's source with the mistake's appended (its `from __future__` lines blanked: not allowed there)."""
    own = ["" if line.startswith(FUTURE) else line for line in mistake.read_text(encoding="utf-8").splitlines()]
    return reference.read_text(encoding="utf-8").rstrip() + SEAM + "\n".join(own) + "\n"


def load(mistake: Path, reference: Path) -> ModuleType:
    """The composed module, imported in this process (instructor code: trusted).

    The reference and the mistake are compiled each as its own file into one namespace, the mistake's
    definitions last: the same module as the composed source, but every line a traceback or a SyntaxError
    names is a line of the file it is in. Whatever the mistake's file raises is raised here.
    """
    module = ModuleType(f"mistake_{mistake.stem}")
    module.__file__ = str(mistake)
    base = compile(reference.read_text(encoding="utf-8"), str(reference), "exec")
    exec(base, module.__dict__)  # noqa: S102
    # The reference's `from __future__` imports hold for the mistake too, as they do in the composed file.
    inherited = base.co_flags & _FUTURE_FLAGS
    exec(compile(mistake.read_text(encoding="utf-8"), str(mistake), "exec", flags=inherited, dont_inherit=True),
         module.__dict__)  # noqa: S102
    return module


def as_submission(mistake: Path, reference: Path, folder: Path) -> Path:
    """The composed module written as a learner's file would be, under the mistake's own name."""
    path = folder / mistake.name
    path.write_text(compose(mistake, reference), encoding="utf-8")
    return path


def temporary_folder() -> Path:
    return Path(tempfile.mkdtemp(prefix="grader-mistakes-"))


_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag
