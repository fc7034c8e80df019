"""A task's compiled retry policy (`retryPolicy`, from `task.set_retry(...)`) and the wait before each retry.

    retryPolicy: {maxRetryCount: 2, backoffDuration: "1s", backoffFactor: 2.0, backoffMaxDuration: "3600s"}

A failing task is run again up to `maxRetryCount` times; before retry k (k = 1, 2, ...) the executor waits
`backoffDuration * backoffFactor ** (k - 1)`, never more than `backoffMaxDuration` (the KFP SDK compiles
`0s`, `2.0` and `3600s` when they are not given; the growth rule is Argo's, which KFP's own backend uses —
assumed to be Vertex's too, which does not document it). The executor caps each wait again by its own
`max_backoff_seconds`, so a spec asking for an hour does not hold a laptop run for an hour.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DURATION = re.compile(r"^(?P<seconds>\d+(?:\.\d+)?)s$")  # protobuf Duration in JSON: "3600s", "0.5s"


class BadRetryPolicy(ValueError):
    """A `retryPolicy` whose fields do not parse."""


@dataclass(frozen=True)
class RetryPolicy:
    max_retry_count: int
    backoff_seconds: float = 0.0
    backoff_factor: float = 2.0
    backoff_max_seconds: float = 3600.0

    def backoff_before(self, retry: int) -> float:
        """Seconds to wait before retry number `retry` (1 for the first retry)."""
        return min(self.backoff_seconds * self.backoff_factor ** (retry - 1), self.backoff_max_seconds)


def parse_duration(task: str, field: str, text: object) -> float:
    match = DURATION.match(str(text))
    if match is None:
        raise BadRetryPolicy(f"task '{task}': retryPolicy.{field} '{text}' is not a duration like '30s'")
    return float(match.group("seconds"))


def retry_policy(task: str, compiled: dict | None) -> RetryPolicy | None:
    """The policy as compiled, or None when the task has none (or zero retries)."""
    if not compiled:
        return None
    try:
        count = int(compiled.get("maxRetryCount", 0))
        factor = float(compiled.get("backoffFactor", 2.0))
    except (TypeError, ValueError):
        raise BadRetryPolicy(f"task '{task}': retryPolicy maxRetryCount/backoffFactor are not numbers: "
                             f"{compiled}") from None
    if count < 0 or factor < 0:
        raise BadRetryPolicy(f"task '{task}': retryPolicy has a negative count or factor: {compiled}")
    if count == 0:
        return None
    return RetryPolicy(
        max_retry_count=count,
        backoff_seconds=parse_duration(task, "backoffDuration", compiled.get("backoffDuration", "0s")),
        backoff_factor=factor,
        backoff_max_seconds=parse_duration(task, "backoffMaxDuration", compiled.get("backoffMaxDuration", "3600s")),
    )
