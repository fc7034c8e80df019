"""Where a Cloud Storage URI lies inside a Vertex pipeline container: Vertex mounts Cloud Storage at /gcs/
(Cloud Storage FUSE), so `gs://bucket/path` is read as `/gcs/bucket/path`."""

from __future__ import annotations

GCS_MOUNT_ROOT = "/gcs"


def container_path(uri: str) -> str:
    """`uri` as the pipeline container reads it: a gs:// URI under the mount, anything else unchanged."""
    if not uri.startswith("gs://"):
        return uri
    return f"{GCS_MOUNT_ROOT.rstrip('/')}/{uri.removeprefix('gs://')}"
