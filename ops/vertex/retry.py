"""Retry Vertex calls that failed for a transient reason (HTTP 429 quota, 503 unavailable) with backoff."""

from __future__ import annotations

import random
import sys
import time
from typing import Callable, TypeVar

from google.api_core import exceptions

T = TypeVar("T")
TRANSIENT = (exceptions.TooManyRequests, exceptions.ServiceUnavailable)


def pause(seconds: float) -> None:
    time.sleep(seconds)


def with_backoff(
    call: Callable[[], T],
    what: str,
    attempts: int = 6,
    initial_delay: float = 1.0,
    max_delay: float = 30.0,
    sleep: Callable[[float], None] | None = None,
) -> T:
    """Run `call`; on 429/503 wait (exponential, with jitter) and try again, at most `attempts` times."""
    sleep = sleep or pause
    delay = initial_delay
    for attempt in range(1, attempts + 1):
        try:
            return call()
        except TRANSIENT as error:
            if attempt == attempts:
                raise
            wait = min(max_delay, delay) * (0.5 + random.random() / 2)
            print(f"{what}: {error.code} {type(error).__name__}, retrying in {wait:.1f}s "
                  f"(attempt {attempt}/{attempts})", file=sys.stderr)
            sleep(wait)
            delay *= 2
    raise AssertionError("unreachable")
