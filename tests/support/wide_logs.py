"""Wide logs for whole-DAG runs of configs with thousands of features (`tests/pipelines/test_wide_config_*.py`):
each file runs on its own pytest-xdist worker, so the two 5,000-feature DAGs run side by side."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

WIDTH = 5000
DAYS = ("2026-03-07", "2026-03-08", "2026-03-09")


def run_columns(count: int) -> list[dict]:
    """`count` features as the whole-DAG runs read them: hashed ids and z-scored numbers (list features cost
    tf.Transform much more per feature; `wide_features` has them for the compile)."""
    return [{"name": f"f{index:05d}", **({"kind": "numeric", "normalization": "zscore"} if index % 5 == 4 else
                                         {"kind": "categorical", "encoding": "hash", "hash_buckets": 100})}
            for index in range(count)]


def write_wide_logs(directory: Path) -> dict:
    """In `directory`: 120 impressions over 3 days with a value for each of `WIDTH` columns, a swipe after every third."""
    columns = run_columns(WIDTH)
    with open(directory / "impressions.jsonl", "w") as impressions, open(directory / "engagements.jsonl", "w") as events:
        for row in range(120):
            stamp = f"{DAYS[row * 3 // 120]}T{row % 24:02d}:{row % 60:02d}:00Z"
            values = {c["name"]: (float((row * j) % 11) if c["kind"] == "numeric" else f"v{(row + j) % 7}")
                      for j, c in enumerate(columns)}
            impressions.write(json.dumps({"impression_id": f"imp-{row}", "timestamp": stamp, **values}) + "\n")
            if row % 3 == 0:
                events.write(json.dumps({"impression_id": f"imp-{row}", "event_type": "swipe", "timestamp": stamp})
                             + "\n")
    return {"logs": {"source": "files", "format": "jsonl", "impressions": str(directory / "impressions.jsonl"),
                     "engagements": str(directory / "engagements.jsonl"), "max_record_bytes": 4_000_000},
            "features": columns}


def wide_run_config(base: Path, wide_logs: dict, output: Path, **sections) -> Path:
    """`base` on the wide logs: a linear model trained once for one epoch on the CPU, no promotion."""
    raw = yaml.safe_load(base.read_text())
    raw |= wide_logs | {"model": {"kind": "linear", "embedding_dim": 2}, "runs_per_target": 1,
                        "promotion": {"enabled": False}, "retraining": {"target": "cpu"},
                        "tasks": [{"name": "engagement", "event_type": "swipe"}]} | sections
    raw["training"] |= {"epochs": 1, "min_train_steps": 0, "global_batch_size": 32, "shuffle_buffer": 1000,
                        "input_capacity_seconds": 0.25}
    output.write_text(yaml.safe_dump(raw))
    return output
