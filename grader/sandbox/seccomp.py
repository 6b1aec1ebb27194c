"""The learner processes' seccomp policy: data (seccomp.json, in the schema of Docker's profiles), compiled by libseccomp.

The grader's own process compiles the policy, once per kind of sandbox, through libseccomp's C API
(ctypes: seccomp_init, seccomp_rule_add_array, seccomp_export_bpf) and hands the classic-BPF program
to the launcher as bytes; the launcher (sandbox/boot.py, standard library only, run by path) installs
them as they came. Where libseccomp is absent (a minimal image) the same policy is assembled by
sandbox/seccomp_bpf.py from syscalls.json, the numbers libseccomp gives every name the policy uses,
written by `python -m grader.sandbox.seccomp`; the containment line says which. macOS has no seccomp.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import json
import os
import sys
from functools import cache
from pathlib import Path

from grader.sandbox import seccomp_bpf

POLICY = Path(__file__).with_name("seccomp.json")
KINDS = ("single_process", "cpu_only", "counted_ranks", "file_store", "host_network")  # `when`, `unless`
ARCHES = ("x86_64", "aarch64")  # those syscalls.json numbers, for the program assembled without libseccomp
# Called by number by the launcher (sandbox/lockdown.py, sandbox/mounts.py): numbered in syscalls.json too.
LAUNCHER_CALLS = ("keyctl", "pivot_root", "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self")
SCMP_FLTATR_ACT_BADARCH, SCMP_FLTATR_CTL_NNP = 2, 3
NR_SCMP_ERROR = -1  # libseccomp's answer for a name it does not know; below it, a call the architecture lacks
OPS = {"SCMP_CMP_NE": 1, "SCMP_CMP_LT": 2, "SCMP_CMP_LE": 3, "SCMP_CMP_EQ": 4, "SCMP_CMP_GE": 5, "SCMP_CMP_GT": 6,
       "SCMP_CMP_MASKED_EQ": 7}
MASKED_NE = "SCMP_CMP_MASKED_NE"  # (arg & value) != 0: libseccomp has no such test; one rule per bit of `value`
MAX_INSTRUCTIONS = 4096


class Unavailable(Exception):
    """No seccomp compiler here: not Linux, or no libseccomp."""


class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]


@cache
def _library() -> ctypes.CDLL:
    if not sys.platform.startswith("linux"):
        raise Unavailable(f"no seccomp on {sys.platform}")
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("seccomp") or "libseccomp.so.2", use_errno=True)
    except OSError:
        raise Unavailable("libseccomp not found") from None
    signatures = {
        "seccomp_init": ([ctypes.c_uint32], ctypes.c_void_p),
        "seccomp_release": ([ctypes.c_void_p], None),
        "seccomp_attr_set": ([ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32], ctypes.c_int),
        "seccomp_syscall_resolve_name": ([ctypes.c_char_p], ctypes.c_int),
        "seccomp_syscall_resolve_name_arch": ([ctypes.c_uint32, ctypes.c_char_p], ctypes.c_int),
        "seccomp_arch_resolve_name": ([ctypes.c_char_p], ctypes.c_uint32),
        "seccomp_arch_native": ([], ctypes.c_uint32),
        "seccomp_arch_add": ([ctypes.c_void_p, ctypes.c_uint32], ctypes.c_int),
        "seccomp_arch_remove": ([ctypes.c_void_p, ctypes.c_uint32], ctypes.c_int),
        "seccomp_rule_add_array": ([ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                    ctypes.POINTER(_ArgCmp)], ctypes.c_int),
        "seccomp_export_bpf": ([ctypes.c_void_p, ctypes.c_int], ctypes.c_int),
    }
    for name, (arguments, result) in signatures.items():
        function = getattr(lib, name)
        function.argtypes, function.restype = arguments, result
    return lib


@cache
def version() -> str:
    """libseccomp's version, for the containment line."""
    class Version(ctypes.Structure):
        _fields_ = [("major", ctypes.c_uint), ("minor", ctypes.c_uint), ("micro", ctypes.c_uint)]

    lib = _library()
    lib.seccomp_version.restype = ctypes.POINTER(Version)
    found = lib.seccomp_version().contents
    return f"{found.major}.{found.minor}.{found.micro}"


def load_policy(path: Path = POLICY) -> dict:
    """The policy file, checked: every entry's action, errno, `when` and argument tests are known."""
    policy = json.loads(path.read_text(encoding="utf-8"))
    for entry in policy["syscalls"]:
        if entry["action"] not in ("SCMP_ACT_ERRNO", "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_ALLOW"):
            raise ValueError(f"{path.name}: unknown action {entry['action']!r}")
        for key in ("when", "unless"):
            if entry.get(key) not in (None, *KINDS):
                raise ValueError(f"{path.name}: unknown `{key}` {entry[key]!r}")
        for test in entry.get("args", []):
            if test["op"] not in OPS and test["op"] != MASKED_NE:
                raise ValueError(f"{path.name}: unknown argument test {test['op']!r}")
    return policy


def _tests(entry: dict) -> list[list[_ArgCmp]]:
    """The entry's argument tests as libseccomp rules: a masked-not-equal test becomes one rule per bit."""
    rules: list[list[_ArgCmp]] = [[]]
    for test in entry.get("args", []):
        if test["op"] == MASKED_NE:
            bits = [1 << bit for bit in range(64) if test["value"] >> bit & 1]
            rules = [[*rule, _ArgCmp(test["index"], OPS["SCMP_CMP_MASKED_EQ"], bit, bit)] for rule in rules
                     for bit in bits]
        else:
            rules = [[*rule, _ArgCmp(test["index"], OPS[test["op"]], test["value"], test.get("valueTwo", 0))]
                     for rule in rules]
    return rules


def _check(result: int, what: str) -> None:
    if result < 0:  # libseccomp returns -errno
        raise OSError(-result, f"libseccomp: {what}: {os.strerror(-result)}")


@cache
def compiled(kinds: frozenset[str] = frozenset(), path: Path = POLICY, arch: str | None = None) -> bytes:
    """The policy for a sandbox of these kinds, as a classic-BPF program (sock_filter[]) for this machine or `arch`."""
    lib = _library()
    policy = load_policy(path)
    context = lib.seccomp_init(seccomp_bpf.action(policy["defaultAction"], policy.get("defaultErrnoRet")))
    if not context:
        raise OSError(errno.ENOMEM, "libseccomp: seccomp_init failed")
    try:
        if arch is not None and _arch_token(lib, arch) != lib.seccomp_arch_native():
            # Another architecture's program (tests compare it): the rules still name native numbers, translated.
            _check(lib.seccomp_arch_add(context, _arch_token(lib, arch)), f"add {arch}")
            _check(lib.seccomp_arch_remove(context, lib.seccomp_arch_native()), "remove the native architecture")
        bad_arch = seccomp_bpf.action(policy["badArchAction"], policy.get("badArchErrnoRet"))
        _check(lib.seccomp_attr_set(context, SCMP_FLTATR_ACT_BADARCH, bad_arch), "bad arch")
        _check(lib.seccomp_attr_set(context, SCMP_FLTATR_CTL_NNP, 0), "no_new_privs")  # the launcher sets it
        for entry in policy["syscalls"]:
            if not seccomp_bpf.applies(entry, kinds):
                continue
            action = seccomp_bpf.action(entry["action"], entry.get("errnoRet"))
            for name in entry["names"]:
                number = lib.seccomp_syscall_resolve_name(name.encode())
                if number == -1:
                    continue  # newer than this libseccomp, whose kernels lack it too
                # A call this architecture lacks (fork on aarch64) resolves to a pseudo-number, left out of its program.
                for tests in _tests(entry):
                    array = (_ArgCmp * max(len(tests), 1))(*tests)
                    _check(lib.seccomp_rule_add_array(context, action, number, len(tests), array), f"rule for {name}")
        program = _export(lib, context)
    finally:
        lib.seccomp_release(context)
    if len(program) % 8 or not 0 < len(program) // 8 <= MAX_INSTRUCTIONS:
        raise OSError(errno.EINVAL, f"libseccomp made a program of {len(program)} bytes")
    return program


def _export(lib: ctypes.CDLL, context: int) -> bytes:
    descriptor = os.memfd_create("seccomp-program", os.MFD_CLOEXEC)  # libseccomp 2.5 writes to a descriptor only
    try:
        _check(lib.seccomp_export_bpf(context, descriptor), "export")
        os.lseek(descriptor, 0, os.SEEK_SET)
        chunks = []
        while chunk := os.read(descriptor, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(descriptor)


def _arch_token(lib: ctypes.CDLL, arch: str) -> int:
    token = lib.seccomp_arch_resolve_name(arch.encode())
    if not token:
        raise Unavailable(f"libseccomp {version()} knows no architecture {arch}")
    return token


def number_table(path: Path = POLICY) -> dict:
    """syscalls.json as libseccomp gives it: per architecture, its audit token and the number of every call the
    policy names or the launcher makes (None where the architecture has no such call)."""
    lib = _library()
    names = sorted({name for entry in load_policy(path)["syscalls"] for name in entry["names"]} | {*LAUNCHER_CALLS})
    arches = {}
    for arch in ARCHES:
        token = _arch_token(lib, arch)
        found = {name: lib.seccomp_syscall_resolve_name_arch(token, name.encode()) for name in names}
        unknown = [name for name, number in found.items() if number == NR_SCMP_ERROR]
        if unknown:
            raise Unavailable(f"libseccomp {version()} does not know {', '.join(unknown)}")
        arches[arch] = {"audit_arch": token,
                        "numbers": {name: number if number >= 0 else None for name, number in found.items()}}
    return {"comment": f"Written by `python -m grader.sandbox.seccomp` from libseccomp's numbers: the system calls "
                       f"{path.name} names and the launcher makes, per architecture (null: it has no such call). "
                       f"Read where libseccomp is absent (grader/sandbox/seccomp_bpf.py); do not edit.",
            "arches": arches}


def render(table: dict) -> str:
    """The table as syscalls.json holds it, byte for byte."""
    return json.dumps(table, indent=1, sort_keys=True) + "\n"


@cache
def for_sandbox(kinds: frozenset[str]) -> tuple[bytes | None, str]:
    """The program for a sandbox of these kinds (KINDS; None: no filter can be had here), and the words the
    containment line uses for it."""
    try:
        return compiled(kinds), f"seccomp policy (libseccomp {version()})"
    except Unavailable as why:
        if not sys.platform.startswith("linux"):
            return None, str(why)
        try:
            program = seccomp_bpf.assemble(load_policy(), kinds, os.uname().machine)
        except seccomp_bpf.Inexpressible as missing:
            return None, f"no seccomp filter ({why}; {missing})"
        return program, f"seccomp policy (assembled without libseccomp: {why})"


if __name__ == "__main__":
    seccomp_bpf.NUMBERS.write_text(render(number_table()), encoding="utf-8")
