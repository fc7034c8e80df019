"""The one canonical JSON adrank writes where equal values must give equal text: config slices, config hashes,
block layouts, the local engine's cache keys, the order among tied records."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


def canonical_json(value: object, default: Callable[[Any], Any] | None = None) -> str:
    """Compact JSON with sorted keys: equal values give equal text (equal compiled YAML, hashes and cache keys).
    `default`: what a value JSON has no type for becomes (`str` for dates), as `json.dumps` takes it."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=default)
