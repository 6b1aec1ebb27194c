"""What confines a learner process, as values: its environment allow-list and the sizes of what it may write."""

from __future__ import annotations

import os
import sys

import grader

# Starts one of the grader's modules isolated (-I: no current folder, no PYTHON* variables, no user site on the
# path) with the grader package loaded from its own folder alone: nothing beside it, such as a `torch.py` in the
# folder the grader was started from, can be imported in its place.
BOOTSTRAP = ("import importlib.util, runpy, sys; "
             "folder, module = sys.argv[1], sys.argv[2]; "
             "spec = importlib.util.spec_from_file_location('grader', folder + '/__init__.py', "
             "submodule_search_locations=[folder]); "
             "package = importlib.util.module_from_spec(spec); sys.modules['grader'] = package; "
             "spec.loader.exec_module(package); sys.argv = [module, *sys.argv[3:]]; "
             "runpy.run_module(module, run_name='__main__', alter_sys=True)")

TMP_BYTES = 256 << 20        # the private /tmp (and /dev/shm): memory, counted against the memory limit
FILE_BYTES = 256 << 20       # the largest file a learner process may write


def module_command(module: str, *args: str) -> list[str]:
    """The command that runs `python -m module args` isolated, the grader package found where it lies."""
    return [sys.executable, "-I", "-B", "-c", BOOTSTRAP, str(grader.PACKAGE), module, *args]


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
    # Where the machine's CUDA driver (libcuda.so.1) is found only through the library path (Colab's
    # /usr/lib64-nvidia, containers' /usr/local/nvidia/lib64), torch needs it too: absolute folders alone, since
    # an empty or relative entry means a folder the learner's code can write (the sandbox's own).
    libraries = [folder for folder in os.environ.get("LD_LIBRARY_PATH", "").split(":") if folder.startswith("/")]
    if libraries:
        env["LD_LIBRARY_PATH"] = ":".join(libraries)
    env.update(extra)
    return env
