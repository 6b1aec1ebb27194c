"""The exercise author's whole surface: what `exercises/*/` may import from the grader, and nothing else.

An exercise's `checker.py` subclasses `Checker`, declares each learner function as a `Function`, and
builds `Inputs` and exact answers; `Tolerance` is the per-dtype error bound a case may override. A
distributed suite is a `DistributedSuite` whose cases (`Case`, read with `load_case_file`) are built as
`DistributedInputs`; its rank program, run inside the sandbox, calls the learner through `learner_function`
and `call_learner`. Everything else in the grader may move; these names stay.
"""

from grader.course.cases import Case, load_case_file
from grader.course.checker import DTYPES, HALF_DTYPES, Checker, Function, Inputs, Tolerance
from grader.course.distributed import DistributedInputs, DistributedSuite
from grader.errors import ConfigError
from grader.sandboxed.rank import LearnerFailure, call_learner, learner_function

__all__ = ["DTYPES", "HALF_DTYPES", "Case", "Checker", "ConfigError", "Function", "DistributedInputs", "DistributedSuite",
           "Inputs", "LearnerFailure", "Tolerance", "call_learner", "learner_function", "load_case_file"]
