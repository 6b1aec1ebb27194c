"""Entry point for `python -m grader`."""

import os
import sys

# `python -m` put the folder it was started from first on the path; the grader is imported already, and nothing
# else may be imported from there (a `torch.py` beside a submission would run as the grader itself).
if sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from grader.cli import entry  # noqa: E402

entry()
