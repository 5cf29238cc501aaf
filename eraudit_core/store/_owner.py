"""Which process is running a run, and whether it still is.

A run records its owner when it starts: pid, host name, and on Linux a token made of the boot id
and the process start time (so a reused pid is not mistaken for the owner). The next process
that reads the run checks the owner: on this host by asking the kernel, on another host by the
age of the run's heartbeat, which the engine refreshes with every batch it writes.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

# A run on another host whose heartbeat is older than this is taken for dead.
STALE_AFTER = timedelta(minutes=15)


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _stat_fields(pid: int) -> list[str]:
    """/proc/PID/stat from field 3 on (state, ppid, ...), or [] where there is no /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return []
    # the command name (field 2) is in parentheses and may contain spaces
    return stat.rsplit(")", 1)[1].split()


def _start_ticks(pid: int) -> str:
    """Field 22 of /proc/PID/stat (start time since boot), or '' where there is no /proc."""
    fields = _stat_fields(pid)
    return fields[19] if len(fields) > 19 else ""


def _is_dead_process(pid: int) -> bool:
    """A zombie (exited, not yet reaped by its parent) or a dying process: it will never write
    to the run again, although its pid and start time are still in /proc."""
    fields = _stat_fields(pid)
    return bool(fields) and fields[0] in ("Z", "X", "x")


@dataclass(frozen=True)
class Owner:
    pid: int
    host: str
    token: str

    @classmethod
    def me(cls) -> Owner:
        pid = os.getpid()
        ticks = _start_ticks(pid)
        boot = _boot_id()
        return cls(pid, socket.gethostname(), f"{boot}:{ticks}" if ticks and boot else "")

    def describe(self) -> str:
        command = ""
        if self.host == socket.gethostname():
            try:
                raw = Path(f"/proc/{self.pid}/cmdline").read_bytes()
                args = [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]
                if args:
                    text = " ".join(" ".join([Path(args[0]).name, *args[1:]]).split())
                    command = f" ({text[:160]})"
            except OSError:
                pass
        return f"process {self.pid}{command} on {self.host}"


def owner_alive(owner: Owner | None, heartbeat: datetime | None, now: datetime) -> bool:
    """True while the owning process runs (this host) or still beats (another host).

    A run without an owner (written by a version before owners were recorded) counts as
    alive; migration 3 marked those that were left running as interrupted.
    """
    if owner is None:
        return True
    if owner.host != socket.gethostname():
        return heartbeat is not None and now - heartbeat < STALE_AFTER
    if _is_dead_process(owner.pid):
        return False
    if owner.token:
        boot, _, ticks = owner.token.partition(":")
        if boot != _boot_id():
            return False
        return _start_ticks(owner.pid) == ticks
    try:
        os.kill(owner.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
