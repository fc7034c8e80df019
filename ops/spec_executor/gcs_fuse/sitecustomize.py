"""Cloud Storage FUSE for the processes the spec executor starts (put on PYTHONPATH by `ops.spec_executor`).

On Vertex every task sees its `gs://` artifacts under `/gcs/`, and the KFP executor turns an artifact's
URI into that path (`kfp.dsl.Artifact.path`). This machine has no `/gcs` mount, so when
`ADRANK_SPEC_GCS_ROOT` is set the KFP runtime's mount prefix is pointed at that directory: `gs://b/x`
becomes `ROOT/b/x` for `.path`, and back to `gs://b/x` for a path set by the component. Nothing else is
changed: code that opens `gs://` itself (TensorFlow, Beam) still needs Cloud Storage and fails here,
as it would without credentials.
"""

import os

_root = os.environ.get("ADRANK_SPEC_GCS_ROOT")
if _root:
    from kfp.dsl.types import artifact_types as _artifact_types

    _artifact_types._GCS_LOCAL_MOUNT_PREFIX = _root.rstrip("/") + "/"
