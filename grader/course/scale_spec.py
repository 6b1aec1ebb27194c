"""exercise.yaml's `scale`: which function `grader scale` measures, at which growing sizes, and what it measures.

    scale:
      function: ring_attention        # a function of the checker, or the function of a distributed suite
      axis: keys                      # what the sizes count, in the picture and the words
      case: {lq: 16, d: 8, chunks: {size: 1024}}   # the checker's keys, as a case file writes them
      grow: chunks.total              # the key each size sets (a dotted path into `case`)
      sizes: [1024, 4096, 16384, 65536, 262144]    # 4 to 6, growing; or mappings: {size: 512, hidden: [256, 256]}
      measure: [memory, time]         # of time, memory (the kernel's peak), traffic (a distributed suite's bytes)
      naive: [keep_all_score_blocks]  # the catalogue's naive design(s), measured beside the reference
      budget: 13                      # wall-clock seconds at most for the whole command (twice a submit)
      says: {memory: {flat: one chunk at a time, linear: every score block is kept}}

Only the structure is read here, with the line of each key; the sizes are checked against the checker's own
keys when `grader scale` runs (`size_params`), since that needs the checker loaded.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from grader.course.yamlfile import Key, KeyTable, line_of, line_of_key
from grader.errors import ConfigError
from grader.results.growth import GROWTHS

MEASURES = ("time", "memory", "traffic")
MIN_SIZES, MAX_SIZES = 4, 6
DEFAULT_BUDGET = 120.0
SCALE = KeyTable("exercise.yaml: scale", (
    Key("function", "string", "the function measured: one of the checker's, or a distributed suite's"),
    Key("axis", "string", "what the sizes count, in the picture and the words (keys, hidden units)", "size"),
    Key("case", "mapping of the checker's case keys", "the case every size starts from", {}),
    Key("grow", "a case key, or a dotted path into one (chunks.total)", "the key a size given as a number sets", None,
        "none: every size is a mapping"),
    Key("sizes", f"list of {MIN_SIZES} to {MAX_SIZES} growing numbers, or mappings {{size: N, KEY: VALUE}}",
        "the sizes measured; a mapping sets the case keys it names, its place on the axis in `size`"),
    Key("measure", f"list of {', '.join(MEASURES)}", "what is measured: time, the kernel's peak memory, the bytes a "
        "distributed suite's ranks move", ["time"]),
    Key("naive", "list of mistake file stems", "the catalogue's naive designs, measured beside the reference", []),
    Key("budget", "number (wall-clock seconds, above 0)", "the whole command's time: twice a submit of the reference",
        DEFAULT_BUDGET),
    Key("says", f"mapping of a measure to {{GROWTH: words}} (growths: {', '.join(GROWTHS)})", "what a growth means "
        "here, said after it", {}),
))
KEYS = SCALE.names


@dataclass(frozen=True)
class Size:
    """One size: its value on the axis, the case keys it sets, and the line it is written on."""

    value: float
    sets: dict[str, Any] = field(hash=False, compare=False)
    line: int | None = None


@dataclass(frozen=True)
class ScaleSpec:
    """What `grader scale` measures for one exercise, as its exercise.yaml declares it."""

    function: str
    sizes: tuple[Size, ...]
    measures: tuple[str, ...]
    path: Path
    axis: str = "size"
    case: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    naive: tuple[str, ...] = ()
    budget: float = DEFAULT_BUDGET
    says: dict[str, dict[str, str]] = field(default_factory=dict, hash=False, compare=False)
    lines: dict[str, int | None] = field(default_factory=dict, hash=False, compare=False)

    def error(self, message: str, key: str = "") -> ConfigError:
        """A ConfigError at the line of one of the section's keys (the section's own line without one)."""
        return ConfigError(f"scale: {message}", self.path, self.lines.get(key) or self.lines.get(""))


def parse_scale(value: Any, path: Path, line: int | None) -> ScaleSpec | None:
    """The `scale` section, checked key by key; None where the exercise has none."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ConfigError(f"scale must be a mapping of {', '.join(KEYS)}", path, line)
    unknown = SCALE.unknown(value)
    if unknown:
        raise ConfigError(f"scale: unknown key {unknown[0]!r} (known: {', '.join(KEYS)})", path,
                          line_of_key(value, unknown[0]))
    at = lambda key: line_of_key(value, key) if key in value else line  # noqa: E731

    def fail(message: str, key: str, where: int | None = None) -> ConfigError:
        return ConfigError(f"scale: {message}", path, where or at(key))

    function = value.get("function")
    if not isinstance(function, str) or not function:
        raise fail("function must name the function to measure", "function")
    axis = value.get("axis", SCALE.default("axis"))
    if not isinstance(axis, str) or not axis.strip():
        raise fail(f"axis must say what the sizes count (such as keys), not {axis!r}", "axis")
    case = value.get("case", SCALE.default("case"))
    if not isinstance(case, dict):
        raise fail(f"case must be a mapping of the checker's keys, not {case!r}", "case")
    grow = value.get("grow")
    if grow is not None and (not isinstance(grow, str) or not all(grow.split("."))):
        raise fail(f"grow must be a case key, or a dotted path into one (chunks.total), not {grow!r}", "grow")
    sizes = _sizes(value.get("sizes"), grow, fail)
    measures = _names(value.get("measure", SCALE.default("measure")), "measure", MEASURES, fail)
    naive = _names(value.get("naive", SCALE.default("naive")), "naive", None, fail)
    budget = value.get("budget", SCALE.default("budget"))
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or budget <= 0:
        raise fail(f"budget must be a positive number of seconds, not {budget!r}", "budget")
    says = _says(value.get("says", SCALE.default("says")), fail)
    lines = {key: line_of_key(value, key) for key in value}
    lines[""] = line
    return ScaleSpec(function, sizes, measures, path, axis.strip(), copy.deepcopy(case), naive, float(budget),
                     says, lines)


def _sizes(value: Any, grow: str | None, fail: Callable[..., ConfigError]) -> tuple[Size, ...]:
    if not isinstance(value, list) or not MIN_SIZES <= len(value) <= MAX_SIZES:
        count = len(value) if isinstance(value, list) else 0
        raise fail(f"sizes must list {MIN_SIZES} to {MAX_SIZES} growing sizes"
                   + (f", not {count}" if isinstance(value, list) else f", not {value!r}"), "sizes")
    item_lines = list(getattr(value, "item_lines", [])) + [None] * len(value)
    sizes: list[Size] = []
    for item, line in zip(value, item_lines):
        if isinstance(item, dict):
            number, sets = item.get("size"), {key: entry for key, entry in item.items() if key != "size"}
            if not sets:
                raise fail("a size written as a mapping sets at least one case key beside `size`", "sizes", line)
        else:
            number, sets = item, {}
            if grow is None:
                raise fail("a size given as a number needs `grow`: the case key it sets", "sizes", line)
        if isinstance(number, bool) or not isinstance(number, (int, float)) or number <= 0:
            raise fail(f"each size is a positive number (a mapping's `size`), not {number!r}", "sizes",
                       line_of_key(item, "size") if isinstance(item, dict) else line)
        if sizes and number <= sizes[-1].value:
            raise fail(f"sizes must grow: {number:g} comes after {sizes[-1].value:g}", "sizes", line)
        if not sets:
            sets = {grow: int(number) if float(number).is_integer() else number}
        sizes.append(Size(float(number), sets, line))
    return tuple(sizes)


def _names(value: Any, key: str, known: tuple[str, ...] | None, fail: Callable[..., ConfigError]) -> tuple[str, ...]:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(name, str) and name for name in names):
        raise fail(f"{key} must be a name or a list of names, not {value!r}", key)
    for name in names:
        if known is not None and name not in known:
            raise fail(f"{key}: {name!r} is not one of {', '.join(known)}", key)
    if known is not None and not names:
        raise fail(f"{key} must name at least one of {', '.join(known)}", key)
    return tuple(dict.fromkeys(names))


def _says(value: Any, fail: Callable[..., ConfigError]) -> dict[str, dict[str, str]]:
    if not isinstance(value, dict):
        raise fail("says must map a measure to what each growth means, such as {memory: {flat: ...}}", "says")
    said: dict[str, dict[str, str]] = {}
    for measure, meanings in value.items():
        where = line_of_key(value, measure)
        if measure not in MEASURES:
            raise fail(f"says: {measure!r} is not one of {', '.join(MEASURES)}", "says", where)
        if not isinstance(meanings, dict):
            raise fail(f"says: {measure} must map growths ({', '.join(GROWTHS)}) to words", "says", where)
        for growth, words in meanings.items():
            if growth not in GROWTHS or not isinstance(words, str):
                raise fail(f"says: {measure}: {growth!r} must be one of {', '.join(GROWTHS)}, mapped to words",
                           "says", line_of_key(meanings, growth))
        said[measure] = {growth: words.strip() for growth, words in meanings.items()}
    return said


def size_params(spec: ScaleSpec, size: Size) -> dict[str, Any]:
    """One size's case keys: the section's `case` with what the size sets (a dotted key into a mapping of it)."""
    params = copy.deepcopy(spec.case)
    for key, value in size.sets.items():
        *outer, last = key.split(".")
        into = params
        for part in outer:
            into = into.setdefault(part, {})
            if not isinstance(into, dict):
                raise spec.error(f"grow: {key} runs through {part!r}, which is not a mapping in case", "grow")
        into[last] = copy.deepcopy(value)
    return params


def checked_params(spec: ScaleSpec, validate: Callable[[str, dict[str, Any]], None]) -> list[dict[str, Any]]:
    """Every size's case keys, each checked by the checker's (or the suite's) `validate`: a ValueError becomes one
    line at the key it names in `case`, else at the size's own line."""
    found = []
    for size in spec.sizes:
        params = size_params(spec, size)
        try:
            validate(spec.function, params)
        except ValueError as error:
            message = str(error)
            named = next((key for key in spec.case if message.startswith(key) or f"'{key}'" in message), None)
            top = {key.split(".")[0] for key in size.sets}
            if named is not None and named not in top:
                line = line_of_key(spec.case, named)
            else:
                line = size.line or line_of(spec.case) or spec.lines.get("sizes")
            raise ConfigError(f"scale: size {size.value:g}: {message}", spec.path, line) from None
        found.append(params)
    return found
