"""Where Cloud Storage lives on this machine: `gs://BUCKET/...` and `/gcs/BUCKET/...` are `ROOT/BUCKET/...`.

On Vertex an output artifact has a `gs://` URI and the task reads and writes it as `/gcs/...` (Cloud Storage
FUSE; `kfp.dsl.Artifact.path` makes that conversion). Here both spellings name one directory under the
executor's root. A task process is handed its artifacts' URIs as those local paths (`for_task`): KFP's
`Artifact.path` of a URI that is not `gs://`, `minio://` or `s3://` is the URI itself (public behaviour), so no
mount prefix of KFP's is changed; what the task reports back is read as the `gs://` URI again (`from_task`), so
records, the cache and consumers see the URIs Vertex would. A local pipeline root (the local backend) is a
directory under the root: its URIs are paths, used as they are.
What the engine keeps on disk across runs (the execution cache, each task's executor input) names such paths
relative to the root (`portable`), so a root that was moved or copied still finds its own files.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from foundation.gcs_mount import GCS_MOUNT_ROOT

GCS_SCHEME = "gs://"
GCS_FUSE_PREFIX = GCS_MOUNT_ROOT + "/"
ROOT_MARK = "$ROOT"  # in a stored record: the root this record is read under


class NotCloudStorage(ValueError):
    """A path that is neither `gs://...` nor `/gcs/...` where the spec needs Cloud Storage."""


@dataclass(frozen=True)
class CloudStorageRoot:
    """The local directory standing in for every Cloud Storage bucket."""

    root: Path

    def local_path(self, uri_or_fuse_path: str) -> Path:
        """`gs://b/x` or `/gcs/b/x` → `ROOT/b/x`; a path already under ROOT (a local pipeline root) as it is."""
        if Path(uri_or_fuse_path).is_absolute() and Path(uri_or_fuse_path).resolve().is_relative_to(
                self.root.resolve()):
            return Path(uri_or_fuse_path)
        for prefix in (GCS_SCHEME, GCS_FUSE_PREFIX):
            if uri_or_fuse_path.startswith(prefix):
                rest = uri_or_fuse_path[len(prefix):]
                bucket = rest.split("/", 1)[0]
                if not bucket or bucket in (".", ".."):
                    raise NotCloudStorage(f"'{uri_or_fuse_path}' names no bucket")
                return self.root / rest
        raise NotCloudStorage(f"'{uri_or_fuse_path}' is not a gs:// URI or a /gcs/ path")

    def uri(self, local_path: Path | str) -> str:
        """The `gs://` URI of a path under the root (the inverse of `local_path`)."""
        relative = Path(local_path).resolve().relative_to(self.root.resolve())
        return GCS_SCHEME + relative.as_posix()

    def for_task(self, executor_input: dict) -> dict:
        """The executor input a task process gets: every artifact's `gs://` URI as the local path it maps to."""
        return _with_artifact_uris(executor_input, lambda uri: str(self.local_path(uri))
                                   if uri.startswith(GCS_SCHEME) else uri)

    def from_task(self, uri: str, cloud: bool) -> str:
        """A URI a task reported, as the job records it: with a `gs://` pipeline root (`cloud`), a path under the
        root is its `gs://` URI again; anything else as it is."""
        path = Path(uri)
        if cloud and path.is_absolute() and path.resolve().is_relative_to(self.root.resolve()):
            return self.uri(path)
        return uri

    def fuse_prefix(self) -> str:
        """What `/gcs/` means inside a task process: the root, with a trailing slash."""
        return str(self.root.resolve()) + "/"

    def portable(self, value):
        """`value` (decoded JSON) with every path under the root written `$ROOT/...`."""
        return _rebased(value, str(self.root.resolve()), ROOT_MARK)

    def resolved(self, value):
        """What `portable` wrote, under this root."""
        return _rebased(value, ROOT_MARK, str(self.root.resolve()))


def _with_artifact_uris(executor_input: dict, change) -> dict:
    """A copy of `executor_input` with `change(uri)` for every input and output artifact's URI."""
    copied = {**executor_input}
    for side in ("inputs", "outputs"):
        if side not in copied:
            continue
        copied[side] = {**copied[side], "artifacts": {
            name: {**spec, "artifacts": [{**artifact, "uri": change(artifact["uri"])} if "uri" in artifact
                                         else artifact for artifact in spec.get("artifacts", [])]}
            for name, spec in copied[side].get("artifacts", {}).items()}}
    return copied


def _rebased(value, old: str, new: str):
    """`value` with every string (keys too) that is `old` or a path under it moved under `new`."""
    if isinstance(value, str):
        return new + value[len(old):] if value == old or value.startswith(old + "/") else value
    if isinstance(value, list):
        return [_rebased(item, old, new) for item in value]
    if isinstance(value, dict):
        return {_rebased(key, old, new): _rebased(item, old, new) for key, item in value.items()}
    return value
