"""An exercise's rule settings: exercise.yaml's `rules:`, read by each rule that has a key there, and written back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from grader.course.rules import KEYED
from grader.course.yamlfile import Key, KeyTable, line_of_key
from grader.errors import ConfigError

# exercise.yaml's `rules:`: a key per rule that has one, its type, meaning and default the rule's own (RULES).
TABLE = KeyTable("exercise.yaml: rules", tuple(Key(str(rule.key), rule.value_type, rule.meaning, rule.default)
                                               for rule in KEYED))
KEYS: tuple[str, ...] = tuple(sorted(TABLE.names))


class Rules:
    """What an exercise forbids, judged by the grader on every case: a setting per rule with a key in exercise.yaml,
    read by that key (`rules.forbidden`, `rules.inputs_unchanged`), its rule's default where the file says nothing."""

    def __init__(self, **settings: Any) -> None:
        unknown = sorted(set(settings) - set(KEYS))
        if unknown:
            raise TypeError(f"no rule has the key {unknown[0]!r}")
        self.__dict__["_settings"] = {rule.key: settings.get(rule.key, rule.default) for rule in KEYED}

    def __getattr__(self, key: str) -> Any:
        try:
            return self.__dict__["_settings"][key]
        except KeyError:
            raise AttributeError(key) from None

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError(f"an exercise's rules are read-only (tried to set {key!r})")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Rules) and self._settings == other._settings

    def __hash__(self) -> int:
        return hash(tuple(self._settings.items()))

    def __repr__(self) -> str:
        return f"Rules({', '.join(f'{key}={value!r}' for key, value in self._settings.items())})"

    def to_yaml(self) -> dict[str, Any]:
        """Every rule as `exercise.yaml` spells it (a learner bundle writes them all, whatever rules exist)."""
        return {rule.key: rule.written(self._settings[rule.key]) for rule in KEYED}


def parse_rules(value: object, path: Path, line: int | None) -> Rules:
    """exercise.yaml's `rules:` mapping (None: every default); ConfigError naming `path` and the line at fault."""
    if value is None:
        return Rules()
    if not isinstance(value, dict) or set(value) - set(KEYS):
        unknown = sorted(set(value) - set(KEYS)) if isinstance(value, dict) else []
        raise ConfigError(f"rules must be a mapping of {', '.join(KEYS)}"
                          + (f", not {unknown[0]!r}" if unknown else ""), path,
                          line_of_key(value, unknown[0]) if unknown else line)
    return Rules(**{rule.key: rule.parse(value[rule.key], path, line_of_key(value, rule.key))
                    for rule in KEYED if rule.key in value})


def check_rules(rules: Rules, path: Path) -> None:
    """Refuse a setting the grader could never see broken (a forbidden operator misspelt, or always decomposed by
    torch first): one line naming exercise.yaml (`path`) and the line. Runs where grading starts."""
    for rule in KEYED:
        rule.check(getattr(rules, str(rule.key)), path)
