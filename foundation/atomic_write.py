"""How adrank replaces a small file (a run record, a registry entry, a cache entry, a replay plan) so that a
reader, or a run that resumes after a kill, never sees half of it.

The content goes to a temporary file beside the target (same directory, so the same file system), is flushed to
disk, and is then renamed over the target with `os.replace`, which POSIX makes atomic. The temporary name starts
with a dot and is unique per process and call, so concurrent writers never share one; a failed write removes it.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any


def write_text_atomically(path: Path, text: str) -> None:
    """Replace `path` with `text` in one step: a reader sees the old content or the new, never a mix."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        with open(temporary, "x") as stream:  # "x": never reuse another writer's file
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_json_atomically(path: Path, data: Any, indent: int = 2) -> None:
    """Replace `path` with `data` as JSON (see `write_text_atomically`)."""
    write_text_atomically(path, json.dumps(data, indent=indent))
