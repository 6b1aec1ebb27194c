"""The communication rule: what a distributed case's ranks move between them, as the kernel counted it.

A distributed case's inputs set its bounds (grader/course/distributed.py: `min_traffic`, `max_traffic` and
`traffic_reason`); the bytes are counted on the ranks' own loopback once every rank has joined the group
(grader/grading/distributed.py), so nothing a rank says of itself enters the count, and every other channel between
the ranks is refused (grader/sandbox/sealing.py), so the count is all they exchanged. Judged once every rank's
output passed. Where the count is not all they exchanged (no network namespace of their own, CUDA's NCCL), a
ceiling is not judged; a floor alone is left unjudged there too, the case judged by its values.
"""

from __future__ import annotations

from grader.course.rules.rule import DistributedCall, Rule
from grader.results import CaseResult, Outcome


class Communication(Rule):
    """At least the bytes that pass every rank the data it lacks, and no more than the case allows."""

    kinds = ("communication",)
    drawn_as = "traffic"

    def judge_distributed(self, group: DistributedCall, result: CaseResult) -> None:
        inputs, traffic = group.inputs, group.traffic
        if traffic is None:
            if inputs.max_traffic:
                # A ceiling on communication is a rule of its own: where nothing counts it, the case is not passed.
                result.outcome = Outcome.NOT_JUDGED
                result.message = ("not judged here: the ranks could exchange data this machine does not count (no "
                                  "network namespace of their own, CUDA's NCCL, or bubblewrap's /proc), so what they "
                                  "moved cannot be bounded; submit where the grader's own sandbox runs on the CPU")
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
