"""The launcher's configuration, one typed schema for both sides: encoded by the grader, decoded and checked inside.

Standard library only, as boot.py, which loads it by path beside itself. The grader builds a
LaunchConfig (sandbox/box.py) and encodes it as JSON text, one argument of the launcher or one field
of a zygote request; the launcher decodes it (`decode`), and a configuration that is not exactly
this schema is refused with a ConfigError naming the key and what is wrong with it.
"""

# No `from __future__ import annotations` here: the decoder reads each field's type as the object it names.
import dataclasses
import json
import types
from dataclasses import dataclass, field

MODES = ("bubblewrap", "namespaces", "none")  # bubblewrap builds the namespaces; the launcher does; none can be had
RLIMITS = ("CORE", "FSIZE", "NPROC", "AS", "NOFILE")  # the rlimits a program may be given, by resource.RLIMIT_ name


class ConfigError(ValueError):
    """A launcher configuration not of this schema: the message names where it is wrong."""


@dataclass(frozen=True)
class Bind:
    """A host path bound read-only at `inside` (its submounts too, where `recursive`)."""

    source: str
    inside: str
    recursive: bool = True


@dataclass(frozen=True)
class Symlink:
    """A symbolic link at `link` inside, pointing at `target`."""

    target: str
    link: str


@dataclass(frozen=True)
class Mounts:
    """The mount view built in the sandbox's mount namespace: a tmpfs root holding only these."""

    root: str          # the host folder the new root is built on
    tmp_bytes: int     # the size of the private /tmp and /dev/shm
    binds: tuple[Bind, ...] = ()
    symlinks: tuple[Symlink, ...] = ()
    devices: tuple[str, ...] = ()


@dataclass(frozen=True)
class Reach:
    """Where no namespace can be had: what Landlock lets each program read and write, and whether it has TCP."""

    read: tuple[str, ...]
    write: tuple[str, ...]
    devices: tuple[str, ...]
    network: bool


@dataclass(frozen=True)
class ProgramConfig:
    """One program: its command, environment, folder, and descriptors (its number -> the launcher's)."""

    argv: tuple[str, ...]
    env: dict[str, str]
    fds: dict[int, int]
    cwd: str = "/"
    entry: str | None = None  # the grader's entry point a program forked from the zygote runs in place of exec
    args: tuple[str, ...] = ()
    name: str = ""  # the name `ps` shows a forked program by


@dataclass(frozen=True)
class LaunchConfig:
    """Everything one launcher needs: who waits for it, how it confines, and the programs it starts."""

    parent: int     # the grader's pid: the launcher exits at once if its parent is already another
    status_fd: int  # where init reports each program's start and exit, or why the sandbox failed
    mode: str = field(metadata={"choices": MODES})
    programs: tuple[ProgramConfig, ...]
    cgroups: tuple[str, ...] = ()    # the cgroup.procs files the launcher joins first
    user: int | None = None          # the unprivileged uid the programs run as, when the launcher is root
    separate_users: bool = False     # each program its own uid (user + its index)
    private_tmp: bool = False        # each program its own /tmp and /dev/shm
    shared_shm: bool = False         # but one /dev/shm for all (CUDA's ranks: NCCL meets there)
    loopback: bool = False           # bring up `lo` in the network namespace
    mounts: Mounts | None = None     # the view, wherever there are namespaces
    bwrap: tuple[str, ...] | None = None  # bubblewrap's command line, in mode bubblewrap
    landlock: Reach | None = None    # in mode none, where Landlock stands in for the view
    scoped: bool = False             # each program a Landlock domain of its own (signals, abstract sockets, /proc)
    rlimits: dict[str, int] = field(default_factory=dict, metadata={"keys": RLIMITS})
    address_space_above: int = 0     # AS counted from a forked program's own size: what it may add
    seccomp: bytes | None = None     # the compiled filter (sock_filter[]); None: no seccomp here
    inside: bool = False             # bubblewrap built the namespaces and runs this launcher as its init
    preloaded: bool = False          # forked from the zygote, which has the entry points imported


def encode(config: LaunchConfig) -> str:
    """The configuration as JSON text, for the launcher's command line or a zygote request."""
    return json.dumps(_plain(config), separators=(",", ":"))


def _plain(value: object) -> object:
    if dataclasses.is_dataclass(value):
        return {item.name: _plain(getattr(value, item.name)) for item in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, bytes):
        return value.hex()
    return value


def decode(text: str) -> LaunchConfig:
    """The configuration the grader encoded; raises ConfigError for anything but exactly this schema."""
    try:
        value = json.loads(text)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"the launcher's configuration is not JSON: {error}") from None
    config = _record(LaunchConfig, value, "config")
    if config.mode != "none" and config.mounts is None:
        raise ConfigError(f"config.mounts: mode {config.mode} needs a mount view")
    if config.mode == "bubblewrap" and config.bwrap is None and not config.inside:
        raise ConfigError("config.bwrap: mode bubblewrap needs bubblewrap's command line")
    return config


def _record(kind: type, value: object, where: str) -> object:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected an object, got {_shown(value)}")
    known = {item.name: item for item in dataclasses.fields(kind)}
    unknown = sorted(set(value) - set(known))
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r}")
    found = {}
    for name, item in known.items():
        if name not in value:
            if item.default is dataclasses.MISSING and item.default_factory is dataclasses.MISSING:
                raise ConfigError(f"{where}: missing key {name!r}")
            continue
        found[name] = _value(item.type, value[name], f"{where}.{name}")
        choices = item.metadata.get("choices")
        if choices and found[name] not in choices:
            raise ConfigError(f"{where}.{name}: {found[name]!r} is none of {', '.join(choices)}")
        keys = item.metadata.get("keys")
        if keys and not set(found[name]) <= set(keys):
            raise ConfigError(f"{where}.{name}: {sorted(set(found[name]) - set(keys))[0]!r} is none of "
                              f"{', '.join(keys)}")
    return kind(**found)


def _value(kind: object, value: object, where: str) -> object:
    if dataclasses.is_dataclass(kind):
        return _record(kind, value, where)
    if isinstance(kind, types.UnionType):  # X | None
        if value is None and type(None) in kind.__args__:
            return None
        (inner,) = [option for option in kind.__args__ if option is not type(None)]
        return _value(inner, value, where)
    origin = getattr(kind, "__origin__", None)
    if origin is tuple:
        if not isinstance(value, list):
            raise ConfigError(f"{where}: expected a list, got {_shown(value)}")
        return tuple(_value(kind.__args__[0], item, f"{where}[{index}]") for index, item in enumerate(value))
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected an object, got {_shown(value)}")
        key_kind, item_kind = kind.__args__
        return {_key(key_kind, key, where): _value(item_kind, item, f"{where}[{key!r}]") for key, item in value.items()}
    if kind is bytes:
        try:
            return bytes.fromhex(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: expected hexadecimal bytes, got {_shown(value)}") from None
    wanted = {bool: "true or false", int: "an integer", str: "a string"}[kind]
    if type(value) is not kind:  # bool is no int here, nor an int a bool
        raise ConfigError(f"{where}: expected {wanted}, got {_shown(value)}")
    if kind is int and value < 0:  # every number here is a pid, a uid, a descriptor, a size or a limit
        raise ConfigError(f"{where}: expected at least 0, got {value}")
    return value


def _key(kind: type, key: str, where: str) -> object:
    if kind is int:
        if not (key.isascii() and key.isdigit()):
            raise ConfigError(f"{where}: {key!r} is not a descriptor number")
        return int(key)
    return key


def _shown(value: object) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."
