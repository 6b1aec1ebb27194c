"""What confines a learner process, as values: its environment allow-list and the sizes of what it may write."""

from __future__ import annotations

import os

import grader

TMP_BYTES = 256 << 20        # the private /tmp (and /dev/shm): memory, counted against the memory limit
FILE_BYTES = 256 << 20       # the largest file a learner process may write


def base_env(**extra: str) -> dict[str, str]:
    """A learner process's environment, from an allow-list: nothing of the grader's own leaks in."""
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8", "USER": "learner", "LOGNAME": "learner", "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": str(grader.PACKAGE.parent), "PYTHONNOUSERSITE": "1",
        # One thread per process: CPU time then measures the work, and parallel graders do not oversubscribe.
        "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
        # Every block of 128 KiB or more is mapped on its own and returned when freed: the kernel's memory
        # figures then follow what is alive, not what the allocator's heap kept after fragmenting.
        # Huge pages for those blocks make the kernel's work on them cheap (glibc 2.35+; ignored elsewhere).
        "MALLOC_MMAP_THRESHOLD_": "131072", "MALLOC_TRIM_THRESHOLD_": "131072",
        "GLIBC_TUNABLES": "glibc.malloc.hugetlb=1",
    }
    for name in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"):
        if name in os.environ:
            env[name] = os.environ[name]
    env.update(extra)
    return env
