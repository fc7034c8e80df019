"""Upper bounds on counts and sizes, each with the reason it exists, checked at load time.

A typo (`1000000000` shards, `10**29` epochs) otherwise starts a job that writes millions of files or trains
until killed. `Annotated[int, at_most(LIMIT, "why")]` keeps the field's own `ge=` and default; the loader's
error names the field, and this message says why the limit is there.
"""

from __future__ import annotations

from typing import Any

from pydantic import AfterValidator


def at_most(limit: int | float, reason: str) -> AfterValidator:
    """A pydantic validator failing values above `limit` with `reason` (None passes: 'not set')."""

    def check(value: Any) -> Any:
        if value is not None and value > limit:
            raise ValueError(f"{value:,} is above the upper bound {limit:,}: {reason}")
        return value

    return AfterValidator(check)
