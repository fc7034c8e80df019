"""What one prediction request and the server as a whole may take, set from the container's environment."""

from __future__ import annotations

import math
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
        ADRANK_MAX_CONCURRENT_PREDICTIONS: each a finite positive number up to its bound (`LIMIT_BOUNDS`); anything
        else is a `ValueError` naming the variable, so the server refuses to start rather than answer nothing."""
        environ = dict(os.environ) if environ is None else environ
        values: dict[str, Any] = {}
        for field, variable, kind in LIMIT_VARIABLES:
            if variable in environ:
                values[field] = _limit(variable, environ[variable], kind)
        return cls(**values)


# (field, environment variable, int or float) of every limit.
LIMIT_VARIABLES: tuple[tuple[str, str, type], ...] = (
    ("max_body_bytes", "ADRANK_MAX_BODY_BYTES", int),
    ("max_instances", "ADRANK_MAX_INSTANCES", int),
    ("read_timeout_seconds", "ADRANK_READ_TIMEOUT_SECONDS", float),
    ("max_connections", "ADRANK_MAX_CONNECTIONS", int),
    ("max_concurrent_predictions", "ADRANK_MAX_CONCURRENT_PREDICTIONS", int),
)
# The largest value of each variable, and why: beyond it the server would hold a client, a thread or memory for good.
LIMIT_BOUNDS: dict[str, tuple[float, str]] = {
    "ADRANK_MAX_BODY_BYTES": (2**30, "1 GiB: a body is held in memory whole"),
    "ADRANK_MAX_INSTANCES": (1_000_000, "a request is one model call"),
    "ADRANK_READ_TIMEOUT_SECONDS": (3600.0, "an hour: a slow client holds a connection slot that long"),
    "ADRANK_MAX_CONNECTIONS": (10_000, "one thread per connection"),
    "ADRANK_MAX_CONCURRENT_PREDICTIONS": (1024, "model calls at once, each with its own tensors"),
}


def _limit(variable: str, text: str, kind: type) -> int | float:
    what = "a positive whole number" if kind is int else "a positive number of seconds"
    bound, reason = LIMIT_BOUNDS[variable]
    try:
        value = kind(text.strip())
    except ValueError:
        raise ValueError(f"{variable}={text[:40]!r}: not a number; expected {what}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{variable}={text[:40]!r}: not finite; expected {what} up to {bound:g}")
    if not value > 0:
        raise ValueError(f"{variable}={text[:40]!r}: expected {what}")
    if value > bound:
        raise ValueError(f"{variable}={text[:40]!r}: over the bound of {bound:g} ({reason})")
    return value
