"""grader: an autograding harness for ML-systems programming exercises."""

__version__ = "0.1.0"
