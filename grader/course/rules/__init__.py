"""The rules an exercise can declare, one module each; RULES is their table, in the order a verdict seeks one broken.

A rule is a subclass of grader.course.rules.rule.Rule in a module of its own here, registered by one line below:
exercise.yaml's `rules:`, a case's `audit:`, the worker's observations, the verdict on a call or a distributed case and
the kinds a catalogued mistake's VIOLATES may name are all read from this table.
"""

from __future__ import annotations

from grader.course.rules import communication, forbidden, inputs_unchanged, memory
from grader.course.rules.rule import Observations, Rule

RULES: tuple[Rule, ...] = (
    forbidden.RULE,
    inputs_unchanged.RULE,
    memory.RULE,
    communication.RULE,
)

KINDS: tuple[str, ...] = tuple(kind for rule in RULES for kind in rule.kinds)  # every violation a verdict can name
KEYED: tuple[Rule, ...] = tuple(rule for rule in RULES if rule.key)  # those exercise.yaml's `rules:` sets
AUDITS: frozenset[str] = frozenset(rule.audit for rule in RULES if rule.audit)  # what a case's `audit:` may name
DRAWN_AS: dict[str, str] = {kind: rule.drawn_as for rule in RULES for kind in rule.kinds if rule.drawn_as}  # by kind
OBSERVATIONS: Observations = {name: kind for rule in RULES for name, kind in rule.observes.items()}
