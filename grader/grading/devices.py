"""Where cases run: what `--device` may name, for one file graded and for a cohort (the parser reads it too)."""

from __future__ import annotations

# run, submit and watch: the CPU, CUDA, or all of them (the CPU, and CUDA where this machine has it).
DEVICES: tuple[str, ...] = ("cpu", "cuda", "all")
# grade: the CPU, the same on every machine, or all of them (CUDA too); a cohort is never graded on CUDA alone.
COHORT_DEVICES: tuple[str, ...] = tuple(device for device in DEVICES if device != "cuda")
