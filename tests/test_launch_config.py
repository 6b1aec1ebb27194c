"""The launcher's configuration: one typed schema, encoded by the grader, decoded inside, anything else refused clearly.

The launcher's units (boot.py and the modules beside it) run by path with the standard library alone:
that is held here too, as is the launcher's answer to a configuration that is not of the schema.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import subprocess
import sys

import pytest

from grader import PACKAGE
from grader.sandbox import launch_config
from grader.sandbox.box import BOOT
from grader.sandbox.launch_config import Bind, ConfigError, LaunchConfig, Mounts, ProgramConfig, Reach, Symlink

UNITS = ("boot", "launch_config", "lockdown", "mounts", "namespaces", "pid1", "program")  # run by path


def full() -> LaunchConfig:
    """A configuration with every field set to something other than its default."""
    program = ProgramConfig(argv=("/usr/bin/python3", "-c", "pass"), env={"PATH": "/usr/bin"}, fds={0: 7, 1: 8},
                            cwd="/tmp", entry="grader.sandboxed.worker", args=("{}",), name="grader.worker")
    return LaunchConfig(
        parent=10, status_fd=5, mode="bubblewrap", programs=(program, dataclasses.replace(program, fds={})),
        cgroups=("/sys/fs/cgroup/a/cgroup.procs",), user=200_001, separate_users=True, private_tmp=True,
        loopback=True, mounts=Mounts("/tmp/root", 1 << 20, (Bind("/usr", "/usr"), Bind("/sys/x", "/sys/x", False)),
                                     (Symlink("usr/lib", "/lib"),), ("/dev/null",)),
        bwrap=("bwrap", "--unshare-all"), landlock=Reach(("/usr",), ("/tmp/s",), ("/dev/null",), True),
        rlimits={"CORE": 0, "AS": 1 << 30}, address_space_above=1 << 29, seccomp=bytes(range(16)), inside=True,
        preloaded=True)


def test_what_the_grader_encodes_the_launcher_decodes_as_it_was() -> None:
    config = full()
    assert launch_config.decode(launch_config.encode(config)) == config
    assert {item.name for item in dataclasses.fields(LaunchConfig)} <= set(json.loads(launch_config.encode(config)))


def _broken(change) -> str:
    value = json.loads(launch_config.encode(full()))
    change(value)
    return json.dumps(value)


@pytest.mark.parametrize("change, message", [
    (lambda c: c.pop("status_fd"), "config: missing key 'status_fd'"),
    (lambda c: c.update(surprise=1), "config: unknown key 'surprise'"),
    (lambda c: c.update(mode="chroot"), "config.mode: 'chroot' is none of bubblewrap, namespaces, none"),
    (lambda c: c.update(parent=True), "config.parent: expected an integer, got true"),
    (lambda c: c.update(loopback=1), "config.loopback: expected true or false, got 1"),
    (lambda c: c.update(user=-3), "config.user: expected at least 0, got -3"),
    (lambda c: c["programs"][1].update(argv="python"), "config.programs[1].argv: expected a list, got \"python\""),
    (lambda c: c["programs"][0]["fds"].update({"x": 3}), "config.programs[0].fds: 'x' is not a descriptor number"),
    (lambda c: c["programs"][0]["env"].update(HOME=None), "config.programs[0].env['HOME']: expected a string"),
    (lambda c: c["mounts"]["binds"][0].pop("inside"), "config.mounts.binds[0]: missing key 'inside'"),
    (lambda c: c["rlimits"].update(STACK=1), "config.rlimits: 'STACK' is none of CORE, FSIZE, NPROC, AS, NOFILE"),
    (lambda c: c.update(seccomp="not hex"), "config.seccomp: expected hexadecimal bytes, got \"not hex\""),
    (lambda c: c.update(mounts=None), "config.mounts: mode bubblewrap needs a mount view"),
    (lambda c: c.update(inside=False, bwrap=None), "config.bwrap: mode bubblewrap needs bubblewrap's command line"),
])
def test_a_configuration_not_of_the_schema_is_refused_naming_where(change, message) -> None:
    with pytest.raises(ConfigError) as refused:
        launch_config.decode(_broken(change))
    assert str(refused.value).startswith(message)


def test_text_that_is_not_json_is_refused() -> None:
    with pytest.raises(ConfigError, match="not JSON"):
        launch_config.decode("{parent: 1")


def test_the_launcher_run_by_path_refuses_a_malformed_configuration_on_its_status_pipe() -> None:
    read, write = os.pipe()
    try:
        text = json.dumps({"parent": os.getpid(), "status_fd": write, "mode": "namespaces", "programs": "none"})
        done = subprocess.run([sys.executable, "-I", "-S", str(BOOT), text], capture_output=True, text=True,
                              pass_fds=(write,), timeout=30)
        os.close(write)
        write = -1
        event = json.loads(os.read(read, 1 << 16).decode())
    finally:
        if write >= 0:
            os.close(write)
        os.close(read)
    assert done.returncode == 70
    assert event == {"event": "error", "message": 'config.programs: expected a list, got "none"'}
    assert done.stderr == 'sandbox launcher: config.programs: expected a list, got "none"\n'


def _imports(path) -> set[str]:
    """Top-level names a module imports, and `grader.sandbox.NAME` for what it takes from the package."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module == "grader.sandbox":
            found.update(f"grader.sandbox.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("unit", UNITS)
def test_each_unit_of_the_launcher_needs_nothing_but_the_standard_library_and_its_siblings(unit) -> None:
    allowed = set(sys.stdlib_module_names) | set(UNITS) | {f"grader.sandbox.{name}" for name in UNITS}
    assert _imports(PACKAGE / "sandbox" / f"{unit}.py") - allowed == set()


def test_no_module_beside_the_launcher_shadows_the_standard_library() -> None:
    """The launcher puts its own folder first on the path: a module there named as a standard one would win."""
    names = {path.stem for path in (PACKAGE / "sandbox").glob("*.py")}
    assert names & set(sys.stdlib_module_names) == set()
