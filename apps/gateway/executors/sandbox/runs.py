"""One run of a model's code: `run_code` takes a sandbox (warm from the pool, else a cold
one), sends it the code, answers its tool calls with `call_tool`, and turns how it ended
into a `RunReport`.

ToolHub's side is the judge, never the runner's word alone: it counts the calls, the printed
bytes and the wall time (inner calls included), re-checks the result's size, and reads how
the process ended (a signal, its CPU time, the memory group's OOM count) when the runner did
not report an outcome. Anything the code does ends in a report; only a failure of ToolHub's
own (no bwrap, a sandbox that cannot start, an exception of `call_tool`) raises.
"""

from __future__ import annotations

import json
import logging
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from apps.bridge.stdio import BWRAP

from .isolation import SandboxUnavailable, SpawnLimits
from .pool import release, sandbox_for, warm_pool
from .process import ChannelBroken, ChannelClosed, ChannelTimeout, Sandbox

__all__ = ["InnerCall", "RunLimits", "RunReport", "SandboxUnavailable", "run_code"]

logger = logging.getLogger("toolhub.sandbox")

# Room on a line for what surrounds a result or arguments (keys, escapes of the JSON).
LINE_MARGIN_BYTES = 65536
# bwrap exits with 128 + N when the code's process was killed by signal N.
SIGNAL_EXIT_BASE = 128


@dataclass(frozen=True)
class RunLimits:
    wall_s: float = 30.0          # whole run, including time spent in inner calls
    cpu_s: int = 10
    memory_mb: int = 256
    max_calls: int = 100          # inner tool calls
    max_stdout_bytes: int = 65536
    max_result_bytes: int = 1_048_576
    max_processes: int = 16       # processes+threads, via the pids cgroup where available
    max_open_files: int = 64

    def spawn(self) -> SpawnLimits:
        return SpawnLimits(cpu_s=self.cpu_s, memory_mb=self.memory_mb, max_processes=self.max_processes,
                           max_open_files=self.max_open_files)


@dataclass(frozen=True)
class InnerCall:
    tool: str
    arguments: dict[str, Any]
    call_id: str | None           # the explicit call_id= the code passed, else None
    number: int                   # 1, 2, ... in the order the code made them


@dataclass(frozen=True)
class RunReport:
    status: Literal["ok", "error", "limit"]
    result: Any = None            # JSON value of the code's global `result` (None when unset)
    stdout: str = ""              # what the code printed (at most max_stdout_bytes)
    calls: int = 0                # inner calls made
    traceback: str = ""           # status "error": the user's frames and the exception line
    limit: str = ""               # status "limit": which limit (RunLimits' names, or "crashed")
    detail: str = ""              # one sentence for a person/model: what happened


def run_code(code: str, *, tool_names: Sequence[str], limits: RunLimits,
             call_tool: Callable[[InnerCall], Mapping[str, Any]]) -> RunReport:
    """Run `code` in a sandbox of its own; `call_tool` answers each tool call (in this
    thread). Raises SandboxUnavailable when no sandbox can be started, and whatever
    `call_tool` raises (the sandbox is stopped first)."""
    max_line = max(limits.max_result_bytes, limits.max_stdout_bytes) + LINE_MARGIN_BYTES
    sandbox = sandbox_for(limits.spawn(), max_line_bytes=max_line)
    try:
        return _Run(sandbox, limits, frozenset(tool_names), call_tool).drive(code)
    finally:
        release(sandbox)


class _Run:
    def __init__(self, sandbox: Sandbox, limits: RunLimits, tool_names: frozenset[str],
                 call_tool: Callable[[InnerCall], Mapping[str, Any]]) -> None:
        self.sandbox = sandbox
        self.limits = limits
        self.tool_names = tool_names
        self.call_tool = call_tool
        self.stdout = bytearray()
        self.calls = 0

    def report(self, status: Literal["ok", "error", "limit"], **fields: Any) -> RunReport:
        text = self.stdout[:self.limits.max_stdout_bytes].decode(errors="ignore")
        return RunReport(status=status, stdout=text, calls=self.calls, **fields)

    def limit(self, name: str, detail: str) -> RunReport:
        self.sandbox.end(kill=True)
        return self.report("limit", limit=name, detail=detail)

    def drive(self, code: str) -> RunReport:
        limits = self.limits
        deadline = time.monotonic() + limits.wall_s
        try:
            self.sandbox.send({"code": code, "tools": sorted(self.tool_names),
                               "max_result_bytes": limits.max_result_bytes}, deadline)
            while True:
                message = self.sandbox.receive(deadline)
                if "out" in message:
                    if not isinstance(message["out"], str):
                        raise ChannelBroken("printed text that is not text")
                    self.stdout += message["out"].encode(errors="replace")
                    if len(self.stdout) > limits.max_stdout_bytes:
                        return self.limit("max_stdout_bytes", f"The code printed more than "
                                          f"{limits.max_stdout_bytes} bytes; the first ones are kept.")
                elif "call" in message:
                    if self.calls >= limits.max_calls:
                        return self.limit("max_calls", f"The code made more than {limits.max_calls} "
                                          "tool calls; the run was stopped at the next one.")
                    envelope = self.call(message["call"])
                    if time.monotonic() >= deadline:
                        raise ChannelTimeout
                    self.sandbox.send({"envelope": dict(envelope)}, deadline)
                elif "done" in message:
                    return self.done(message["done"])
                else:
                    raise ChannelBroken("a second ready line")
        except ChannelTimeout:
            return self.limit("wall_s", f"The run took more than {limits.wall_s:g} s of wall time "
                              "(tool calls included) and was stopped.")
        except ChannelBroken as broken:
            self.sandbox.end(kill=True)
            return self.report("error", detail=f"The code wrote to the runner's channel (file descriptor 1) "
                               f"itself ({broken}) and the run was stopped; use print() for output.")
        except ChannelClosed:
            return self.ended()

    def call(self, call: Any) -> Mapping[str, Any]:
        if not (isinstance(call, dict) and call.get("tool") in self.tool_names
                and isinstance(call.get("arguments"), dict)
                and (call.get("call_id") is None or isinstance(call["call_id"], str))):
            raise ChannelBroken("a tool call the runner would not send")
        self.calls += 1
        return self.call_tool(InnerCall(tool=call["tool"], arguments=call["arguments"],
                                        call_id=call.get("call_id"), number=self.calls))

    def done(self, outcome: Any) -> RunReport:
        """The runner's outcome, checked: it ran inside the sandbox, with the code."""
        self.sandbox.end(kill=False)
        status = outcome.get("status") if isinstance(outcome, dict) else None
        if status == "ok":
            result = outcome.get("result")
            size = len(json.dumps(result))
            if size > self.limits.max_result_bytes:
                return self.report("limit", limit="max_result_bytes", detail=f"`result` takes {size} bytes "
                                   f"as JSON, more than {self.limits.max_result_bytes}.")
            return self.report("ok", result=result, detail="The code ran to its end.")
        if status == "error":
            return self.report("error", traceback=_text(outcome.get("traceback")),
                               detail=_text(outcome.get("detail")) or "The code raised an exception.")
        if status == "limit" and outcome.get("limit") == "memory_mb":
            return self.report("limit", limit="memory_mb",
                               detail=f"The code used more than its {self.limits.memory_mb} MB of memory.")
        if status == "limit" and outcome.get("limit") == "max_result_bytes":
            return self.report("limit", limit="max_result_bytes", detail=_text(outcome.get("detail")))
        return self.report("error", detail="The run ended with an outcome the runner would not send.")

    def ended(self) -> RunReport:
        """The sandbox closed the channel without an outcome: why, from how it exited."""
        limits = self.limits
        sandbox = self.sandbox
        status = sandbox.end(kill=False)
        if sandbox.group.memory_exhausted():
            return self.report("limit", limit="memory_mb", detail=f"The code used more than its "
                               f"{limits.memory_mb} MB of memory and was killed.")
        number = (status or 0) - SIGNAL_EXIT_BASE
        if number == signal.SIGXCPU or (number == signal.SIGKILL and sandbox.cpu_s >= limits.cpu_s):
            return self.report("limit", limit="cpu_s", detail=f"The code used more than {limits.cpu_s} s "
                               "of CPU time and was stopped.")
        if number > 0:
            try:
                name = signal.Signals(number).name
            except ValueError:
                name = f"signal {number}"
            logger.info("sandbox run crashed (%s); stderr: %s", name, sandbox.stderr()[:500])
            return self.report("limit", limit="crashed",
                               detail=f"The code's process was killed by {name} and the run was stopped.")
        logger.info("sandbox run ended without an outcome (exit status %s); stderr: %s",
                    status, sandbox.stderr()[:500])
        return self.report("error", detail=f"The code's process ended (exit status {status}) before "
                           "the code finished.")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def prewarm_sandboxes() -> None:
    """Start this process's warm sandboxes for the default limits, when this machine has
    bubblewrap (a Celery worker process once forked): its first run starts warm too."""
    if Path(BWRAP).exists():
        warm_pool().prewarm(RunLimits().spawn())
