import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from foundation.process_supervision import kill_process_group, signal_process_group
from foundation.process_table import process_running

REPO = Path(__file__).resolve().parents[2]


def _wait_gone(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while process_running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not process_running(pid)


def test_a_group_ends_with_its_leader_and_everything_it_started():
    leader = subprocess.Popen(["sh", "-c", "sleep 60 & echo $!; wait"], stdout=subprocess.PIPE, text=True,
                              process_group=0)
    assert leader.stdout is not None
    grandchild = int(leader.stdout.readline())
    kill_process_group(leader.pid, grace_seconds=5.0)
    leader.wait(timeout=10)
    leader.stdout.close()
    assert _wait_gone(grandchild)
    assert not signal_process_group(leader.pid, 0)  # nothing of the group is left to signal


def test_a_child_with_the_parent_death_signal_dies_when_its_parent_is_killed_outright():
    parent_source = (
        "import signal, subprocess, sys, time\n"
        "from foundation.process_supervision import parent_death_signal_preexec\n"
        "child = subprocess.Popen(['sleep', '60'], preexec_fn=parent_death_signal_preexec(signal.SIGKILL))\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", parent_source], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    assert process_running(child)
    parent.send_signal(signal.SIGKILL)  # no finally runs in the parent: only the kernel can end the child
    parent.wait(timeout=10)
    parent.stdout.close()
    assert _wait_gone(child)
