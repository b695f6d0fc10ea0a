"""`python scripts/terminal_foreground.py COMMAND [ARG...]`: how `make run` runs scripts/run.sh,
so that stopping it is clean (exit 0) however a person stops it.

GNU make answers SIGINT by waiting for its recipe and then killing itself with SIGINT, so a
Ctrl-C that reaches make always ends `make run` with 130, whatever the recipe does. Here
COMMAND runs in a process group of its own that becomes the terminal's foreground group: a
Ctrl-C reaches COMMAND alone, it stops everything and exits 0, and so does make. The
terminal is given back to make's group when COMMAND ends.

`kill -INT <make's pid>` from another shell reaches only make, which waits for its recipe
forever: make then stops catching SIGINT (it restores the default to re-raise it), which
this process watches for in /proc (Linux) and passes on to COMMAND. SIGINT, SIGTERM and
SIGHUP sent to this process or its group are passed on too. COMMAND starts with SIGINT at
its default even when it was ignored here (`make run &` from a script), so it can trap it.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from types import FrameType

POLL_S = 0.2


def _catches(pid: int, signum: int) -> bool | None:
    """Whether process `pid` has a handler for `signum` (None where /proc cannot say)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    return None


def _terminal_of_this_group() -> int | None:
    """Standard input's terminal, when this process's group is its foreground group."""
    try:
        if os.isatty(0) and os.tcgetpgrp(0) == os.getpgrp():
            return 0
    except OSError:
        pass
    return None


def _give_terminal_to(terminal: int, group: int) -> None:
    # A background group that sets the foreground group gets SIGTTOU unless it ignores it.
    previous = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    try:
        os.tcsetpgrp(terminal, group)
    except OSError:
        pass  # the terminal is gone: nothing to give
    finally:
        signal.signal(signal.SIGTTOU, previous)


def main(command: list[str]) -> int:
    terminal = _terminal_of_this_group()
    own_group, make = os.getpgrp(), os.getppid()
    make_catches_int = _catches(make, signal.SIGINT)
    child = os.fork()
    if child == 0:
        os.setpgid(0, 0)
        if terminal is not None:
            _give_terminal_to(terminal, os.getpgrp())
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.execvp(command[0], command)
    try:
        os.setpgid(child, child)  # also here: whichever runs first, the group exists
    except OSError:
        pass  # the child has already exec'd: it made its group itself

    def pass_on(signum: int, _frame: FrameType | None) -> None:
        try:
            os.kill(child, signum)
        except ProcessLookupError:
            pass

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, pass_on)
    interrupted = False
    while True:
        done, status = os.waitpid(child, os.WNOHANG)
        if done:
            break
        if make_catches_int and not interrupted and _catches(make, signal.SIGINT) is False:
            interrupted = True
            pass_on(signal.SIGINT, None)
        time.sleep(POLL_S)
    if terminal is not None:
        _give_terminal_to(terminal, own_group)
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
