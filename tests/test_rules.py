"""The table of rules: each kind and key belongs to one rule, the worker reports only what the rules name, and an
exercise's settings survive being written back, copied and sent to another process."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
import torch

from grader.channel.replies import MalformedReply, parse_case
from grader.course.rules import AUDITS, KINDS, OBSERVATIONS, RULES
from grader.course.rules.settings import KEYS, Rules, parse_rules
from grader.sandboxed.observe import observe


def test_every_kind_key_and_observation_belongs_to_one_rule() -> None:
    assert len(KINDS) == len(set(KINDS)) and set(KINDS) >= {"forbidden", "inputs-modified", "communication"}
    assert KEYS == ("forbidden", "inputs_unchanged") and AUDITS == {"memory"}
    named = [name for rule in RULES for name in rule.observes]
    assert len(named) == len(set(named)) == len(OBSERVATIONS)


def test_what_the_worker_observes_is_what_the_rules_let_a_reply_carry() -> None:
    x = torch.randn(4, 6)
    with observe({"audit": ["memory"], "key_length": 6, "forbidden": ["aten.mul"]}) as seen:
        (x * 2).softmax(-1)
    seen["version_changed"] = [0]  # what the worker adds once the call returned
    assert seen["forbidden_seen"] == ["aten.mul"] and seen["materialized_count"] > 0
    body = {"kind": "returned", "id": 1, "value": {"type": "other", "name": "nothing"}, "observations": seen}
    assert parse_case(body, [], 1, 1, OBSERVATIONS).observations == seen
    with pytest.raises(MalformedReply, match="names an input that does not exist"):
        parse_case({**body, "observations": {"version_changed": [1]}}, [], 1, 1, OBSERVATIONS)
    with pytest.raises(MalformedReply, match="unknown or malformed"):
        parse_case({**body, "observations": {"peak_seen": 1}}, [], 1, 1, OBSERVATIONS)


def test_settings_read_back_as_written_and_survive_a_copy_to_another_process() -> None:
    rules = Rules(forbidden=("aten._softmax", "family:layer_norm"), inputs_unchanged=False)
    written = rules.to_yaml()
    assert written == {"forbidden": ["aten._softmax", {"family": "layer_norm"}], "inputs_unchanged": False}
    assert parse_rules(written, Path("exercise.yaml"), 1) == rules
    copied = pickle.loads(pickle.dumps(rules))
    assert copied == rules and hash(copied) == hash(rules) and copied.forbidden == rules.forbidden
    assert Rules() == parse_rules(None, Path("exercise.yaml"), 1) and Rules().inputs_unchanged is True


def test_settings_are_read_only_and_name_only_rules_that_exist() -> None:
    with pytest.raises(TypeError, match="no rule has the key 'forbid'"):
        Rules(forbid=())
    with pytest.raises(AttributeError):
        Rules().forbidden = ("aten.mul",)
    with pytest.raises(AttributeError):
        Rules().no_such_rule
