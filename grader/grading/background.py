"""A call made on a thread of its own; what it raised is raised again in the thread that waits for it."""

from __future__ import annotations

import threading
from typing import Callable


class Background(threading.Thread):
    """A call started now on a thread of its own; finish() waits for it and raises what it raised, if anything."""

    def __init__(self, call: Callable[[], None], name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.call = call
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            self.call()
        except BaseException as error:  # noqa: BLE001  (raised again by finish, in the waiting thread)
            self.error = error

    def finish(self) -> None:
        self.join()
        if self.error is not None:
            raise self.error
