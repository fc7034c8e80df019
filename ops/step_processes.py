"""The processes of a local run's steps live and die with `adrank run`.

kfp.local's SubprocessRunner starts each step as `sh -ec 'program_path=$(mktemp -d); ... python3 -m
kfp.dsl.executor_main ...'`, and the step may start more processes (Beam workers). `step_processes()` replaces
how it starts them, for the length of one run:

- each step runs in its own process group, with its own TMPDIR under the run's temp root, removed when it ends
  (kfp's `mktemp -d`, tf.Transform's and Python's temp files land there);
- the step's shell gets PR_SET_PDEATHSIG (SIGKILL), and a small watcher process, itself with PR_SET_PDEATHSIG
  (SIGTERM), kills the step's whole process group and removes its TMPDIR when `adrank run` dies in any way
  (kill -9, the OOM killer), since the parent-death signal reaches only direct children, and removes the run's
  temp root;
- when the step ends, or the run is stopped (Ctrl-C, SIGTERM: `RunInterrupted`), the group is killed too.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from components.process_supervision import kill_process_group, parent_death_signal_preexec
from ops.step_reuse import StepOutputs, StepReuse, seal_step

# A line the run's console shows besides pipeline.log (ops.local_dag forwards "adrank note:" / "adrank warning:").
CONSOLE_NOTE = "adrank note: "
STOP_GRACE_SECONDS = 5.0

# Runs in its own interpreter: waits for SIGTERM (its parent, adrank run, died) and then kills the step's group.
_WATCHER = """
import os, shutil, signal, sys
group, run_temp, parent = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
def stop(*_):
    try:
        os.killpg(group, signal.SIGKILL)
    except OSError:
        pass
    shutil.rmtree(run_temp, ignore_errors=True)
    os._exit(0)
signal.signal(signal.SIGTERM, stop)
if os.getppid() != parent:
    stop()
sys.stdout.write("ready\\n")
sys.stdout.flush()
while True:
    signal.pause()
"""


class RunInterrupted(KeyboardInterrupt):
    """The run was asked to stop (SIGINT / SIGTERM); a KeyboardInterrupt so no `except Exception` swallows it."""

    def __init__(self, signal_name: str):
        super().__init__(signal_name)
        self.signal_name = signal_name


def run_step_subprocess(full_command: list[str], temp_root: Path, reuse: StepReuse | None = None) -> int:
    """What kfp.local's `run_local_subprocess` does (stream the step's output, return its exit status), with the
    step in its own process group and TMPDIR, dying with this process. A successful step's outputs are sealed;
    with `reuse` (a resumed run) a verified earlier result stands in for the step, and an interrupted training
    step gets its earlier checkpoints back before it starts."""
    outputs = StepOutputs.from_command(full_command)
    if reuse is not None and outputs is not None:
        if reuse.reuse(outputs):
            print(f"{CONSOLE_NOTE}{outputs.task}: reused the result of an earlier attempt (its files verified)\n")
            return 0
        restored = reuse.restore_checkpoints(outputs)
        if restored is not None:
            print(f"{CONSOLE_NOTE}{outputs.task}: continues from the checkpoints of an earlier attempt ({restored})")
    status = _run_in_group(full_command, temp_root)
    if status == 0 and outputs is not None:
        seal_step(outputs.task_dir)
    return status


def _run_in_group(full_command: list[str], temp_root: Path) -> int:
    step_temp = Path(tempfile.mkdtemp(prefix="step-", dir=temp_root))
    environment = os.environ | {"TMPDIR": str(step_temp), "TEMP": str(step_temp), "TMP": str(step_temp)}
    process = subprocess.Popen(
        full_command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1, env=environment,
        process_group=0, preexec_fn=parent_death_signal_preexec(signal.SIGKILL),
    )
    watcher = subprocess.Popen(
        [sys.executable, "-S", "-c", _WATCHER, str(process.pid), str(temp_root), str(os.getpid())],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        preexec_fn=parent_death_signal_preexec(signal.SIGTERM),
    )
    try:
        assert watcher.stdout is not None  # stdout=PIPE
        watcher.stdout.readline()  # armed: from here on, a kill -9 of this process takes the step with it
        if process.stdout:
            for line in iter(process.stdout.readline, ""):
                print(line, end="")
            print("\n")
        return process.wait()
    finally:
        kill_process_group(process.pid, grace_seconds=0.0 if process.poll() is not None else STOP_GRACE_SECONDS)
        process.wait()
        if process.stdout:
            process.stdout.close()
        watcher.kill()
        watcher.wait()
        if watcher.stdout:
            watcher.stdout.close()
        shutil.rmtree(step_temp, ignore_errors=True)


@contextmanager
def step_processes(run_id: str, reuse: StepReuse | None = None) -> Iterator[Path]:
    """For the length of the block: kfp.local starts steps with `run_step_subprocess`, SIGINT and SIGTERM raise
    `RunInterrupted` in the main thread, and the run's temp root (yielded) exists; all undone afterwards."""
    from kfp.local import subprocess_task_handler

    temp_root = Path(tempfile.mkdtemp(prefix=f"adrank-{run_id}-"))
    original = subprocess_task_handler.run_local_subprocess
    subprocess_task_handler.run_local_subprocess = lambda full_command: run_step_subprocess(full_command, temp_root, reuse)

    def interrupt(signum, _frame):
        raise RunInterrupted(signal.Signals(signum).name)

    import threading

    in_main_thread = threading.current_thread() is threading.main_thread()  # signals reach only the main thread
    saved = ({signum: signal.signal(signum, interrupt) for signum in (signal.SIGINT, signal.SIGTERM)}
             if in_main_thread else {})
    try:
        yield temp_root
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)
        subprocess_task_handler.run_local_subprocess = original
        shutil.rmtree(temp_root, ignore_errors=True)
