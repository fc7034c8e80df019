"""What the process table says about a process, through psutil: whether a pid still names the process that wrote a
record (its start time, which a reused pid does not share), whether it is running (not a zombie), and the memory
resident in it and its descendants. A pid that names no process answers None (or False, or 0)."""

from __future__ import annotations

import psutil


def process_start_time(pid: int) -> float | None:
    """When the process started (seconds since the epoch, as psutil reads it), or None when there is no such
    process."""
    try:
        return psutil.Process(pid).create_time()
    except (psutil.Error, ValueError):
        return None


def process_running(pid: int) -> bool:
    """The process exists and is not a zombie (killed, not yet reaped by its parent)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except (psutil.Error, ValueError):
        return False


def resident_bytes(pid: int, descendants: bool = False) -> tuple[int, int]:
    """(resident bytes, processes counted) of the process, and of all its descendants too when asked; (0, 0) when
    there is no such process."""
    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)] if descendants else [root]
    except (psutil.Error, ValueError):
        return 0, 0
    total, count = 0, 0
    for process in processes:
        try:
            total += process.memory_info().rss
            count += 1
        except psutil.Error:  # exited while we looked
            continue
    return total, count
