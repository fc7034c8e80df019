"""How adrank keeps the processes it starts from outliving it (Linux, standard library only).

Two mechanisms, used together by the local engine's tasks (`ops.spec_executor.processes`, which `adrank run`
and `adrank run-spec` share) and a `cpu-ps` step's local cluster (`components.train.local_cluster`):

- a process group: a child started with `process_group=0` (or `start_new_session=True`) leads a group that
  everything it starts joins, so one `killpg` ends them all (`signal_process_group`, `kill_process_group`);
- the parent-death signal: `prctl(PR_SET_PDEATHSIG)` asks the kernel to signal a process when its parent dies,
  which covers the one case no `finally` can, the parent killed outright (`kill -9`, the OOM killer). It reaches
  only direct children, hence the groups.
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import time
from typing import Callable

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def set_parent_death_signal(signum: int) -> None:
    """Ask the kernel to send `signum` to the calling process when its parent dies; OSError where it cannot
    (the kernel refuses, or the platform has no `prctl`)."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError) as error:
        raise OSError(errno.ENOSYS, "prctl is not available on this platform") from error
    if prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")


def parent_death_signal_preexec(signum: int) -> Callable[[], None]:
    """A `subprocess.Popen(preexec_fn=...)` that sets the child's parent-death signal where the platform can
    (elsewhere the process-group kill still applies), between fork and exec."""

    def preexec() -> None:
        try:
            set_parent_death_signal(signum)
        except OSError:
            pass

    return preexec


def die_with_parent(parent: int) -> None:
    """SIGKILL this process when its parent dies; exit now if `parent` already died before it could ask."""
    set_parent_death_signal(signal.SIGKILL)
    if os.getppid() != parent:  # the parent died between fork and prctl: nobody would kill us
        os._exit(1)


def signal_process_group(group: int, signum: int) -> bool:
    """Send `signum` to every process of `group`; False when the group has no process any more."""
    try:
        os.killpg(group, signum)
    except ProcessLookupError:
        return False
    return True


def kill_process_group(group: int, grace_seconds: float) -> None:
    """SIGTERM the process group, then SIGKILL whatever is left of it after `grace_seconds`. (A leader that has
    exited but is not yet reaped still counts as left.)"""
    if not signal_process_group(group, signal.SIGTERM):
        return
    deadline = time.monotonic() + grace_seconds
    while time.monotonic() < deadline:
        if not signal_process_group(group, 0):
            return
        time.sleep(0.05)
    signal_process_group(group, signal.SIGKILL)
