"""The seccomp policy assembled as classic BPF without libseccomp, from seccomp.json and its numbers (syscalls.json).

libseccomp compiles seccomp.json where it is installed (sandbox/seccomp.py). Elsewhere the same policy
is assembled here, the system calls numbered by syscalls.json, which libseccomp wrote at development
time (`python -m grader.sandbox.seccomp`; a test holds it current). The program keeps libseccomp's
semantics: another architecture's calls get the bad-architecture action, an entry's argument tests
must all hold, a call's entries are alternatives, and what no entry names gets the default action.
What this cannot express (a call with two actions, a name without a number) raises Inexpressible:
never a program that allows what the policy refuses.
"""

from __future__ import annotations

import errno
import itertools
import json
import struct
from functools import cache
from pathlib import Path

NUMBERS = Path(__file__).with_name("syscalls.json")
ALLOW, KILL_PROCESS, ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
# struct seccomp_data: the call's number at 0, its architecture at 4, args[i] at 16 + 8 i (low half first).
_NR, _ARCH, _ARGS = 0, 4, 16
_LD, _AND, _JA, _JEQ, _JGT, _JGE, _JSET, _RET = 0x20, 0x54, 0x05, 0x15, 0x25, 0x35, 0x45, 0x06
# x86_64's numbers from bit 30 up are the x32 ABI's: refused as another architecture's, but for -1 (a tracer's).
FOREIGN_FROM = {"x86_64": 0x40000000}
MAX_RUN = 200  # system calls tested in one run of jumps to a shared return: a jump spans 255 instructions at most
MAX_INSTRUCTIONS = 4096


class Inexpressible(Exception):
    """A policy, or a part of it, this assembler cannot turn into a program that refuses all it refuses."""


def action(name: str, number: int | None) -> int:
    """The seccomp return value of a Docker-schema action, with its errno where it has one (EPERM by default)."""
    return {"SCMP_ACT_ALLOW": ALLOW, "SCMP_ACT_KILL_PROCESS": KILL_PROCESS}.get(
        name, ERRNO | ((errno.EPERM if number is None else number) & 0xFFFF))


def applies(entry: dict, kinds: frozenset[str]) -> bool:
    """Whether a policy entry is for a sandbox of these kinds: its `when` among them (or none), its `unless` not."""
    return entry.get("when") in (None, *kinds) and entry.get("unless") not in kinds


@cache
def numbers() -> dict:
    """The generated table: per architecture, its audit token and each name's number (None: it has no such call)."""
    return json.loads(NUMBERS.read_text(encoding="utf-8"))["arches"]


def assemble(policy: dict, kinds: frozenset[str], arch: str) -> bytes:
    """The program (sock_filter[] bytes) for a sandbox of these kinds on `arch`, as libseccomp would make it."""
    table = numbers().get(arch)
    if table is None:
        raise Inexpressible(f"no system-call numbers for {arch} ({NUMBERS.name} has {', '.join(sorted(numbers()))})")
    calls = _calls(policy, kinds, table["numbers"], arch)
    bad = _Label()
    program: list[tuple] = [(_LD, None, None, _ARCH), (_JEQ, None, bad, table["audit_arch"]), (_LD, None, None, _NR)]
    if arch in FOREIGN_FROM:
        native = _Label()
        program += [(_JGE, None, native, FOREIGN_FROM[arch]), (_JEQ, None, bad, 0xFFFFFFFF), native]
    plain = sorted((number, result) for number, (result, alternatives) in calls.items() if [] in alternatives)
    for result, run in itertools.groupby(plain, key=lambda item: item[1]):
        listed = [number for number, _ in run]
        for start in range(0, len(listed), MAX_RUN):
            program += _run(listed[start:start + MAX_RUN], result)
    for number, (result, alternatives) in sorted(calls.items()):
        if [] not in alternatives:
            program += _conditional(number, result, alternatives)
    program += [(_RET, None, None, action(policy["defaultAction"], policy.get("defaultErrnoRet"))), bad,
                (_RET, None, None, action(policy["badArchAction"], policy.get("badArchErrnoRet")))]
    return _encode(_resolve(program))


def _calls(policy: dict, kinds: frozenset[str], table: dict, arch: str) -> dict[int, tuple[int, list[list[dict]]]]:
    """Each system call the entries of these kinds name: its one action, and its alternatives (tests all to hold)."""
    calls: dict[int, tuple[int, list[list[dict]]]] = {}
    for entry in policy["syscalls"]:
        if not applies(entry, kinds):
            continue
        result = action(entry["action"], entry.get("errnoRet"))
        tests = [_checked(test, entry) for test in entry.get("args", [])]
        for name in entry["names"]:
            if name not in table:
                raise Inexpressible(f"{NUMBERS.name} has no number for {name} on {arch}: write it again with "
                                    f"`python -m grader.sandbox.seccomp`")
            if table[name] is None:
                continue  # not a call of this architecture (fork on aarch64): libseccomp leaves it out too
            known, alternatives = calls.setdefault(table[name], (result, []))
            if known != result:
                raise Inexpressible(f"{name} has two actions in the policy: libseccomp's choice between them is "
                                    f"not reproduced here")
            alternatives.append(tests)
    return calls


def _checked(test: dict, entry: dict) -> dict:
    if test.get("index") not in range(6) or not all(0 <= test.get(key, 0) < 1 << 64 for key in ("value", "valueTwo")):
        raise Inexpressible(f"an argument test of {', '.join(entry['names'])} is out of range: {test}")
    return test


class _Label:
    """A place in a program that jumps name before it is known."""


def _run(listed: list[int], result: int) -> list[tuple]:
    """Calls refused (or allowed) whatever their arguments: one test each, all jumping to one return."""
    hit, past = _Label(), _Label()
    body: list[tuple] = [(_LD, None, None, _NR)]
    body += [(_JEQ, hit, None, number) for number in listed[:-1]] + [(_JEQ, None, past, listed[-1])]
    return [*body, hit, (_RET, None, None, result), past]


def _conditional(number: int, result: int, alternatives: list[list[dict]]) -> list[tuple]:
    """A call whose entries test its arguments: the action where every test of one alternative holds."""
    hit, past = _Label(), _Label()
    body: list[tuple] = [(_LD, None, None, _NR), (_JEQ, None, past, number)]
    for index, tests in enumerate(alternatives):
        last = index == len(alternatives) - 1
        failed = past if last else _Label()
        for test in tests:
            body += _test(test, failed)
        body += [hit] if last else [(_JA, hit, None, 0), failed]
    return [*body, (_RET, None, None, result), past]


def _test(test: dict, failed: _Label) -> list[tuple]:
    """One 64-bit argument test on its two 32-bit halves: falls through where it holds, jumps to `failed` if not."""
    held = _Label()
    where = _ARGS + 8 * test["index"]
    value, second = test["value"], test.get("valueTwo", 0)
    high, low = (_LD, None, None, where + 4), (_LD, None, None, where)
    op = test["op"]
    if op == "SCMP_CMP_MASKED_NE":  # (arg & value) != 0: any of value's bits set
        body = [high, (_JSET, held, None, value >> 32)] if value >> 32 else []
        body += [low, (_JSET, None, failed, value & 0xFFFFFFFF)] if value & 0xFFFFFFFF else [(_JA, failed, None, 0)]
    elif op == "SCMP_CMP_MASKED_EQ":  # (arg & value) == valueTwo
        body = [high, (_AND, None, None, value >> 32), (_JEQ, None, failed, second >> 32),
                low, (_AND, None, None, value & 0xFFFFFFFF), (_JEQ, None, failed, second & 0xFFFFFFFF)]
    elif op == "SCMP_CMP_EQ":
        body = [high, (_JEQ, None, failed, value >> 32), low, (_JEQ, None, failed, value & 0xFFFFFFFF)]
    elif op == "SCMP_CMP_NE":
        body = [high, (_JEQ, None, held, value >> 32), low, (_JEQ, failed, None, value & 0xFFFFFFFF)]
    elif op in ("SCMP_CMP_GT", "SCMP_CMP_GE", "SCMP_CMP_LT", "SCMP_CMP_LE"):
        above, below = (held, failed) if op in ("SCMP_CMP_GT", "SCMP_CMP_GE") else (failed, held)
        jump = _JGT if op in ("SCMP_CMP_GT", "SCMP_CMP_LE") else _JGE
        body = [high, (_JGT, above, None, value >> 32), (_JEQ, None, below, value >> 32),
                low, (jump, above, below, value & 0xFFFFFFFF)]
    else:
        raise Inexpressible(f"no argument test {op!r}")
    return [*body, held]


def _resolve(program: list) -> list[tuple[int, int, int, int]]:
    """Labels out, each jump counted from the instruction after it (`ja`'s, named where a true branch is, in its k)."""
    places: dict[_Label, int] = {}
    body = []
    for item in program:
        if isinstance(item, _Label):
            places[item] = len(body)
        else:
            body.append(item)
    resolved = []
    for index, (code, true, false, k) in enumerate(body):
        offset = lambda label: 0 if label is None else places[label] - index - 1  # noqa: E731
        if code == _JA:
            resolved.append((code, 0, 0, offset(true)))
        else:
            resolved.append((code, offset(true), offset(false), k))
    if len(resolved) > MAX_INSTRUCTIONS or not all(0 <= jt < 256 and 0 <= jf < 256 for _, jt, jf, _ in resolved):
        raise Inexpressible(f"the program does not assemble ({len(resolved)} instructions)")
    return resolved


def _encode(body: list[tuple[int, int, int, int]]) -> bytes:
    return b"".join(struct.pack("=HBBI", code, jt, jf, k) for code, jt, jf, k in body)
