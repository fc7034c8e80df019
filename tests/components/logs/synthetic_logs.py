"""What the synthetic-log tests share: a small generator size and the impressions of generated logs by day."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from components.logs.synthetic import IMPRESSIONS_DIR

SMALL = ["logs.synthetic.impressions_per_day=1500", "logs.synthetic.users=400", "logs.synthetic.ads=60",
         "logs.synthetic.advertisers=8"]

def impressions_by_day(logs_dir: Path) -> dict[str, list[dict]]:
    days = defaultdict(list)
    for path in sorted((logs_dir / IMPRESSIONS_DIR).glob("*.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            days[record["timestamp"][:10]].append(record)
    return {day: sorted(records, key=lambda r: r["impression_id"]) for day, records in days.items()}
