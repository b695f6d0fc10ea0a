"""CPU time per request: what the app server and PostgreSQL spent on a load, whatever else
the machine was doing meanwhile.

Throughput on a shared machine moves with everyone's load; the CPU a request costs moves
much less. Read from /proc (Linux): user + system time of every process of gunicorn's
process group, and of every PostgreSQL backend connected to the bench database.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

_TICKS_PER_S = os.sysconf("SC_CLK_TCK")

CpuSample = dict[int, float]  # pid → CPU seconds used so far


def _stat_fields(pid: int) -> list[str] | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # the process is gone
        return None
    # The command name, in parentheses, may contain spaces: the fields start after it.
    return stat.rsplit(")", 1)[1].split()


def _cpu_seconds(fields: list[str]) -> float:
    # Fields 14 and 15 of /proc/<pid>/stat: utime and stime; [0] here is field 3.
    return (int(fields[11]) + int(fields[12])) / _TICKS_PER_S


def process_group(pgid: int) -> list[int]:
    """Every process whose process group is `pgid` (gunicorn's arbiter and workers)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields is not None and int(fields[2]) == pgid:
                pids.append(int(entry.name))
    return pids


def sample(pids: Iterable[int]) -> CpuSample:
    found = {}
    for pid in pids:
        fields = _stat_fields(pid)
        if fields is not None:
            found[pid] = _cpu_seconds(fields)
    return found


def database_backends() -> list[int]:
    """The PostgreSQL backends connected to the bench database (the server's connections)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
        return [pid for (pid,) in cursor.fetchall()]


def database_cpu_seconds() -> float:
    """CPU seconds so far of the bench database's backends (0 where /proc cannot tell)."""
    return sum(sample(database_backends()).values())


def spent(before: CpuSample, after: CpuSample) -> float:
    """CPU seconds used between two samples; a process that started meanwhile counts whole."""
    return sum(seconds - before.get(pid, 0.0) for pid, seconds in after.items())


class CpuMeter:
    """Samples the app's and the database's processes together."""

    def __init__(self, *, app_pids: Callable[[], list[int]], db_pids: Callable[[], list[int]]) -> None:
        self._app_pids = app_pids
        self._db_pids = db_pids

    def sample(self) -> tuple[CpuSample, CpuSample]:
        return sample(self._app_pids()), sample(self._db_pids())
