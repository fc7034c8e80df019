"""The processes of one task: each in its own process group, all of them ended with the executor.

Every task command (a container's command + args, or one replica of a custom job) runs in a new session, so
`kill_all` can end it with everything it started (Beam workers, TensorFlow servers); the direct child also
gets `PR_SET_PDEATHSIG` so it dies if the executor is killed outright (and the Python process under a
task's `sh -ec` asks for the same at start-up, `task_startup/sitecustomize.py`). `ProcessTable.close` runs on normal
exit, on failure and on SIGTERM/SIGINT (`ops.spec_executor.runner` installs `ProcessTable.stop_on_signal` as the
handler).

A stop signal that arrives while a task's process is being started is held until the process is in the table.
Python runs a signal handler between any two bytecodes of the main thread, and `Popen` with a `preexec_fn` calls
the interpreter's fork hooks in Python (logging's among them). A handler that raised there would have its
`SystemExit` swallowed by the hook ("Exception ignored in … _releaseLock"): the stop lost, logging's lock left
taken, and the process just started missing from the table, so nothing would end it.

A task's standard output and error come back through one pipe: a reader thread writes every line to the task's
log file and hands it to the table's `on_line(label, line)` (the engine turns adrank's JSON log records into
`logging` records there, `foundation.log_lines`).
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from foundation.process_supervision import parent_death_signal_preexec, signal_process_group

LineHandler = Callable[[str, str], None]  # (the process's label, one line of its output without the newline)
READER_JOIN_SECONDS = 5.0  # after the group is killed its pipe closes; a reader is never waited on longer


@dataclass
class Started:
    label: str
    process: subprocess.Popen
    log_path: Path
    reader: threading.Thread | None = None

    def exit_code(self, poll_seconds: float = 0.1) -> int:
        """Wait for the process to end, by polling: a blocking `Popen.wait` holds Popen's internal lock, and the
        SIGTERM handler's kill of this same process would then wait for that lock forever."""
        while (code := self.process.poll()) is None:
            time.sleep(poll_seconds)
        return code

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def _copy_lines(label: str, pipe, log_path: Path, on_line: LineHandler | None) -> None:
    """Each line of `pipe` into the log file (flushed, so the log is current while the task runs) and `on_line`."""
    with pipe, open(log_path, "ab") as log:
        for raw in iter(pipe.readline, b""):
            log.write(raw)
            log.flush()
            if on_line is not None:
                try:
                    on_line(label, raw.decode(errors="replace").rstrip("\r\n"))
                except Exception:  # noqa: BLE001 - a console problem must not stop the log or the task
                    pass


@dataclass
class ProcessTable:
    running: list[Started] = field(default_factory=list)
    on_line: LineHandler | None = None
    starting: bool = False  # a process is being started: a stop signal waits in `held_signal` until it is in the table
    held_signal: int | None = None

    def start(self, label: str, argv: list[str], env: dict[str, str], cwd: Path, log_path: Path) -> Started:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.write_bytes(b"")
        self.starting = True
        try:
            process = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, start_new_session=True,
                                       preexec_fn=parent_death_signal_preexec(signal.SIGKILL))
            reader = threading.Thread(target=_copy_lines, args=(label, process.stdout, log_path, self.on_line),
                                      name=f"output of {label}", daemon=True)
            reader.start()
            started = Started(label, process, log_path, reader)
            self.running.append(started)
        finally:
            self.starting = False
            if self.held_signal is not None:  # also when the start failed: the stop still ends the executor
                signum, self.held_signal = self.held_signal, None
                self.stop_on_signal(signum)
        return started

    def stop_on_signal(self, signum: int) -> None:
        """The executor's SIGTERM/SIGINT/SIGHUP handler: end every process and leave with `128 + signum`; while a
        process is being started, only note the signal (`start` acts on it once the process is in the table)."""
        if self.starting:
            self.held_signal = signum
            return
        self.close()
        raise SystemExit(128 + signum)

    def kill(self, started: Started, grace_seconds: float = 5.0) -> None:
        """SIGTERM the process group, SIGKILL what is left after `grace_seconds`; then the rest of its output."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if not signal_process_group(started.process.pid, sig):
                break
            deadline = time.monotonic() + grace_seconds
            while started.process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            if sig == signal.SIGTERM and started.process.poll() is not None:
                signal_process_group(started.process.pid, signal.SIGKILL)  # the leader is gone; its group may not be
                break
        deadline = time.monotonic() + grace_seconds
        while started.process.poll() is None and time.monotonic() < deadline:  # reaped; never a blocking wait
            time.sleep(0.05)
        if started.reader is not None and started.reader is not threading.current_thread():
            started.reader.join(READER_JOIN_SECONDS)
        if started in self.running:
            self.running.remove(started)

    def close(self) -> None:
        for started in list(self.running):
            self.kill(started, grace_seconds=2.0)
