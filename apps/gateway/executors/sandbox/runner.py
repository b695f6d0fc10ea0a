"""The program the sandboxed interpreter runs (stdlib only; passed with `-c`, never imported
by ToolHub): it says it is ready, waits for its one run, runs the code, and ends.

Channel, one JSON object a line, fd 0 from ToolHub and fd 1 to it:
  out:  {"ready": true}  then any of  {"out": text}  {"call": {"tool", "arguments", "call_id"}}
        and last  {"done": {"status": "ok", "result": value} | {"status": "error",
        "traceback": text, "detail": text} | {"status": "limit", "limit": name, "detail": text}}
  in:   {"code": text, "tools": [names], "max_result_bytes": n}  then, for each call,
        {"envelope": {...}}

Nothing here is trusted by ToolHub: the code runs in this interpreter and may rewrite any of
it. ToolHub checks every line it reads (runs.py).
"""

import builtins
import io
import json
import linecache
import os
import sys
import threading
import traceback
from typing import Any, NoReturn

CODE = "<code>"
# Characters of printed text a line carries: a long print becomes several lines.
OUT_CHUNK = 4096
# The user's frames shown at most, the last ones.
MAX_FRAMES = 20
MAX_TRACEBACK_CHARS = 8000

def send(message: dict[str, Any]) -> None:
    data = (json.dumps(message) + "\n").encode()
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]


def receive() -> dict[str, Any]:
    line = CHANNEL_IN.readline()
    if not line:
        # ToolHub is gone: nothing to answer to.
        os._exit(3)
    message = json.loads(line)
    return message if isinstance(message, dict) else {}


class ToolCallError(Exception):
    """A tool call that failed: `.envelope` is ToolHub's answer (kind, message, hint)."""

    def __init__(self, envelope: dict[str, Any]) -> None:
        self.envelope = envelope
        kind = envelope.get("kind") or envelope.get("status") or "error"
        text = f"{kind}: {envelope.get('message') or 'the call failed'}"
        if envelope.get("hint"):
            text += f" (hint: {envelope['hint']})"
        super().__init__(text)


class ToolCallPending(Exception):
    """A tool call that runs on (accepted) or waits for a person (pending_approval): its
    result is not available to this code. `.envelope` is ToolHub's answer."""

    def __init__(self, envelope: dict[str, Any]) -> None:
        self.envelope = envelope
        status = envelope.get("status")
        what = "waits for a person's approval" if status == "pending_approval" else "was accepted and runs on"
        super().__init__(f"{status}: the call {what} (execution {envelope.get('execution_id')}); "
                         "its result is not available to this code")


class Output(io.TextIOBase):
    """print()'s stream: text sent to ToolHub in lines of at most OUT_CHUNK characters."""

    def __init__(self) -> None:
        self._pending: list[str] = []
        self._size = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._pending.append(text)
        self._size += len(text)
        # Line-buffered, as on a terminal: what was printed before a run is stopped is kept.
        if self._size >= OUT_CHUNK or "\n" in text:
            self.flush()
        return len(text)

    def flush(self) -> None:
        text = "".join(self._pending)
        self._pending, self._size = [], 0
        for start in range(0, len(text), OUT_CHUNK):
            send({"out": text[start:start + OUT_CHUNK]})


class Tool:
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"<tool {self._name}>"

    def __call__(self, *args: Any, call_id: Any = None, **arguments: Any) -> Any:
        name = self._name
        if args:
            raise TypeError(f"tools.{name}() takes keyword arguments only, e.g. tools.{name}(name=value); "
                            f"it was given {len(args)} positional argument(s)")
        if call_id is not None and not isinstance(call_id, str):
            raise TypeError(f"call_id must be a string, not {type(call_id).__name__}")
        try:
            json.dumps(arguments, allow_nan=False)
        except (TypeError, ValueError) as error:
            raise TypeError(f"the arguments of tools.{name}() must be JSON values: {error}") from None
        sys.stdout.flush()
        send({"call": {"tool": name, "arguments": arguments, "call_id": call_id}})
        envelope = receive().get("envelope")
        if not isinstance(envelope, dict):
            envelope = {"status": "error", "kind": "internal", "message": "no answer"}
        status = envelope.get("status")
        if status == "ok":
            return envelope.get("data")
        if status == "empty":
            return envelope.get("raw")
        if status in ("accepted", "pending_approval"):
            raise ToolCallPending(envelope)
        raise ToolCallError(envelope)


class Tools:
    """`tools.<name>(**arguments)`: one function per tool this run may call."""

    def __init__(self, names: list[str]) -> None:
        object.__setattr__(self, "_tools", {name: Tool(name) for name in names})

    def __getattr__(self, name: str) -> Tool:
        tools: dict[str, Tool] = object.__getattribute__(self, "_tools")
        if name in tools:
            return tools[name]
        available = ", ".join(sorted(tools)) or "none"
        raise AttributeError(f"there is no tool {name!r}; the tools are: {available}")

    def __dir__(self) -> list[str]:
        return sorted(object.__getattribute__(self, "_tools"))

    def __repr__(self) -> str:
        return f"<tools: {', '.join(self.__dir__())}>"


def user_traceback(error: BaseException) -> str:
    """The code's own frames (the last MAX_FRAMES) and the exception line: no frame of this
    runner or of the stdlib the code called."""
    frames = [frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename == CODE]
    lines = []
    if frames:
        lines = ["Traceback (most recent call last):\n", *traceback.format_list(frames[-MAX_FRAMES:])]
    lines += traceback.format_exception_only(type(error), error)
    text = "".join(lines)
    if len(text) > MAX_TRACEBACK_CHARS:
        text = text[:MAX_TRACEBACK_CHARS // 2] + "\n[...]\n" + text[-MAX_TRACEBACK_CHARS // 2:]
    return text


def thread_failed(failure: threading.ExceptHookArgs) -> None:
    """An exception that ended a thread of the code: printed with the code's frames only."""
    if failure.exc_value is not None:
        name = failure.thread.name if failure.thread is not None else "?"
        sys.stderr.write(f"Exception in thread {name}:\n{user_traceback(failure.exc_value)}")


def finish(outcome: dict[str, Any]) -> NoReturn:
    try:
        sys.stdout.flush()
    except Exception:  # noqa: BLE001 - the code may have replaced the stream: the outcome still goes.
        pass
    send({"done": outcome})
    # Not sys.exit: no atexit handler or finaliser of the code's runs after the outcome.
    os._exit(0)


def run(start: dict[str, Any]) -> NoReturn:
    code, max_result_bytes = start["code"], start["max_result_bytes"]
    # Builtins, so that functions of modules the code defines see them too.
    setattr(builtins, "ToolCallError", ToolCallError)  # noqa: B010
    setattr(builtins, "ToolCallPending", ToolCallPending)  # noqa: B010
    namespace = {"__name__": "__main__", "__builtins__": builtins, "tools": Tools(start["tools"])}
    # Frames of "<code>" then show the model's own lines.
    linecache.cache[CODE] = (len(code), None, code.splitlines(True), CODE)
    try:
        compiled = compile(code, CODE, "exec")
    except (SyntaxError, ValueError) as error:
        finish({"status": "error", "traceback": user_traceback(error),
                "detail": "The code does not compile."})
    try:
        exec(compiled, namespace)
    except SystemExit:
        pass  # sys.exit() ends the code, as in a script.
    except MemoryError:
        namespace.clear()
        finish({"status": "limit", "limit": "memory_mb", "detail": "The code ran out of memory."})
    except BaseException as error:  # noqa: BLE001 - whatever the code raised is its outcome.
        finish({"status": "error", "traceback": user_traceback(error),
                "detail": f"The code raised {type(error).__name__}."})
    result = namespace.get("result")
    try:
        encoded = json.dumps(result, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as error:
        finish({"status": "error", "traceback": "",
                "detail": f"`result` must be a JSON value (dicts, lists, strings, numbers, booleans, "
                          f"None): {error}"})
    except MemoryError:
        finish({"status": "limit", "limit": "memory_mb", "detail": "The code ran out of memory."})
    if len(encoded) > max_result_bytes:
        finish({"status": "limit", "limit": "max_result_bytes",
                "detail": f"`result` takes {len(encoded)} bytes as JSON, more than {max_result_bytes}."})
    finish({"status": "ok", "result": result})


def main() -> None:
    # The code's prints are captured; fd 1 stays the channel, fd 0 is not the code's to read.
    sys.stdout = sys.stderr = Output()
    sys.stdin = io.StringIO("")
    threading.excepthook = thread_failed
    send({"ready": True})
    try:
        run(receive())
    except BaseException:  # noqa: BLE001 - a failure of the runner itself: said on fd 2, for the log.
        os.write(2, traceback.format_exc().encode(errors="replace"))
        os._exit(70)


if __name__ == "__main__":
    CHANNEL_IN = os.fdopen(0, "rb", buffering=65536)
    main()
