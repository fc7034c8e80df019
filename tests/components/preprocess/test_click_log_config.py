"""A user's CSV click log (single-table outcome mode) preprocessed with configs/examples/click_log.yaml alone."""

from __future__ import annotations

from pathlib import Path

from block_rows import read_blocks

from components.preprocess.run import preprocess
from configs import load_config

REPO = Path(__file__).resolve().parents[3]
CLICK_LOG = Path(__file__).parent / "data" / "click_log.csv"


def test_click_log_preprocesses_from_config_only(tmp_path):
    config = load_config(
        REPO / "configs" / "examples" / "click_log.yaml",
        overrides=[f"logs.impressions={CLICK_LOG}", "preprocess.direct_running_mode=in_memory",
                   "preprocess.direct_num_workers=1"],
    )
    manifest = preprocess(config, None, str(tmp_path))

    assert manifest.counts["impressions_read"] == 19
    assert manifest.dead_letter == {"impressions:bad_timestamp": 1}
    assert manifest.splits["train"].examples == 13 and manifest.splits["eval"].examples == 5
    assert manifest.splits["train"].positives == {"download": 3}
    assert manifest.splits["eval"].positives == {"download": 1}
    features = {f.name: f for f in manifest.features}
    assert features["ip"].table_rows == 50000
    assert features["device"].table_rows == 2 + 2  # devices 1 and 2 on train, 2 OOV buckets
    assert features["click_hour"].table_rows == 24

    rows = read_blocks(tmp_path, manifest, "eval")
    by_hour = {int(r["click_hour"]): float(r["label_download"]) for r in rows}
    assert by_hour == {0: 0.0, 1: 0.0, 5: 1.0, 7: 0.0, 9: 0.0}
    # no day_of_week in the example: over a log shorter than a week the eval day's weekday is never trained on
    assert "click_weekday" not in features and set(features) == {"ip", "app", "device", "os", "channel", "click_hour"}
