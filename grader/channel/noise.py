"""What torch prints on its own about the sandbox it runs in, told apart from what the learner's code printed.

Inside the sandbox's network namespace the loopback has no host name, so every gloo process group makes torch's
c10d store warn that the client socket's host name cannot be retrieved; gloo also says how many peers a rank
reached. Neither is about the learner's code. Only whole lines of these exact shapes are set apart: anything
else, a line the learner printed around or inside them included, stays the learner's.
"""

from __future__ import annotations

import re

# torch's C++ log prefix: "[W1201 12:10:14.314259333 socket.cpp:207] ", the level, month and day, the time,
# sometimes a thread id, the source file and line.
_PREFIX = r"\[[WIE]\d{4} \d\d:\d\d:\d\d(?:\.\d+)?(?: \d+)? [\w.-]+\.(?:cpp|cc|h|hpp):\d+\] "
PLATFORM_LINES = (
    re.compile(_PREFIX + r"\[c10d\] The hostname of the client socket cannot be retrieved\. err=-?\d+"),
    re.compile(r"\[Gloo\] Rank \d+ is connected to \d+ peer ranks\. Expected number of connected peer ranks "
               r"is : \d+"),
)


def is_platform_line(line: str) -> bool:
    """Whether `line`, whole, is one of the lines torch prints about the sandbox's network on its own."""
    return any(pattern.fullmatch(line.rstrip("\r")) for pattern in PLATFORM_LINES)


def split_platform(text: str) -> tuple[str, str]:
    """`text` as (the learner's lines, torch's own lines about the sandbox), each keeping its lines' order."""
    if "c10d" not in text and "Gloo" not in text:  # the common case: one scan, nothing to split
        return text, ""
    own, platform = [], []
    for line in text.splitlines(keepends=True):
        (platform if is_platform_line(line.rstrip("\n")) else own).append(line)
    return "".join(own), "".join(platform)
