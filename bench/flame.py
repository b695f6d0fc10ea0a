"""py-spy recordings of gunicorn under a load, and their text summaries for docs/performance.md.

py-spy samples every worker's threads (`--subprocesses`) without stopping them
(`--nonblocking`), only the thread holding the GIL (`--gil`): a sample is a moment a worker ran
Python. (Its idle detection missed the threads of gunicorn's pool waiting for a request and
those waiting on a socket: half the samples were waits.) The summary of a recording says where
those moments went, two ways:

- by library, the frame the sample was taken in (its leaf): Django, DRF, psycopg, redis,
  httpx, the MCP SDK, pydantic, the standard library, or ToolHub's own apps;
- by function, every function on the stack (inclusive), the widest first, leaving out the
  frames nearly every request passes through (the WSGI handler, the middleware chain) and
  the threads' own start-up frames, so the view and what it calls come first, and the work
  of other threads (an executor's event loop) beside it.

`python -m bench.flame FILE` prints the summary of a recording made earlier.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SAMPLES_PER_S = 250
# A function on more of a request's samples than this is the request chain, not a cost.
EVERYWHERE = 0.9
# The frame every sample of a request has on its stack.
REQUEST_FRAME = ("WSGIHandler.__call__", "django/core/handlers/wsgi.py")
# Where every thread starts: on every sample of its thread, no cost of its own.
THREAD_FILES = {"threading.py", "concurrent/futures/thread.py", ""}
_FRAME = re.compile(r"^(?P<function>.*) \((?P<path>[^()]*?)(?::\d+)?\)$")


@contextmanager
def recording(pid: int, out: Path) -> Iterator[None]:
    """py-spy recording process `pid` and its children into `out` (raw folded stacks) while
    the block runs."""
    spy = subprocess.Popen(
        [str(Path(sys.executable).with_name("py-spy")), "record", "--pid", str(pid), "--subprocesses",
         "--nonblocking", "--gil", "--rate", str(SAMPLES_PER_S), "--format", "raw", "--output", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)
        _, errors = spy.communicate(timeout=60)
        if not out.exists():
            raise SystemExit(f"py-spy wrote no recording: {errors.strip()[-500:]}")


def _frames(stack: str) -> list[tuple[str, str]]:
    """(function, file) of each frame of one folded stack, root first; py-spy's frame naming
    the process (`process 123:"command"`) is left out."""
    frames = []
    for frame in stack.split(";"):
        match = _FRAME.match(frame)
        if match:
            frames.append((match["function"], match["path"]))
        elif not frame.startswith("process "):
            frames.append((frame, ""))
    return frames


def library(path: str) -> str:
    """What a frame's file belongs to: `apps/gateway` for ToolHub's own, a package's name
    (py-spy prints paths relative to their sys.path entry), or `stdlib`."""
    parts = path.split("/")
    if parts[0] in ("apps", "toolhub", "bench") and len(parts) > 1:
        return "/".join(parts[:2]) if parts[0] == "apps" else parts[0]
    if len(parts) == 1 or parts[0] in _STDLIB_PACKAGES:
        return "stdlib"
    return parts[0]


_STDLIB_PACKAGES = {
    "asyncio", "concurrent", "json", "logging", "http", "email", "urllib", "importlib", "re",
    "collections", "encodings", "xml", "ctypes", "unittest", "zoneinfo", "sqlite3", "multiprocessing",
}


def summary(raw: Path, *, top: int = 12, functions: int = 16) -> list[str]:
    """The summary of a raw recording (see the module's docstring)."""
    by_leaf: Counter[str] = Counter()
    inclusive: Counter[tuple[str, str]] = Counter()
    total = in_requests = 0
    for line in raw.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = _frames(stack)
        if not frames:
            continue
        total += count
        by_leaf[library(frames[-1][1])] += count
        in_requests += count if REQUEST_FRAME in frames else 0
        for frame in set(frames):
            inclusive[frame] += count
    if total == 0:
        return ["  (no samples)"]
    out = [f"  {total} samples, {in_requests / total:.0%} in requests (the rest: gunicorn's loop, "
           "background threads); where they were taken, by library:"]
    out += [f"    {name:<28}{count / total:>6.0%}" for name, count in by_leaf.most_common(top)]
    out.append("  the widest functions (share of the samples with the function on the stack):")
    widest = [((function, path), count) for (function, path), count in inclusive.most_common()
              if path not in THREAD_FILES and count < EVERYWHERE * max(in_requests, 1)]
    out += [f"    {count / total:>5.0%}  {name} ({path})" for (name, path), count in widest[:functions]]
    return out


if __name__ == "__main__":
    print("\n".join(summary(Path(sys.argv[1]))))
