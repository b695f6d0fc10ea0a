"""Hostile code: each attempt fails, the run ends with the report a user would see, and the
test's own process (ToolHub's, here) is unharmed."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from pathlib import Path

import pytest

import toolhub.settings.base
from apps.gateway.executors.sandbox.pool import stop_pool

from .conftest import FakeToolHub, run

CHECKOUT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _unharmed():
    """After each attempt, once the pool is stopped: none of the pool's threads and none of
    its sandboxes' processes is left in the test's process. (Threads and children of other
    parts, a session's Celery worker or an MCP client's resolver say, come and go as they
    will.)"""
    stop_pool()
    yield
    stop_pool()
    assert [thread.name for thread in threading.enumerate() if thread.name.startswith("toolhub-sandbox")] \
        == []
    assert _sandbox_children() == set()


def _sandbox_children() -> set[str]:
    """This process's child processes that are bubblewrap's (a sandbox's), reaped or not."""
    found: set[str] = set()
    for task in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError):
            found |= set(Path(f"/proc/self/task/{task}/children").read_text().split())
    return {pid for pid in found if _command(pid) == "bwrap"}


def _command(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def test_no_connection_reaches_a_listener_on_the_hosts_loopback():
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        report = run(f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)")
        listener.settimeout(0.2)
        with pytest.raises(TimeoutError):
            listener.accept()

    assert report.status == "error"
    assert report.traceback.splitlines()[-1] == "OSError: [Errno 97] Address family not supported by protocol"


def test_etc_passwd_toolhubs_settings_and_checkout_are_not_there():
    settings_file = Path(toolhub.settings.base.__file__).resolve()
    code = f"""
import os
seen = {{}}
for path in ("/etc/passwd", {str(settings_file)!r}, {str(CHECKOUT / "pyproject.toml")!r}):
    try:
        open(path).read()
        seen[path] = "read"
    except OSError as error:
        seen[path] = type(error).__name__
seen["/"] = sorted(os.listdir("/"))
result = seen
"""
    report = run(code)

    assert report.status == "ok", report
    assert CHECKOUT.parts[1] not in report.result.pop("/")
    assert set(report.result.values()) == {"FileNotFoundError"}


def test_the_environment_holds_nothing_of_toolhubs(monkeypatch):
    monkeypatch.setenv("TOOLHUB_SANDBOX_TEST_MARKER", "marker-value-4711")
    code = """
import os
environs = []
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            environs.append(open(f"/proc/{pid}/environ", "rb").read().decode())
        except OSError:
            pass
result = {"environ": dict(os.environ), "procs": environs}
"""
    report = run(code)

    assert report.status == "ok", report
    assert set(report.result["environ"]) <= {"PATH", "LANG", "TMPDIR", "HOME", "PWD"}
    everything = repr(report.result)
    for secret in ("marker-value-4711", "SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL"):
        assert secret not in everything


def test_the_parents_proc_entry_is_not_readable():
    report = run(f"open('/proc/{os.getpid()}/environ', 'rb').read()")

    assert report.status == "error"
    assert report.traceback.splitlines()[-1].startswith("FileNotFoundError")


def test_only_the_scratch_directory_and_its_own_tmp_are_writable_and_both_go_with_the_run(sandbox_scratch):
    target = CHECKOUT / "written-by-the-sandbox"
    code = f"""
import os
outcome = {{}}
for path in ({str(target)!r}, "/usr/written", "/written", {str(sandbox_scratch / "escaped")!r}):
    try:
        open(path, "w").write("x")
        outcome[path] = "written"
    except OSError as error:
        outcome[path] = type(error).__name__
open("/tmp/mine", "w").write("x")
open("note-4712", "w").write("x")
outcome["home"] = [os.getcwd(), os.environ["HOME"], os.listdir(".")]
result = outcome
"""
    report = run(code)

    assert report.status == "ok", report
    home = report.result.pop("home")
    assert home == ["/home/code", "/home/code", ["note-4712"]]
    assert set(report.result.values()) <= {"FileNotFoundError", "OSError", "PermissionError"}
    assert not target.exists()
    assert not list(sandbox_scratch.rglob("note-4712"))


def test_a_fork_bomb_cannot_fork():
    report = run("import os\nwhile True:\n    os.fork()")

    assert report.status == "error"
    assert report.traceback.splitlines()[-1] == "PermissionError: [Errno 1] Operation not permitted"


def test_a_subprocess_cannot_start():
    report = run("import subprocess\nsubprocess.run(['/usr/bin/id'])")

    assert report.status == "error"
    assert report.traceback.splitlines()[-1].startswith(("PermissionError", "FileNotFoundError"))


def test_a_thread_bomb_is_bounded():
    code = """
import threading, time
started = 0
try:
    while True:
        threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
        started += 1
except RuntimeError as error:
    result = [started, str(error)]
"""
    report = run(code, max_processes=8)

    assert report.status == "ok", report
    started, error = report.result
    assert started <= 8
    assert error == "can't start new thread"


@pytest.mark.parametrize("code", [
    "hoard = []\nwhile True:\n    hoard.append(bytearray(10 ** 6))",
    "big = bytearray(4 * 1024 ** 3)",
])
def test_a_memory_bomb_is_the_memory_limit(code):
    report = run(code, memory_mb=128)

    assert (report.status, report.limit) == ("limit", "memory_mb")
    assert report.detail == "The code used more than its 128 MB of memory."


def test_filling_the_sandboxs_tmp_is_the_memory_limit():
    """/tmp is memory (a tmpfs), counted by the memory group."""
    code = "for n in range(10):\n    open(f'/tmp/{n}', 'wb').write(b'x' * 50 * 1024 * 1024)"

    report = run(code, memory_mb=128)

    assert (report.status, report.limit) == ("limit", "memory_mb")


def test_a_failing_thread_prints_the_codes_frames_only():
    report = run("import threading\ndef work():\n    1 / 0\nt = threading.Thread(target=work)\nt.start()\n"
                 "t.join()")

    assert report.status == "ok"
    assert report.stdout == (
        'Exception in thread Thread-1 (work):\nTraceback (most recent call last):\n  File "<code>", line 3, '
        "in work\n    1 / 0\n    ~~^~~\nZeroDivisionError: division by zero\n")


def test_an_endless_loop_is_the_cpu_limit():
    started = time.monotonic()
    report = run("while True:\n    pass", cpu_s=1, wall_s=5)

    assert (report.status, report.limit) == ("limit", "cpu_s")
    assert time.monotonic() - started < 4


def test_sleeping_forever_is_the_wall_limit():
    started = time.monotonic()
    report = run("import time\nprint('waiting')\ntime.sleep(600)", wall_s=1.5)

    assert (report.status, report.limit, report.stdout) == ("limit", "wall_s", "waiting\n")
    assert 1.5 <= time.monotonic() - started < 4


def test_slow_tool_calls_count_in_the_wall_time():
    hub = FakeToolHub(delay_s=0.6)

    report = run("while True:\n    tools.search_orders(status='paid')", hub=hub, wall_s=1.0)

    assert (report.status, report.limit, report.calls) == ("limit", "wall_s", 2)


def test_printing_a_gigabyte_stops_at_the_stdout_limit_fast():
    started = time.monotonic()
    report = run("for _ in range(10 ** 6):\n    print('x' * 999)")

    assert (report.status, report.limit) == ("limit", "max_stdout_bytes")
    assert report.stdout == ("x" * 999 + "\n") * 65 + "x" * 536
    assert time.monotonic() - started < 2


def test_ctypes_is_not_there():
    report = run("import ctypes")

    assert report.status == "error"
    assert report.traceback.splitlines()[-1].startswith("ModuleNotFoundError")


@pytest.mark.parametrize("module", ["django", "apps", "toolhub", "pyseccomp", "rest_framework"])
def test_toolhubs_packages_cannot_be_imported(module):
    report = run(f"import {module}")

    assert report.status == "error"
    assert report.traceback.splitlines()[-1] == f"ModuleNotFoundError: No module named '{module}'"


def test_writing_on_the_channel_itself_ends_the_run_cleanly():
    report = run("import os\nos.write(1, b'not a message\\n')\nresult = 1")

    assert (report.status, report.result) == ("error", None)
    assert report.detail.startswith("The code wrote to the runner's channel (file descriptor 1) itself")


def test_a_line_without_end_on_the_channel_is_bounded():
    report = run("import os\nwhile True:\n    os.write(1, b'x' * 65536)", max_result_bytes=1000,
                 max_stdout_bytes=1000)

    assert report.status == "error"
    assert "a line of more than" in report.detail


def test_a_forged_call_to_a_tool_not_granted_is_refused():
    hub = FakeToolHub()
    code = """import os
os.write(1, b'{"call": {"tool": "delete_everything", "arguments": {}, "call_id": null}}\\n')
import time
time.sleep(5)"""
    report = run(code, hub=hub)

    assert report.status == "error"
    assert hub.calls == []


def test_too_many_calls_is_the_call_limit():
    hub = FakeToolHub()

    report = run("for n in range(10):\n    tools.search_orders(page=n)", hub=hub, max_calls=3)

    assert (report.status, report.limit, report.calls) == ("limit", "max_calls", 3)
    assert [call.number for call in hub.calls] == [1, 2, 3]


def test_a_segfault_is_a_crash():
    report = run("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)")

    assert (report.status, report.limit) == ("limit", "crashed")
    assert report.detail == "The code's process was killed by SIGSEGV and the run was stopped."
