"""Where a Cloud Storage URI lies inside a Vertex pipeline container: Vertex mounts Cloud Storage at /gcs/
(Cloud Storage FUSE), so `gs://bucket/path` is read as `/gcs/bucket/path`. Under `adrank run-spec` the
executor stands a local directory in for the mount (`ADRANK_SPEC_GCS_ROOT`, as for KFP's own artifact paths)."""

from __future__ import annotations

import os

GCS_MOUNT_ROOT = "/gcs"
SPEC_EXECUTOR_ROOT_ENV = "ADRANK_SPEC_GCS_ROOT"


def container_path(uri: str) -> str:
    """`uri` as the pipeline container reads it: a gs:// URI under the mount, anything else unchanged."""
    if not uri.startswith("gs://"):
        return uri
    root = os.environ.get(SPEC_EXECUTOR_ROOT_ENV) or GCS_MOUNT_ROOT
    return f"{root.rstrip('/')}/{uri.removeprefix('gs://')}"
