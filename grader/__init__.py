"""grader: an autograding harness for ML-systems programming exercises."""

from pathlib import Path

__version__ = "0.1.0"

# The package's own folder: the one anchor for every path to the grader's code (what is digested, bound
# read-only into a sandbox, hashed into remembered answers, zipped for Gradescope, copied into a learner bundle).
PACKAGE = Path(__file__).resolve().parent


def load_ipython_extension(ipython: object) -> None:
    """`%load_ext grader` in Jupyter or Colab: the %grader and %%grader_file magics (grader/notebook.py).

    Imported by name, and only now: the package's root imports nothing of the layers above it, and `import
    grader`, which every sandboxed process does before learner code, stays as cheap as it was (no IPython,
    no torch)."""
    import importlib

    importlib.import_module("grader.notebook").register(ipython)
