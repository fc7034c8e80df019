"""Where a Cloud Storage URI lies inside a pipeline container: Vertex mounts Cloud Storage at /gcs/ (Cloud Storage
FUSE), so `gs://bucket/path` is read as `/gcs/bucket/path`. The local engine (`adrank run-spec`) stands a local
directory in for the mount and names it to each task in `ADRANK_SPEC_GCS_ROOT` (`GCS_ROOT_ENV`): the engine sets
the variable, a step reads it here, and neither imports the other."""

from __future__ import annotations

import os

GCS_MOUNT_ROOT = "/gcs"
GCS_ROOT_ENV = "ADRANK_SPEC_GCS_ROOT"  # set by the local engine for a task whose pipeline root is gs://


def container_path(uri: str) -> str:
    """`uri` as the pipeline container reads it: a gs:// URI under the mount, anything else unchanged."""
    if not uri.startswith("gs://"):
        return uri
    root = os.environ.get(GCS_ROOT_ENV) or GCS_MOUNT_ROOT
    return f"{root.rstrip('/')}/{uri.removeprefix('gs://')}"
