"""grader: an autograding harness for ML-systems programming exercises."""

from pathlib import Path

__version__ = "0.1.0"

# The package's own folder: the one anchor for every path to the grader's code (what is fingerprinted, bound
# read-only into a sandbox, hashed into remembered answers, zipped for Gradescope, copied into a learner bundle).
PACKAGE = Path(__file__).resolve().parent
