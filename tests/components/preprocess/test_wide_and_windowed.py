"""1,000 categorical features on tiny data, read from {date}-partitioned logs of a scheduled run's window.

990 of the 1,000 are vocabulary features: all vocabularies are computed by one analyzer in one Beam pass
(`components.preprocess.vocabulary`); the other 10 are hashed.
"""

from __future__ import annotations

import pytest
import tensorflow_transform as tft
from block_rows import read_blocks

from components.contracts.manifest import ImpressionWindow
from components.preprocess.run import preprocess
from components.preprocess.vocabulary import feature_vocabulary

WIDTH = 1000


@pytest.mark.slow
@pytest.mark.long  # a minute of Beam; benchmarks/preprocess.py --features 1000 runs 1,000 features through preprocess
def test_thousand_categorical_features_in_a_lookback_window(tmp_path, config_for, log_writer):
    days = ["2026-03-07", "2026-03-08", "2026-03-09"]
    for d, day in enumerate(days):
        rows = [
            {"impression_id": f"{day}-{i}", "timestamp": f"{day}T0{i}:00:00Z",
             **{f"f{j}": f"v{(i + j + d) % 3}" for j in range(WIDTH)}}
            for i in range(3)
        ]
        log_writer(tmp_path / "logs" / day / "impressions.jsonl", rows)
        log_writer(tmp_path / "logs" / day / "engagements.jsonl",
                   [{"impression_id": f"{day}-0", "event_type": "swipe", "timestamp": f"{day}T00:00:01Z"}])
    features = [
        {"name": f"f{j}", "kind": "categorical", "encoding": "hash" if j % 100 == 0 else "vocabulary", "hash_buckets": 7}
        for j in range(WIDTH)
    ]
    config = config_for(
        logs={"source": "files", "impressions": f"{tmp_path}/logs/{{date}}/impressions.jsonl",
              "engagements": f"{tmp_path}/logs/{{date}}/engagements.jsonl", "lookback_days": 2},
        tasks=[{"name": "engagement", "event_type": "swipe"}],
        features=features,
    )
    manifest = preprocess(config, None, str(tmp_path / "out"), window_end="2026-03-10T00:00:00Z")

    # the window holds 2026-03-08 and 2026-03-09 only: 6 impressions, eval = the last day
    assert manifest.counts["impressions_read"] == 6
    assert manifest.splits["train"].examples == 3 and manifest.splits["eval"].examples == 3
    assert manifest.splits["train"].positives == {"engagement": 1}
    assert manifest.window == ImpressionWindow(start="2026-03-08T00:00:00.000Z", end="2026-03-10T00:00:00.000Z")
    assert len(manifest.features) == WIDTH
    sizes = {f.name: f.table_rows for f in manifest.features}
    assert sizes["f0"] == 7 and sizes["f1"] == 3 + 1  # three train values + one OOV bucket
    assert sum(f.table_rows == 3 + 1 for f in manifest.features) == WIDTH - WIDTH // 100
    out = tft.TFTransformOutput(str(tmp_path / "out"))
    # train day 2026-03-08 (d = 1): f1 takes v2, v0, v1 once each; ties go to the larger token first
    assert feature_vocabulary(out, "f1") == [b"v2", b"v1", b"v0"]
    rows = read_blocks(tmp_path / "out", manifest, "eval")
    assert len(rows) == 3
    for row in rows:
        assert all(0 <= int(row[f.name]) < f.table_rows for f in manifest.features)
