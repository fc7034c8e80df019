"""A stop signal that lands while a task's process is being started ends that process too, and is not lost."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap


def test_a_sigterm_while_a_task_process_starts_ends_it_and_the_executor(tmp_path):
    """In a fresh interpreter (signal handlers belong to its main thread): the executor's handler installed, a
    SIGTERM delivered inside one of the fork hooks that `Popen(preexec_fn=...)` runs in the parent, before the
    process is in the table, as a real stop can land. An exception raised there is swallowed by the hook. The
    executor must still leave with 143, and the process it had just started must be gone."""
    script = textwrap.dedent(f"""
        import os, signal, sys
        from pathlib import Path
        from foundation.process_table import process_running
        from ops.spec_executor import processes
        from ops.spec_executor.runner import _end_processes_on_signals

        def signal_in_fork_hook():
            os.kill(os.getpid(), signal.SIGTERM)  # the handler runs at a bytecode boundary in here
            for _ in range(1000):
                pass

        pid_file = Path({str(tmp_path / "pid")!r})
        os.register_at_fork(after_in_parent=signal_in_fork_hook,
                            after_in_child=lambda: pid_file.write_text(str(os.getpid())))
        table = processes.ProcessTable()
        _end_processes_on_signals(table)
        try:
            started = table.start("sleeper", ["sleep", "120"], dict(os.environ), Path.cwd(),
                                  Path({str(tmp_path / "log")!r}))
        except SystemExit as stop:
            pid = int(pid_file.read_text())
            gone = not process_running(pid)
            print("exit", stop.code, "running", len(table.running), "child gone", gone)
            sys.exit(stop.code)
        print("not stopped")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          cwd=os.getcwd())
    assert done.returncode == 143, done.stdout + done.stderr
    assert "exit 143 running 0 child gone True" in done.stdout
    assert "Exception ignored" not in done.stderr
