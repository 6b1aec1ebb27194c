"""The worker process: imports the learner's file and calls its functions; it never judges them.

Started as `python -m grader.worker CONFIG_JSON`. It reads tasks from one pipe and
writes what the learner's code returned (or raised) to another. Everything here runs
beside untrusted code, so nothing here decides pass or fail.
"""

from __future__ import annotations

import importlib.util
import json
import os
import resource
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from grader import wire

MODULE_NAME = "submission"


def main(config: dict[str, Any]) -> None:
    """Set limits, import torch and the learner's file, then answer tasks until told to stop."""
    read_fd, write_fd, sentinel = config["read_fd"], config["write_fd"], config["sentinel"].encode()
    set_limits(config)  # imports torch, which is paid for before the learner's import is timed
    wire.write_message(write_fd, {"kind": "torch-ready"})
    learner = Path(config["learner"])
    module, load_error = load_learner(learner)
    end_segment(sentinel)
    if load_error:
        wire.write_message(write_fd, {"kind": "load-error", **load_error})
        return
    wire.write_message(write_fd, {"kind": "ready"})
    from grader.constraints import observe

    while True:
        task = wire.read_message(read_fd)
        if task.get("kind") == "stop":
            # Straight out: tearing down an interpreter with torch loaded takes half a second, for nothing.
            end_segment(b"")
            os._exit(0)
        reply = run_task(module, learner, task, observe)
        end_segment(sentinel)
        send_reply(write_fd, reply)


def send_reply(write_fd: int, reply: dict[str, Any], **extra: Any) -> None:
    """Send a reply; one whose returned value cannot be read as data becomes an error naming why."""
    try:
        data = wire.encode(reply)
    except Exception as error:  # noqa: BLE001  (a learner's tensor of an odd dtype, layout or device)
        data = wire.encode({"kind": "raised", "exception": type(error).__name__, "traceback": "",
                            "message": f"the returned value could not be read: {error}",
                            "seconds": reply.get("seconds", 0.0), **extra})
    wire.write_bytes(write_fd, data)


def set_limits(config: dict[str, Any]) -> None:
    """No core files; an address-space cap unless CUDA will be used (its reservations need the room)."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    import torch

    limit = int(config.get("address_space_bytes") or 0)
    if limit and not (config.get("may_use_cuda") and torch.cuda.is_available()):
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def load_learner(path: Path) -> tuple[Any, dict | None]:
    """Import the learner's file as a module; on failure, say where and why in the learner's terms."""
    sys.path.insert(0, str(path.parent))
    try:
        spec = importlib.util.spec_from_file_location(MODULE_NAME, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[MODULE_NAME] = module
        spec.loader.exec_module(module)
        return module, None
    except SyntaxError as error:
        text = (error.text or "").strip()
        return None, {"exception": type(error).__name__, "message": error.msg, "line": error.lineno,
                      "text": text, "traceback": ""}
    except BaseException as error:  # noqa: BLE001  (SystemExit and KeyboardInterrupt at import too)
        frames = learner_frames(error, path)
        line = frames[-1].lineno if frames else None
        text = (frames[-1].line or "").strip() if frames else ""
        return None, {"exception": type(error).__name__, "message": _message(error), "line": line,
                      "text": text, "traceback": format_frames(frames, error)}


def run_task(module: Any, learner: Path, task: dict[str, Any], observe) -> dict[str, Any]:
    """Call one learner function on the task's inputs and describe what came back."""
    import torch

    function = getattr(module, task["function"], None)
    if not callable(function):
        return {"kind": "raised", "exception": "AttributeError", "seconds": 0.0, "traceback": "",
                "message": f"your file has no function named {task['function']}"}
    args = present(task["args"], task["device"], task["layout"])
    snapshot = [(tensor, tensor.detach().clone(), tensor._version) for tensor in flatten(args)]
    started = time.perf_counter()
    try:
        with observe(task) as observations:
            result = function(*args)
            if task["device"] == "cuda":
                torch.cuda.synchronize()
    except BaseException as error:  # noqa: BLE001  (every way out of learner code is reported)
        return describe_exception(error, learner, time.perf_counter() - started, task["device"])
    seconds = time.perf_counter() - started
    modified = [index for index, (tensor, before, version) in enumerate(snapshot)
                if tensor._version != version or not _same(tensor, before)]
    return {"kind": "returned", "value": describe(result), "seconds": seconds,
            "inputs_modified": modified, "observations": observations}


def present(args: list[Any], device: str, layout: str) -> list[Any]:
    """Inputs as the learner receives them: on the device, contiguous or as transposed views."""

    def one(value: Any) -> Any:
        if isinstance(value, list):
            return [one(item) for item in value]
        tensor = value.tensor.to(device)
        if layout == "transposed" and tensor.dim() >= 2:
            # Same values, but stored transposed: strides that a learner's code must not assume.
            tensor = tensor.transpose(-2, -1).contiguous().transpose(-2, -1)
        return tensor

    return [one(value) for value in args]


def flatten(args: list[Any]) -> list[Any]:
    """Every tensor in a nested list of arguments."""
    out = []
    for value in args:
        out.extend(flatten(value) if isinstance(value, list) else [value])
    return out


def _same(tensor: Any, before: Any) -> bool:
    import torch

    return bool(torch.equal(tensor.detach(), before)) or bool(
        torch.equal(torch.isnan(tensor.detach()), torch.isnan(before))
        and torch.equal(tensor.detach().nan_to_num(), before.nan_to_num()))


def describe(value: Any) -> dict[str, Any]:
    """What the learner returned, as plain data: tensors travel, anything else is named."""
    import torch

    if isinstance(value, torch.Tensor):
        if value.is_meta:  # no data to send: its shape and dtype still say what is wrong
            return {"type": "tensor", "value": torch.zeros(value.shape, dtype=value.dtype), "device": "meta"}
        return {"type": "tensor", "value": value}
    if isinstance(value, (tuple, list)):
        return {"type": "sequence", "kind": type(value).__name__, "items": [describe(item) for item in value]}
    name = type(value).__module__ + "." + type(value).__qualname__
    name = name.removeprefix("builtins.")
    if name == "NoneType":
        name = "None"
    shape = getattr(value, "shape", None)
    return {"type": "other", "name": name + (f" of shape {tuple(shape)}" if shape is not None else "")}


def describe_exception(error: BaseException, learner: Path, seconds: float, device: str) -> dict[str, Any]:
    """An exception from learner code, classified, with only the learner's own frames."""
    kind = "raised"
    name = type(error).__name__
    message = _message(error)
    if isinstance(error, NotImplementedError):
        kind = "not-attempted"
    elif name == "OutOfMemoryError" or isinstance(error, MemoryError) or (
            isinstance(error, RuntimeError) and "can't allocate memory" in message):
        kind = "out-of-memory"
    elif isinstance(error, SystemExit):
        message = f"your code called sys.exit({error.code!r}) (or raised SystemExit)"
    restart = device == "cuda" and ("CUDA error" in message or name == "AcceleratorError")
    return {"kind": kind, "exception": name, "message": message, "seconds": seconds, "restart": restart,
            "traceback": format_frames(learner_frames(error, learner), error)}


def learner_frames(error: BaseException, learner: Path) -> list[traceback.FrameSummary]:
    """The traceback's frames that are in the learner's file; the grader's own never show."""
    target = str(learner.resolve())
    frames = traceback.extract_tb(error.__traceback__)
    return [frame for frame in frames if _resolve(frame.filename) == target]


def format_frames(frames: list[traceback.FrameSummary], error: BaseException, keep: int = 8) -> str:
    """A short traceback: the learner's frames (the last `keep` of them) and the exception line."""
    lines = []
    if len(frames) > keep:
        lines.append(f"  ... {len(frames) - keep} earlier frames in your file not shown")
        frames = frames[-keep:]
    for frame in frames:
        lines.append(f'  File "{Path(frame.filename).name}", line {frame.lineno}, in {frame.name}')
        if frame.line:
            lines.append(f"    {frame.line.strip()}")
    lines.append(f"{type(error).__name__}: {_message(error)}")
    return "\n".join(lines)


def _resolve(filename: str) -> str:
    try:
        return str(Path(filename).resolve())
    except (OSError, RuntimeError):
        return filename


def _message(error: BaseException) -> str:
    try:
        text = str(error)
    except Exception:  # noqa: BLE001  (a learner's exception whose __str__ fails)
        text = "<message could not be shown>"
    return text if len(text) <= 2000 else text[:2000] + " [...]"


def end_segment(sentinel: bytes) -> None:
    """Flush the learner's output and mark where this task's output ends on stdout and stderr."""
    for stream, fd in ((sys.stdout, 1), (sys.stderr, 2)):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001  (the learner may have replaced or closed it)
            pass
        try:
            os.write(fd, sentinel)
        except OSError:
            pass


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
