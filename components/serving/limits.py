"""What one prediction request and the server as a whole may take, set from the container's environment."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

DEFAULT_MAX_BODY_BYTES = 10 * 2**20  # 10 MiB: a request body over it is answered 413 before it is read
DEFAULT_MAX_INSTANCES = 1000


@dataclass(frozen=True)
class ServingLimits:
    """What one request and the server as a whole may take."""

    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_instances: int = DEFAULT_MAX_INSTANCES
    read_timeout_seconds: float = 10.0
    max_connections: int = 64
    max_concurrent_predictions: int = 4  # model calls at once; other requests wait for a slot before TensorFlow

    @classmethod
    def from_environment(cls, environ: dict[str, str] | None = None) -> ServingLimits:
        """ADRANK_MAX_BODY_BYTES, ADRANK_MAX_INSTANCES, ADRANK_READ_TIMEOUT_SECONDS, ADRANK_MAX_CONNECTIONS,
        ADRANK_MAX_CONCURRENT_PREDICTIONS."""
        environ = dict(os.environ) if environ is None else environ
        values: dict[str, Any] = {}
        for field, variable, kind in (("max_body_bytes", "ADRANK_MAX_BODY_BYTES", int),
                                      ("max_instances", "ADRANK_MAX_INSTANCES", int),
                                      ("read_timeout_seconds", "ADRANK_READ_TIMEOUT_SECONDS", float),
                                      ("max_connections", "ADRANK_MAX_CONNECTIONS", int),
                                      ("max_concurrent_predictions", "ADRANK_MAX_CONCURRENT_PREDICTIONS", int)):
            if variable in environ:
                try:
                    value = kind(environ[variable])
                except ValueError:
                    raise ValueError(f"{variable}={environ[variable]!r}: expected a positive number") from None
                if not value > 0:
                    raise ValueError(f"{variable}={environ[variable]!r}: expected a positive number")
                values[field] = value
        return cls(**values)
