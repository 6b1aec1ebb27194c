"""The operators an exercise forbids: names checked against torch's registry, widened to what dispatch shows.

The worker's observer (grader/sandboxed/observe.py) sees the operators that reach torch's dispatcher
below autograd, named by their overload packet (`aten._softmax`, `aten.native_layer_norm`). Many
public operators never get there: torch decomposes them first (`aten.layer_norm` becomes
`aten.native_layer_norm`, `aten.softmax` becomes `aten._softmax`). So each name a rule lists stands for
itself and what torch turns it into, and a name that no observable operator matches is refused.

A rule may also name a family: one computation by every public route to it, such as layer norm by
`F.layer_norm`, `nn.LayerNorm`, group norm with one group, or batch or instance norm on a transposed
or reshaped input. In exercise.yaml: `forbidden: [aten._softmax, {family: layer_norm}]`.
"""

from __future__ import annotations

import difflib
from functools import lru_cache
from pathlib import Path

from grader.course.yamlfile import line_of, load_yaml
from grader.errors import ConfigError

# What torch decomposes each of these into before the observer sees any operator (checked by the tests, which
# run each public route under the observer).
DECOMPOSES_INTO: dict[str, tuple[str, ...]] = {
    "aten.softmax": ("aten._softmax",),
    "aten.log_softmax": ("aten._log_softmax",),
    "aten.special_softmax": ("aten._softmax",),
    "aten.special_log_softmax": ("aten._log_softmax",),
    "aten.layer_norm": ("aten.native_layer_norm",),
    "aten.group_norm": ("aten.native_group_norm",),
    "aten.batch_norm": ("aten.native_batch_norm", "aten._native_batch_norm_legit",
                        "aten._native_batch_norm_legit_no_training", "aten.cudnn_batch_norm",
                        "aten.miopen_batch_norm"),
    "aten._batch_norm_impl_index": ("aten.native_batch_norm", "aten._native_batch_norm_legit",
                                    "aten._native_batch_norm_legit_no_training", "aten.cudnn_batch_norm",
                                    "aten.miopen_batch_norm"),
    "aten.instance_norm": ("aten.native_batch_norm", "aten._native_batch_norm_legit",
                           "aten.cudnn_batch_norm", "aten.miopen_batch_norm"),
    "aten.scaled_dot_product_attention": (
        "aten._safe_softmax", "aten._scaled_dot_product_flash_attention_for_cpu",
        "aten._scaled_dot_product_flash_attention", "aten._scaled_dot_product_efficient_attention",
        "aten._scaled_dot_product_cudnn_attention", "aten._scaled_dot_product_fused_attention_overrideable"),
}

# One computation by every public route to it: the operators a rule naming the family forbids.
FAMILIES: dict[str, tuple[tuple[str, ...], str]] = {
    "softmax": (("aten.softmax", "aten.log_softmax", "aten._softmax", "aten._log_softmax", "aten._safe_softmax",
                 "aten.scaled_dot_product_attention"),
                "softmax by any route: torch.softmax, F.softmax, nn.Softmax, softmin, log_softmax, "
                "scaled_dot_product_attention"),
    "layer_norm": (("aten.layer_norm", "aten.group_norm", "aten.batch_norm", "aten.instance_norm"),
                   "layer norm by any route: F.layer_norm, nn.LayerNorm, group norm with one group, batch or "
                   "instance norm on a transposed or reshaped input"),
}
FAMILY_PREFIX = "family:"  # how a family entry is kept among operator names: "family:layer_norm"


def entry_name(entry: str) -> str:
    """An entry as an instructor reads it: `aten._softmax`, or `family layer_norm`."""
    return f"family {entry[len(FAMILY_PREFIX):]}" if entry.startswith(FAMILY_PREFIX) else entry


@lru_cache(maxsize=64)
def observed(entries: tuple[str, ...]) -> frozenset[str]:
    """Every operator name the observer may see that the rule's entries forbid: each name, what torch decomposes
    it into, and every member of a family."""
    names: set[str] = set()
    for entry in entries:
        members = FAMILIES[entry[len(FAMILY_PREFIX):]][0] if entry.startswith(FAMILY_PREFIX) else (entry,)
        for member in members:
            names.add(member)
            names.update(DECOMPOSES_INTO.get(member, ()))
    return frozenset(names)


def family_of(name: str, entries: tuple[str, ...]) -> str:
    """The family among `entries` that forbids the observed operator `name` ('' when an entry names it itself)."""
    for entry in entries:
        if not entry.startswith(FAMILY_PREFIX):
            if name == entry or name in DECOMPOSES_INTO.get(entry, ()):
                return ""
    for entry in entries:
        if entry.startswith(FAMILY_PREFIX) and name in observed((entry,)):
            return entry[len(FAMILY_PREFIX):]
    return ""


def parse_forbidden(value: object, path: Path, line: int | None) -> tuple[str, ...]:
    """exercise.yaml's `forbidden` list, each entry an operator name or a family; ConfigError at the entry's line."""
    if not isinstance(value, list):
        raise ConfigError("rules: forbidden must list operators such as aten._softmax, or families such as "
                          "{family: layer_norm}", path, line)
    lines = getattr(value, "item_lines", []) or [line_of(value) or line] * len(value)
    entries = []
    for entry, where in zip(value, lines):
        if isinstance(entry, str) and entry.count(".") == 1 and all(entry.split(".")):
            entries.append(entry)
        elif isinstance(entry, dict) and set(entry) == {"family"} and entry["family"] in FAMILIES:
            entries.append(FAMILY_PREFIX + entry["family"])
        elif isinstance(entry, dict) and set(entry) == {"family"}:
            raise ConfigError(f"rules: forbidden: no family called {entry['family']!r} (known: "
                              f"{', '.join(sorted(FAMILIES))})", path, where)
        else:
            raise ConfigError(f"rules: forbidden: {entry!r} is neither an operator such as aten._softmax nor a "
                              f"family such as {{family: layer_norm}}", path, where)
    return tuple(entries)


def check_names(entries: tuple[str, ...], path: Path) -> None:
    """The first operator name among `entries` that no observable operator matches, as a ConfigError naming
    `path` (exercise.yaml) and the line it is written on."""
    for entry in entries:
        found = "" if entry.startswith(FAMILY_PREFIX) else problem(entry)
        if found:
            raise ConfigError(f"rules: forbidden: {found}", path, _line_in(path, entry))


def _line_in(path: Path, entry: str) -> int | None:
    """The line of `entry` in the file's forbidden list (it was read once already, so it parses)."""
    try:
        forbidden = load_yaml(path)["rules"]["forbidden"]
        return forbidden.item_lines[forbidden.index(entry)]
    except (ConfigError, KeyError, ValueError, IndexError, TypeError, AttributeError):
        return None


def problem(name: str) -> str:
    """Why the forbidden operator `name` could never be seen in a learner's call; '' when it can."""
    namespace, _, packet = name.partition(".")
    registry = _registry()
    known = registry.get(namespace, {})
    if packet not in known:
        close = difflib.get_close_matches(packet, list(known), n=2)
        hint = f" (did you mean {' or '.join(f'{namespace}.{c}' for c in close)}?)" if close else ""
        return f"{name} is no operator torch dispatches{hint}"
    if known[packet] and name not in DECOMPOSES_INTO:
        return (f"{name} never reaches the grader's observer: torch decomposes it into other operators first; "
                f"forbid those (run the call under torch.utils._python_dispatch.TorchDispatchMode to see them)")
    return ""


@lru_cache(maxsize=1)
def _registry() -> dict[str, dict[str, bool]]:
    """namespace -> operator -> whether torch decomposes it before dispatch (every functional overload of it
    has a CompositeImplicitAutograd kernel), from the dispatcher's own table."""
    import torch

    overloads: dict[tuple[str, str], list[str]] = {}
    for qualified in torch._C._dispatch_get_all_op_names():
        namespace, _, rest = qualified.partition("::")
        packet, _, overload = rest.partition(".")
        overloads.setdefault((namespace, packet), []).append(qualified)
    registry: dict[str, dict[str, bool]] = {}
    for (namespace, packet), names in overloads.items():
        functional = [name for name in names if not name.rsplit(".", 1)[-1].endswith("out")] or names
        registry.setdefault(namespace, {})[packet] = all(
            torch._C._dispatch_has_kernel_for_dispatch_key(name, "CompositeImplicitAutograd") for name in functional)
    return registry
