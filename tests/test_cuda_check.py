"""benchmarks/cuda_check.py, where it can run here: without a GPU it says so, names the torch it found, exits 0."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import REPO


def test_without_a_gpu_the_cuda_check_says_so_and_exits_0(tmp_path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the check would run every CUDA path (minutes); run it by hand")
    table = tmp_path / "cuda.json"
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "cuda_check.py"), "--json", str(table)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith(f"No GPU here: torch {torch.__version__} (")
    assert "finds no CUDA device" in done.stdout and done.stderr == ""
    found = json.loads(table.read_text())
    assert found["gpu"] is False and found["gpus"] == 0 and found["checks"] == []
    assert found["torch"] == torch.__version__ and found["python"] == sys.executable
