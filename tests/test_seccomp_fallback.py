"""The seccomp program assembled without libseccomp, from seccomp.json and syscalls.json, refuses what libseccomp does.

Both programs are run here by a small classic-BPF interpreter, for x86_64 and aarch64, every kind of
sandbox and every system-call number a filter could see; tests/test_seccomp.py tries them in the kernel.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import struct
from pathlib import Path

import pytest
from conftest import REPO

from grader.sandbox import lockdown, seccomp, seccomp_bpf

try:
    seccomp.compiled()
    MISSING = ""
except seccomp.Unavailable as why:
    MISSING = str(why)
needs_libseccomp = pytest.mark.skipif(bool(MISSING), reason=MISSING or "libseccomp present")

KIND_SETS = [frozenset(chosen) for count in range(len(seccomp.KINDS) + 1)
             for chosen in itertools.combinations(seccomp.KINDS, count)]
FOREIGN_ARCH = 0x40000003  # i386's audit token: another architecture's calls


def run(program: bytes, nr: int, arch: int, args: tuple[int, ...] = (0,) * 6) -> int:
    """What a classic-BPF seccomp program returns for one call (struct seccomp_data, little-endian)."""
    data = struct.pack("<iIQ6Q", nr, arch, 0, *args)
    code = [struct.unpack("=HBBI", program[at:at + 8]) for at in range(0, len(program), 8)]
    a, pc = 0, 0
    while True:
        op, jt, jf, k = code[pc]
        pc += 1
        if op == 0x20:
            a = struct.unpack_from("<I", data, k)[0]
        elif op == 0x54:
            a &= k
        elif op == 0x05:
            pc += k
        elif op == 0x06:
            return k
        elif op in (0x15, 0x25, 0x35, 0x45):
            taken = {0x15: a == k, 0x25: a > k, 0x35: a >= k, 0x45: bool(a & k)}[op]
            pc += jt if taken else jf
        else:
            raise AssertionError(f"instruction {op:#x} is not interpreted here")


def calls_with_arguments(arch: str) -> set[int]:
    table = seccomp_bpf.numbers()[arch]["numbers"]
    return {table[name] for entry in seccomp.load_policy()["syscalls"] if entry.get("args")
            for name in entry["names"] if table[name] is not None}


def argument_sets() -> list[tuple[int, ...]]:
    draw = random.Random(26)
    firsts = [0, (1 << 64) - 1] + [1 << bit for bit in range(64)] + [draw.getrandbits(64) for _ in range(64)]
    firsts += [0x00010000 | 0x10000000, 0x00010000 | 0x00000100 | 0x00000800, 0x7E020000, 0x00010000 << 32]
    found = [(first, *(draw.getrandbits(64) for _ in range(5))) for first in firsts]
    # Small values in each of the first three places, alone and with the upper half set: socket's family and
    # protocol, fcntl's command, each tested against the values the policy names.
    small = [*range(48), 1024, 1025, 1026, 1027]
    for index in range(3):
        for value in small + [1 << 32 | value for value in small]:
            for rest in (0, draw.getrandbits(64)):
                found.append(tuple(value if place == index else rest for place in range(6)))
    return found


@needs_libseccomp
@pytest.mark.parametrize("arch", seccomp.ARCHES)
@pytest.mark.parametrize("kinds", KIND_SETS, ids=lambda kinds: "+".join(sorted(kinds)) or "plain")
def test_the_assembled_program_answers_every_call_as_libseccomps_does(arch, kinds) -> None:
    ours = seccomp_bpf.assemble(seccomp.load_policy(), kinds, arch)
    theirs = seccomp.compiled(kinds, arch=arch)
    token = seccomp_bpf.numbers()[arch]["audit_arch"]
    numbers = [*range(600), *range(0x40000000, 0x40000000 + 600), 0x7FFFFFFF, -1, -2]
    differ = [(nr, hex(arch_seen)) for nr in numbers for arch_seen in (token, FOREIGN_ARCH)
              if run(ours, nr, arch_seen) != run(theirs, nr, arch_seen)]
    assert differ == []
    table = seccomp_bpf.numbers()[arch]["numbers"]
    assert (run(ours, table["ptrace"], token), run(ours, table["clone3"], token)) == (0x50001, 0x50026)
    assert run(ours, 0, token) == seccomp_bpf.ALLOW and run(ours, 0, FOREIGN_ARCH) == 0x50026
    with_arguments = calls_with_arguments(arch)
    assert with_arguments  # clone's flags
    differ = [(nr, [hex(a) for a in args]) for nr in with_arguments for args in argument_sets()
              if run(ours, nr, token, args) != run(theirs, nr, token, args)]
    assert differ == []


@needs_libseccomp
def test_every_argument_test_is_assembled_as_libseccomp_compiles_it(tmp_path) -> None:
    """Each comparison libseccomp knows, on a 64-bit value with both halves set, against every argument set."""
    value, second = 0x0000000500000010, 0x0000000400000010
    tests = [{"index": 0, "op": op, "value": value, "valueTwo": second} for op in seccomp.OPS]
    tests.append({"index": 0, "op": seccomp.MASKED_NE, "value": value})
    nr = seccomp_bpf.numbers()["x86_64"]["numbers"]["clone"]
    for test in tests:
        policy = {"defaultAction": "SCMP_ACT_ALLOW", "badArchAction": "SCMP_ACT_ERRNO", "badArchErrnoRet": 38,
                  "syscalls": [{"names": ["clone"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1, "args": [test]}]}
        path = tmp_path / f"{test['op']}.json"
        path.write_text(json.dumps(policy))
        ours, theirs = seccomp_bpf.assemble(policy, frozenset(), "x86_64"), seccomp.compiled(path=path, arch="x86_64")
        near = [value, second, value + 1, value - 1, second + 1, second - 1, value >> 32 << 32, value & 0xFFFFFFFF]
        for args in [*argument_sets(), *((first,) + (0,) * 5 for first in near)]:
            assert run(ours, nr, 0xC000003E, args) == run(theirs, nr, 0xC000003E, args), (test["op"], hex(args[0]))


@needs_libseccomp
def test_the_numbers_are_those_libseccomp_gives_now() -> None:
    """syscalls.json is what `python -m grader.sandbox.seccomp` writes today: byte for byte."""
    assert seccomp_bpf.NUMBERS.read_text(encoding="utf-8") == seccomp.render(seccomp.number_table()), \
        "syscalls.json is out of date: run python -m grader.sandbox.seccomp"


def test_a_name_without_a_number_or_with_two_actions_is_refused_not_left_out() -> None:
    policy = seccomp.load_policy()
    unnumbered = {**policy, "syscalls": [*policy["syscalls"], {"names": ["not_a_call"], "action": "SCMP_ACT_ERRNO"}]}
    with pytest.raises(seccomp_bpf.Inexpressible, match="no number for not_a_call on x86_64"):
        seccomp_bpf.assemble(unnumbered, frozenset(), "x86_64")
    twice = {**policy, "syscalls": [*policy["syscalls"], {"names": ["ptrace"], "action": "SCMP_ACT_KILL_PROCESS"}]}
    with pytest.raises(seccomp_bpf.Inexpressible, match="ptrace has two actions"):
        seccomp_bpf.assemble(twice, frozenset(), "x86_64")
    with pytest.raises(seccomp_bpf.Inexpressible, match="no system-call numbers for riscv64"):
        seccomp_bpf.assemble(policy, frozenset(), "riscv64")


def test_without_libseccomp_the_same_policy_is_assembled_and_the_line_says_so(monkeypatch) -> None:
    def missing(kinds: frozenset[str]) -> bytes:
        raise seccomp.Unavailable("libseccomp not found")

    monkeypatch.setattr(seccomp, "compiled", missing)
    seccomp.for_sandbox.cache_clear()
    try:
        program, words = seccomp.for_sandbox(frozenset(seccomp.KINDS))
        machine = os.uname().machine
        if machine in seccomp.ARCHES:
            assert program == seccomp_bpf.assemble(seccomp.load_policy(),
                                                                  frozenset(seccomp.KINDS), machine)
            assert words == "seccomp policy (assembled without libseccomp: libseccomp not found)"
        else:
            assert program is None and words.startswith("no seccomp filter (libseccomp not found; no system-call")
    finally:
        seccomp.for_sandbox.cache_clear()


def test_the_launchers_own_numbers_come_from_the_table() -> None:
    """Landlock's calls have one number on every architecture; keyctl and pivot_root are read from syscalls.json."""
    for arch in seccomp.ARCHES:
        table = seccomp_bpf.numbers()[arch]["numbers"]
        assert tuple(table[name] for name in seccomp.LAUNCHER_CALLS[2:]) == lockdown.SYS_LANDLOCK
        assert all(table[name] is not None for name in seccomp.LAUNCHER_CALLS)


def test_the_files_the_sandbox_reads_are_shipped_with_the_package() -> None:
    """A non-editable install carries the policy and its numbers: pyproject.toml lists both as package data."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 and newer
    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    shipped = set(declared["package-data"]["grader"])
    for path in (seccomp.POLICY, seccomp_bpf.NUMBERS):
        assert str(Path(path).relative_to(REPO / "grader")) in shipped
