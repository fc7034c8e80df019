"""How every Python process of a task starts under the spec executor (this directory is first on the tasks'
PYTHONPATH, so Python imports this module at start-up; it shadows any other `sitecustomize`).

Dying with the executor (every task: `ADRANK_SPEC_TASK`). The executor starts each task command in its own
session and asks the kernel to kill it when the executor dies (PR_SET_PDEATHSIG). A compiled command is
`sh -ec '... python3 ...'`, so the Python process is the shell's child: when its parent is its session's leader
(that shell), it asks for the same signal, and a killed executor takes the whole chain down. Deeper processes
are left alone: their parent may be a thread that exits before them.

(Cloud Storage needs nothing here: the executor hands a task its artifacts' `gs://` URIs as local paths, which
KFP's `Artifact.path` uses as they are; ops.spec_executor.storage.)
"""

import os

if os.environ.get("ADRANK_SPEC_TASK"):
    try:
        if os.getppid() == os.getsid(0):
            import ctypes
            import signal

            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
            if os.getppid() == 1:  # the shell died between fork and prctl
                os._exit(137)
    except (OSError, AttributeError):
        pass  # not Linux: the executor's process-group kill still applies
