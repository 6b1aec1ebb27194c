"""The communication rule: what a distributed case's ranks move between them, as the kernel counted it.

A distributed case's inputs set its bounds (grader/course/distributed.py: `min_traffic`, `max_traffic` and
`traffic_reason`); the bytes are counted on the ranks' own loopback once every rank has joined the group
(grader/grading/distributed.py), so nothing a rank says of itself enters the count. Judged once every rank's output
passed: the values alone show that every rank got what it lacked, since no rank can read another's.
"""

from __future__ import annotations

from grader.course.rules.rule import DistributedCall, Rule
from grader.results import CaseResult, Outcome


class Communication(Rule):
    """At least the bytes that pass every rank the data it lacks, and no more than the case allows."""

    kinds = ("communication",)

    def judge_distributed(self, group: DistributedCall, result: CaseResult) -> None:
        inputs, traffic = group.inputs, group.traffic
        if traffic is None:
            if inputs.max_traffic:
                # A ceiling on communication is a rule of its own: where nothing counts it, the case is not passed.
                result.outcome = Outcome.NOT_JUDGED
                result.message = ("not judged here: the bytes the ranks moved between them cannot be counted without "
                                  "a network namespace of their own; submit where the grader's sandbox runs")
            return
        if traffic < inputs.min_traffic:
            result.outcome = Outcome.FAILED
            result.message = (f"the ranks moved only {traffic} bytes between them (counted by the kernel); this "
                              f"case needs at least {inputs.min_traffic} to pass every rank the data it lacks")
        elif inputs.max_traffic and traffic > inputs.max_traffic:
            result.outcome = Outcome.FAILED
            result.message = (f"the ranks moved {traffic} bytes between them (counted by the kernel); this case "
                              f"allows at most {inputs.max_traffic}"
                              + (f": {inputs.traffic_reason}" if inputs.traffic_reason else ""))
            result.extra["violates"] = "communication"


RULE = Communication()
