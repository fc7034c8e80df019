"""The one canonical JSON adrank writes where equal values must give equal text: config slices, config hashes,
block layouts, the local engine's cache keys."""

from __future__ import annotations

import json


def canonical_json(value: object) -> str:
    """Compact JSON with sorted keys: equal values give equal text (equal compiled YAML, hashes and cache keys)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
