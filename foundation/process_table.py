"""What Linux's process table says about a process (`/proc/<pid>/stat`): whether a pid still names the process that
wrote a record (its start time, which a reused pid does not share) and whether it is a zombie. Off Linux every answer
is None: callers then trust the pid alone."""

from __future__ import annotations

from pathlib import Path


def process_start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22), or None when there is no such process."""
    fields = _stat_fields(pid)
    return int(fields[19]) if len(fields) > 19 else None


def process_state(pid: int) -> str | None:
    """The process's state letter (field 3: R, S, D, Z, ...), or None when there is no such process."""
    fields = _stat_fields(pid)
    return fields[0] if fields else None


def _stat_fields(pid: int) -> list[str]:
    """`/proc/<pid>/stat` from field 3 (state) on; the command name (field 2) may hold spaces and parentheses."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return []
    return stat[stat.rindex(")") + 2:].split()
