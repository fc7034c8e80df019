"""How every Python process of a task starts under the spec executor (this directory is first on the tasks'
PYTHONPATH, so Python imports this module at start-up; it shadows any other `sitecustomize`).

1. Cloud Storage FUSE. On Vertex a task sees its `gs://` artifacts under `/gcs/`, and the KFP executor turns
   an artifact's URI into that path (`kfp.dsl.Artifact.path`). This machine has no `/gcs` mount, so with
   `ADRANK_SPEC_GCS_ROOT` set the KFP runtime's mount prefix points at that directory: `gs://b/x` is
   `ROOT/b/x` for `.path`, and a path set by the component maps back to `gs://b/x`. Code that opens `gs://`
   itself (TensorFlow, Beam) is not redirected: it needs Cloud Storage, as it would without credentials. This
   sets a private name of KFP's (`_GCS_LOCAL_MOUNT_PREFIX`), only for a `gs://` pipeline root (`adrank
   run-spec` of a Vertex spec); a local run (`adrank run`) has a local pipeline root and needs none of it.
2. Dying with the executor (every task: `ADRANK_SPEC_TASK`). The executor starts each task command in its own session and asks the kernel to
   kill it when the executor dies (PR_SET_PDEATHSIG). A compiled command is `sh -ec '... python3 ...'`, so the
   Python process is the shell's child: when its parent is its session's leader (that shell), it asks for
   the same signal, and a killed executor takes the whole chain down. Deeper processes are left alone: their
   parent may be a thread that exits before them.
"""

import os

_root = os.environ.get("ADRANK_SPEC_GCS_ROOT")  # absent in a local run: its artifact URIs are plain paths
if _root:
    from kfp.dsl.types import artifact_types as _artifact_types

    _artifact_types._GCS_LOCAL_MOUNT_PREFIX = _root.rstrip("/") + "/"

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
